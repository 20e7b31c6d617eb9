"""The CPU backend's compiled arm state (sim/backends/arm_compiled.py) against the torch
version built from the same live views."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from robot_rl.controllers.arm_state import ArmState
from robot_rl.controllers.configs import EEDeltaConfig, OSCConfig
from robot_rl.sim import make_env


@pytest.mark.parametrize("task,overrides", [
    ("reach", {}), ("lift", {}),  # lift: a gripper, so qpos columns and dofs differ
    ("reach", {"action": EEDeltaConfig(gripper=False), "controller": OSCConfig()}),
])
def test_the_compiled_arm_state_matches_the_views(task: str, overrides: dict) -> None:
    env = make_env(task, 5, **overrides)
    assert env.state._arm_index is not None
    env.reset(seed=3)
    for _ in range(12):
        env.step(env.random_action())
        for mass in (False, True):
            got = env.state.arm_state(mass=mass, numpy=True)
            want = env.state.arm_state(mass=mass).numpy()
            for f in dataclasses.fields(ArmState):
                if f.name.startswith("_"):
                    continue
                a, b = getattr(got, f.name), getattr(want, f.name)
                if b is None:
                    assert a is None, f.name
                    continue
                assert isinstance(a, np.ndarray) and a.dtype == np.float64, f.name
                np.testing.assert_allclose(a, b, rtol=0.0, atol=1e-12, err_msg=f.name)
    assert np.abs(env.state.arm_state(numpy=True).jac).max() > 0.1  # not a zero Jacobian


def test_the_env_acts_on_numpy_as_on_torch() -> None:
    """The control path on numpy views (the CPU default, compiled layers) and on torch
    tensors (the GPU's path) give the same episode from the same seed."""
    runs = []
    for numpy_control in (True, False):
        env = make_env("reach", 8)
        env.numpy_control = numpy_control
        obs = [env.reset(seed=1)]
        for _ in range(30):
            obs.append(env.step(env.random_action())[0])
        runs.append(np.stack([o.numpy() for o in obs]))
    np.testing.assert_allclose(runs[0], runs[1], rtol=0.0, atol=1e-4)
