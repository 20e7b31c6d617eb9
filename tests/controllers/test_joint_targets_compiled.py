"""The compiled joint-target layers (controllers/joint_targets_compiled.py) against the array
reference: the same targets within 1e-9, the same flags and the same trajectory state, one
arm at a time and in batches (the reference's floor-and-box passes are batch-wide)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from robot_rl.controllers import MotionConfig, joint_targets_compiled
from robot_rl.controllers.action_spaces import Targets
from robot_rl.controllers.arm_model import ArmModel
from robot_rl.controllers.arm_state import ArmState
from robot_rl.controllers.shield import JointTrack
from robot_rl.sim import make_env
from tests.controllers.arm_states import stack


def _cases(seed: int, count: int, ramp: bool = False
           ) -> tuple[object, list[tuple[np.ndarray, ArmState, np.ndarray]]]:
    """reach's joint-PD shield (bound) and (target, state, last command speed) triples:
    joints anywhere in their range, fast, targets up to a radian away, some hands low over
    the table or at the workspace's faces, last speeds near the limits. ``ramp``: at 10 Hz
    with ramped commands (``MotionConfig.ramp``: the layers model kp_t)."""
    extra = {"motion": MotionConfig(ramp=True), "decimation": 50} if ramp else {}
    env = make_env("reach", 1, **extra)  # joint_delta actions on the joint PD servo
    shield = env.pipeline.shield
    arm = ArmModel(env.model, env.robot)
    rng = np.random.default_rng(seed)
    lo, hi = np.asarray(env.robot.q_min), np.asarray(env.robot.q_max)
    home = np.asarray(env.robot.home)
    qd_lim = shield.qd_limit
    cases = []
    for i in range(count):
        q = rng.uniform(lo, hi) if i % 3 == 0 else np.clip(home + rng.normal(0, 0.7, 7), lo, hi)
        qd = rng.normal(0.0, 1.0, 7) * qd_lim * rng.uniform(0.1, 1.2)
        s = arm.state(q, qd, mass=False)
        if i % 7 == 0:
            s = dataclasses.replace(s, gravity=None)
        qt = q + rng.normal(0.0, rng.choice([0.05, 0.3, 1.0]), 7)
        v = rng.uniform(-1.0, 1.0, 7) * qd_lim
        cases.append((qt[None], s, v[None]))
    return shield, cases


def _both(shield, qt: np.ndarray, s: ArmState, v: np.ndarray | None):
    """(compiled, reference): (targets, flags, track speed or None) of each."""
    out = []
    for fn in (shield._joint_targets_compiled, shield._joint_targets_reference):
        track = None if v is None else JointTrack(v=v.copy())
        t, flags = fn(Targets("joint", joint=qt.copy()), s, track)
        out.append((t.joint, flags, None if track is None else track.v))
    return out


@pytest.mark.parametrize(("with_track", "ramp"), [(True, False), (False, False),
                                                  (True, True)])
def test_the_compiled_joint_target_layers_match_the_reference(with_track: bool,
                                                              ramp: bool) -> None:
    shield, cases = _cases(seed=0 if with_track else 1, count=300, ramp=ramp)
    assert shield.compiled
    fired = dict.fromkeys(joint_targets_compiled.FLAG_NAMES, 0)
    for qt, s, v in cases:
        (got, got_f, got_v), (want, want_f, want_v) = _both(shield, qt, s,
                                                             v if with_track else None)
        np.testing.assert_allclose(got, want, rtol=0.0, atol=1e-9)
        assert got_f.keys() == want_f.keys()
        for name in joint_targets_compiled.FLAG_NAMES:
            assert bool(got_f[name][0]) == bool(want_f[name][0]), name
            fired[name] += int(want_f[name][0])
        if with_track:
            np.testing.assert_allclose(got_v, want_v, rtol=0.0, atol=1e-7)
    assert all(fired.values()), fired  # every layer acted on some of the states


def test_a_batch_matches_the_reference_with_its_batch_wide_passes() -> None:
    shield, cases = _cases(seed=2, count=96)
    for start in range(0, 96, 8):
        chunk = [c for c in cases[start:start + 8] if c[1].gravity is not None]
        qt = np.concatenate([c[0] for c in chunk])
        v = np.concatenate([c[2] for c in chunk])
        s = stack([c[1] for c in chunk])
        (got, got_f, got_v), (want, want_f, want_v) = _both(shield, qt, s, v)
        np.testing.assert_allclose(got, want, rtol=0.0, atol=1e-9)
        np.testing.assert_allclose(got_v, want_v, rtol=0.0, atol=1e-7)
        for name in joint_targets_compiled.FLAG_NAMES:
            np.testing.assert_array_equal(got_f[name], want_f[name], err_msg=name)


def test_torch_float32_and_read_only_inputs() -> None:
    """Torch tensors take the reference; read-only or strided float64 arrays take the
    warmed-up signatures (no compile inside a control loop)."""
    import torch

    shield, cases = _cases(seed=3, count=2)
    qt, s, v = cases[1]
    before = len(joint_targets_compiled.joint_targets.signatures)
    ts = ArmState(**{f.name: torch.from_numpy(getattr(s, f.name))
                     for f in dataclasses.fields(ArmState)
                     if not f.name.startswith("_") and getattr(s, f.name) is not None})
    out, _ = shield._joint_targets(Targets("joint", joint=torch.from_numpy(qt)), ts, None)
    assert isinstance(out.joint, torch.Tensor)
    want = shield._joint_targets(Targets("joint", joint=qt.copy()), s, None)[0].joint
    np.testing.assert_allclose(out.joint.numpy(), want, atol=1e-9)
    for f in dataclasses.fields(ArmState):
        x = getattr(s, f.name)
        if isinstance(x, np.ndarray):
            x.setflags(write=False)
    wide = np.repeat(qt, 2, axis=1)[:, ::2]  # strided
    got = shield._joint_targets(Targets("joint", joint=wide), s, JointTrack(v=v.copy()))
    assert np.isfinite(got[0].joint).all()
    assert len(joint_targets_compiled.joint_targets.signatures) == before


def test_float64_numpy_takes_the_compiled_layers(monkeypatch) -> None:
    shield, cases = _cases(seed=4, count=1)
    qt, s, v = cases[0]
    calls = []
    real = joint_targets_compiled.joint_targets
    monkeypatch.setattr(joint_targets_compiled, "joint_targets",
                        lambda *a: calls.append(1) or real(*a))
    shield.filter_targets(Targets("joint", joint=qt), s, JointTrack(v=v))
    assert calls == [1]
    shield.compiled = False
    shield.filter_targets(Targets("joint", joint=qt), s, JointTrack(v=v))
    assert calls == [1]
