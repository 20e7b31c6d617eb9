"""The compiled rotation-vector map and pose-target layer (controllers/targets_compiled.py)
against the array reference."""

from __future__ import annotations

import numpy as np

from robot_rl.controllers.action_spaces import Targets
from robot_rl.controllers.arm_model import ArmModel
from robot_rl.controllers.configs import EEPoseConfig, OSCConfig
from robot_rl.controllers.ik import axis_angle_to_mat, axis_angle_to_mat_reference
from robot_rl.sim import make_env


def test_the_compiled_rotation_map_matches_rodrigues() -> None:
    rng = np.random.default_rng(0)
    rv = np.concatenate([rng.normal(0.0, 1.5, (200, 3)), np.zeros((1, 3)),
                         rng.normal(0.0, 1e-9, (5, 3))])
    got, want = axis_angle_to_mat(rv), axis_angle_to_mat_reference(rv)
    np.testing.assert_allclose(got, want, rtol=0.0, atol=1e-12)
    np.testing.assert_allclose(got @ np.swapaxes(got, 1, 2), np.broadcast_to(np.eye(3),
                               got.shape), atol=1e-12)  # rotations


def test_the_compiled_pose_target_layer_matches_the_reference() -> None:
    env = make_env("reach", 1, action=EEPoseConfig(gripper=False), controller=OSCConfig())
    shield = env.pipeline.shield
    arm = ArmModel(env.model, env.robot)
    rng = np.random.default_rng(1)
    lo, hi = np.asarray(env.robot.q_min), np.asarray(env.robot.q_max)
    fired = {"workspace": 0, "table_floor": 0}
    for _ in range(300):
        s = arm.state(rng.uniform(lo, hi), rng.normal(0.0, 2.0, 7))
        pos = rng.uniform([-0.2, -0.9, -0.2], [1.2, 0.9, 1.2], (1, 3))
        rot = axis_angle_to_mat_reference(rng.normal(0.0, 1.5, (1, 3)))
        t = Targets("pose", pos=pos, rot=rot)
        got, got_flags = shield.filter_targets(t, s)
        want, want_flags = shield._pose_targets_reference(t, s)
        np.testing.assert_allclose(got.pos, want.pos, rtol=0.0, atol=1e-9)
        for name in fired:
            assert bool(got_flags[name][0]) == bool(want_flags[name][0]), name
            fired[name] += int(want_flags[name][0])
    assert all(fired.values()), fired  # both layers acted on some of the targets
