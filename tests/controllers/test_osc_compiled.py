"""The compiled OSC law (controllers/osc_compiled.py) against the array reference."""

from __future__ import annotations

import numpy as np
import pytest

from robot_rl.controllers.action_spaces import Targets
from robot_rl.controllers.arm_model import ArmModel
from robot_rl.controllers.configs import EEPoseConfig, OSCConfig, cartesian_impedance
from robot_rl.controllers.osc import OperationalSpace
from robot_rl.sim import make_env


def _rotation(rng: np.random.Generator) -> np.ndarray:
    qr, r = np.linalg.qr(rng.normal(size=(3, 3)))
    qr = qr * np.sign(np.diag(r))
    return qr if np.linalg.det(qr) > 0 else -qr


@pytest.mark.parametrize("cfg", [OSCConfig(), cartesian_impedance()], ids=["osc", "impedance"])
def test_the_compiled_law_matches_the_reference_on_random_states(cfg: OSCConfig) -> None:
    env = make_env("reach", 1, action=EEPoseConfig(gripper=False), controller=OSCConfig())
    arm = ArmModel(env.model, env.robot)
    law = OperationalSpace(cfg, env.robot)
    rng = np.random.default_rng(0)
    lo, hi = np.asarray(env.robot.q_min), np.asarray(env.robot.q_max)
    for i in range(200):
        s = arm.state(rng.uniform(lo, hi), rng.normal(0.0, 1.5, 7), mass=True)
        # targets near the hand (within the clamp) and far from it (clamped), any orientation
        far = i % 2 == 0
        pos = s.ee_pos + rng.normal(0.0, 0.3 if far else 0.02, (1, 3))
        rot = _rotation(rng)[None] if far else s.ee_rot
        t = Targets(kind="pose", pos=pos, rot=rot)
        want = law.torque_reference(t, s)
        got = law.torque(t, s)
        np.testing.assert_allclose(got, want, rtol=0.0, atol=1e-9)
    law.compiled = False
    assert np.array_equal(law.torque(t, s), law.torque_reference(t, s))
