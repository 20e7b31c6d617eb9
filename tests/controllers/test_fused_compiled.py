"""The fused pose-target path (controllers/fused_compiled.py): ``act`` and ``command`` in one
compiled call each, against the compiled layers one at a time and the array reference."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from robot_rl.controllers.arm_model import ArmModel
from robot_rl.controllers.arm_state import ArmState
from robot_rl.controllers.configs import EEDeltaConfig, EEPoseConfig, OSCConfig, cartesian_impedance
from robot_rl.controllers.pipeline import ActionPipeline, ControlStep
from robot_rl.sim import make_env
from tests.controllers.arm_states import stack

_SPACES = {
    "ee_pose": EEPoseConfig(gripper=False),
    "ee_pose_no_rotation": EEPoseConfig(gripper=False, rotation=False),
    "ee_delta": EEDeltaConfig(gripper=True),
    "ee_delta_no_rotation": EEDeltaConfig(gripper=False, rotation=False),
    "ee_delta_box": EEDeltaConfig(gripper=False, box_lo=(0.2, -0.3, 0.3),
                                  box_hi=(0.6, 0.3, 0.6)),
}


def _pipelines(action: Any, controller: OSCConfig | None = None
               ) -> tuple[ActionPipeline, ActionPipeline, ActionPipeline, ArmModel, Any]:
    """(fused, the compiled layers one call each, the array reference), the arm, the env."""
    pipes = []
    for _ in range(3):
        env = make_env("reach", 1, action=action, controller=controller or OSCConfig())
        pipes.append(env.pipeline)
    pipes[1].fused = False
    pipes[2].fused = False
    pipes[2].shield.compiled = False
    pipes[2].controller.compiled = False
    return pipes[0], pipes[1], pipes[2], ArmModel(env.model, env.robot), env


def _states(arm: ArmModel, env: Any, count: int, seed: int) -> list[ArmState]:
    """Joints near home and anywhere in their range, fast; some hands at the table."""
    rng = np.random.default_rng(seed)
    lo, hi = np.asarray(env.robot.q_min), np.asarray(env.robot.q_max)
    home = np.asarray(env.robot.home)
    out = []
    for i in range(count):
        q = rng.uniform(lo, hi) if i % 3 == 0 else np.clip(home + rng.normal(0, 0.5, 7), lo,
                                                           hi)
        s = arm.state(q, rng.normal(0.0, 1.5, 7), mass=True)
        out.append(dataclasses.replace(s, gravity=None, drift=None) if i % 7 == 0 else s)
    return out


def _same_step(got: ControlStep, want: ControlStep) -> None:
    assert got.action.dtype == want.action.dtype
    np.testing.assert_array_equal(got.action, want.action)  # the action layers: bit for bit
    np.testing.assert_array_equal(got.invalid, want.invalid)
    np.testing.assert_array_equal(got.held, want.held)
    for field in ("pos", "rot", "gripper"):
        a, b = getattr(got.targets, field), getattr(want.targets, field)
        assert (a is None) == (b is None), field
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=0.0, atol=1e-9, err_msg=field)
    assert got.flags.keys() == want.flags.keys()
    for name in want.flags:
        np.testing.assert_array_equal(got.flags[name], want.flags[name], err_msg=name)


@pytest.mark.parametrize("space", sorted(_SPACES))
def test_fused_act_matches_the_layers_and_the_reference(space: str) -> None:
    fused, layers, ref, arm, env = _pipelines(_SPACES[space])
    assert fused.shield.compiled
    rng = np.random.default_rng(1)
    dim = fused.dim
    fired: dict[str, int] = {}
    for i, s in enumerate(_states(arm, env, 120, seed=2)):
        dtype = np.float32 if i % 2 else np.float64
        a = rng.uniform(-1.6, 1.6, (1, dim)).astype(dtype)
        if i % 11 == 0:
            a[0, i % dim] = np.nan
        prev = rng.uniform(-1.0, 1.0, (1, dim)).astype(dtype)
        hold = np.array([i % 13 == 0])
        got = fused.act(a, prev, s, hold)
        _same_step(got, layers.act(a, prev, s, hold))
        _same_step(got, ref.act(a, prev, s, hold))
        for name, f in got.flags.items():
            fired[name] = fired.get(name, 0) + int(f[0])
    # every layer of the path acted on some of the samples
    assert all(fired[k] for k in ("nan_guard", "action_bounds", "rate_limit", "workspace",
                                  "table_floor")), fired


@pytest.mark.parametrize("space", sorted(_SPACES))
def test_fused_act_on_a_batch_with_held_rows(space: str) -> None:
    """Every action space on a batch: per-arm bases (ee_delta's position, and its rotation
    with rotation actions) and shared ones (ee_pose, and the home rotation without)."""
    fused, layers, _, arm, env = _pipelines(_SPACES[space])
    rng = np.random.default_rng(3)
    states = [s for s in _states(arm, env, 12, seed=4) if s.gravity is not None][:8]
    s = stack(states)
    a = rng.uniform(-1.5, 1.5, (8, fused.dim)).astype(np.float32)
    a[2, 1] = np.inf
    prev = np.zeros_like(a)
    hold = np.array([False, True, False, False, False, False, True, False])
    got = fused.act(a, prev, s, hold)
    assert np.isfinite(got.targets.pos).all() and np.isfinite(got.targets.rot).all()
    _same_step(got, layers.act(a, prev, s, hold))
    for e, st in enumerate(states):  # each arm as it would be alone
        alone = layers.act(a[e:e + 1], prev[e:e + 1], st, hold[e:e + 1])
        np.testing.assert_allclose(got.targets.pos[e:e + 1], alone.targets.pos, atol=1e-9)
        np.testing.assert_allclose(got.targets.rot[e:e + 1], alone.targets.rot, atol=1e-9)
    np.testing.assert_array_equal(got.held, hold | (np.arange(8) == 2))
    np.testing.assert_allclose(got.targets.rot[got.held], s.ee_rot[got.held])


@pytest.mark.parametrize("law", ["osc", "impedance"])
def test_fused_command_matches_the_layers_and_the_reference(law: str) -> None:
    cfg = OSCConfig() if law == "osc" else cartesian_impedance()
    fused, layers, ref, arm, env = _pipelines(_SPACES["ee_pose"], cfg)
    rng = np.random.default_rng(5)
    fired: dict[str, int] = {}
    for s in _states(arm, env, 150, seed=6):
        a = rng.uniform(-1.0, 1.0, (1, fused.dim))
        targets = layers.act(a, np.zeros_like(a), s).targets
        got, got_flags = fused.command(targets, s, "effort")
        for other in (layers, ref):
            want, want_flags = other.command(targets, dataclasses.replace(s), "effort")
            np.testing.assert_allclose(got, want, rtol=0.0, atol=1e-9)
            assert got_flags.keys() == want_flags.keys()
            for name in want_flags:
                np.testing.assert_array_equal(got_flags[name], want_flags[name], name)
        for name, f in got_flags.items():
            fired[name] = fired.get(name, 0) + int(f[0])
    assert sum(v > 0 for v in fired.values()) >= 3, fired


def test_fused_command_on_a_batch_keeps_the_batch_wide_passes() -> None:
    fused, layers, _, arm, env = _pipelines(_SPACES["ee_pose"])
    rng = np.random.default_rng(7)
    states = [s for s in _states(arm, env, 12, seed=8) if s.gravity is not None][:6]
    s = stack(states)
    a = rng.uniform(-1.0, 1.0, (len(states), fused.dim))
    targets = layers.act(a, np.zeros_like(a), s).targets
    got, got_flags = fused.command(targets, s, "effort")
    want, want_flags = layers.command(targets, dataclasses.replace(s), "effort")
    np.testing.assert_allclose(got, want, rtol=0.0, atol=1e-9)
    for name in want_flags:
        np.testing.assert_array_equal(got_flags[name], want_flags[name], name)


def test_torch_states_and_a_disabled_shield_take_the_layers() -> None:
    import torch

    fused, layers, _, arm, env = _pipelines(_SPACES["ee_pose"])
    s = _states(arm, env, 1, seed=9)[0]
    t = ArmState(**{k: None if getattr(s, k) is None else torch.from_numpy(getattr(s, k))
                    for k in ("q", "qd", "ee_pos", "ee_rot", "jac", "mass", "drift",
                              "gravity", "link_pos", "link_rot")})
    a = torch.full((1, fused.dim), 0.3, dtype=torch.float64)
    got = fused.act(a, a * 0.0, t)
    want = layers.act(a.numpy(), a.numpy() * 0.0, s)
    assert isinstance(got.targets.pos, torch.Tensor)
    np.testing.assert_allclose(got.targets.pos.numpy(), want.targets.pos, atol=1e-9)
    fused.shield.cfg.enabled = False
    layers.shield.cfg.enabled = False
    got = fused.act(a.numpy(), a.numpy() * 0.0, s)
    want = layers.act(a.numpy(), a.numpy() * 0.0, s)
    assert set(got.flags) == set(want.flags) == {"nan_guard", "action_bounds"}
    tau, flags = fused.command(got.targets, s, "effort")
    np.testing.assert_allclose(tau, layers.command(want.targets, s, "effort")[0], atol=1e-9)
    assert flags == {}
