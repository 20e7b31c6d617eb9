"""The compiled torque layer (controllers/shield_compiled.py) against the array reference."""

from __future__ import annotations

import dataclasses

import numpy as np

from robot_rl.controllers import shield_compiled
from robot_rl.controllers.arm_model import ArmModel
from robot_rl.controllers.arm_state import ArmState
from robot_rl.controllers.configs import EEPoseConfig, OSCConfig
from robot_rl.sim import make_env
from tests.controllers.arm_states import stack


def _cases(seed: int = 0, count: int = 400) -> tuple[object, list[tuple[np.ndarray, ArmState]]]:
    """The OSC env's bound shield and (torque, state) pairs: joints anywhere in their range
    (near the limits too), fast, with torques up to twice the limits, some hands at the
    table."""
    env = make_env("reach", 1, action=EEPoseConfig(gripper=False), controller=OSCConfig())
    shield = env.pipeline.shield
    arm = ArmModel(env.model, env.robot)
    rng = np.random.default_rng(seed)
    lo, hi = np.asarray(env.robot.q_min), np.asarray(env.robot.q_max)
    home = np.asarray(env.robot.home)
    tau_max = np.asarray(env.robot.tau_max)
    cases = []
    for i in range(count):
        if i % 3 == 0:
            q = rng.uniform(lo, hi)
        else:
            q = np.clip(home + rng.normal(0.0, 0.6, 7), lo, hi)
        qd = rng.normal(0.0, 1.5, 7)
        s = arm.state(q, qd, mass=True)
        if i % 5 == 0:
            s = dataclasses.replace(s, gravity=None, drift=None)
        tau = rng.uniform(-2.0, 2.0, 7) * tau_max * rng.uniform(0.05, 1.0)
        cases.append((tau[None], s))
    return shield, cases


def test_the_compiled_torque_layer_matches_the_reference_on_random_states() -> None:
    shield, cases = _cases()
    assert shield.compiled
    fired = dict.fromkeys(shield_compiled.FLAG_NAMES, 0)
    for tau, s in cases:
        want, want_flags = shield.filter_torque_reference(tau, s)
        got, got_flags = shield.filter_torque(tau, s)
        np.testing.assert_allclose(got, want, rtol=0.0, atol=1e-9)
        for name in shield_compiled.FLAG_NAMES:
            assert bool(got_flags[name][0]) == bool(want_flags[name][0]), name
            fired[name] += int(want_flags[name][0])
    assert all(fired.values()), fired  # every layer acted on some of the states


def test_a_batch_matches_the_reference_with_its_batch_wide_passes() -> None:
    """The reference runs its projection passes for the whole batch while any arm needs one;
    the compiled layer does the same."""
    shield, cases = _cases(seed=1, count=60)
    for start in range(0, 60, 6):
        chunk = [c for c in cases[start:start + 6] if c[1].gravity is not None]
        tau = np.concatenate([t for t, _ in chunk])
        s = stack([st for _, st in chunk])
        want, want_flags = shield.filter_torque_reference(tau, s)
        got, got_flags = shield.filter_torque(tau, s)
        np.testing.assert_allclose(got, want, rtol=0.0, atol=1e-9)
        for name in shield_compiled.FLAG_NAMES:
            np.testing.assert_array_equal(got_flags[name], want_flags[name])


def test_torch_and_float32_inputs_take_the_reference() -> None:
    import torch

    shield, cases = _cases(count=3)
    tau, s = cases[1]
    t = ArmState(**{f.name: torch.from_numpy(getattr(s, f.name))
                    for f in dataclasses.fields(ArmState)
                    if not f.name.startswith("_") and getattr(s, f.name) is not None})
    out, _ = shield.filter_torque(torch.from_numpy(tau), t)
    assert isinstance(out, torch.Tensor)
    np.testing.assert_allclose(out.numpy(), shield.filter_torque(tau, s)[0], atol=1e-9)


def test_read_only_inputs_take_the_warmed_up_signatures() -> None:
    """A read-only or strided array is another numba signature, compiled at its first call:
    in a control loop a stall of seconds. Inputs are made the warmed-up kind instead."""
    from robot_rl.controllers import osc_compiled, targets_compiled
    from robot_rl.controllers.configs import EEDeltaConfig

    env = make_env("reach", 1, action=EEDeltaConfig(gripper=False), controller=OSCConfig())
    arm = ArmModel(env.model, env.robot)
    fns = (shield_compiled.filter_torque, osc_compiled.osc_torque,
           targets_compiled.pose_targets, targets_compiled.axis_angle_to_mat)
    before = [len(f.signatures) for f in fns]
    s = arm.state(np.asarray(env.robot.home) + 0.1, np.full(7, 0.2), mass=True)
    for f in dataclasses.fields(ArmState):
        v = getattr(s, f.name)
        if isinstance(v, np.ndarray):
            v.setflags(write=False)
    action = np.full((1, 6), 0.5)
    action.setflags(write=False)
    pipe = env.pipeline
    step = pipe.act(action, np.zeros((1, 6)), s)
    tau, _ = pipe.command(step.targets, s, "effort")
    assert np.isfinite(tau).all()
    assert [len(f.signatures) for f in fns] == before
