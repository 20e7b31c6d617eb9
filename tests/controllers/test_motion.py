"""The motion profile of joint targets (controllers.motion): hand-computed speeds, motion
within its limits that stops at the target, and a shield that no longer reshapes an
expert's commands."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from robot_rl.controllers import MotionConfig, MotionProfile, Targets
from robot_rl.errors import ConfigError
from robot_rl.sim import make_env
from robot_rl.sim.experts import make_expert

LAG = np.full(3, 0.05)  # kd / kp [s]
QD_LIM = np.full(3, 2.0)  # the shield's speed limit [rad/s]


def _profile() -> MotionProfile:
    # a = 0.9 x 8 = 7.2 rad/s^2, a dt = 0.144 rad/s per 20-ms tick; speed <= 0.9 x 2 = 1.8
    return MotionProfile(MotionConfig(), max_joint_accel=8.0, control_dt=0.02)


def test_speeds_by_hand() -> None:
    # joint 0: 1 rad to go from rest: the acceleration bound, 0 + 0.144.
    # joint 1: 1 mrad to go from rest: the PD law's own speed, 0.001 / 0.05 = 0.02
    #   (v_stop = sqrt(0.072^2 + 2 x 7.2 x 0.001) - 0.072 = 0.0679 is above it).
    # joint 2: 5 cm to go at 1 rad/s: v_stop = sqrt(0.072^2 + 0.72) - 0.072 = 0.7796 asks to
    #   brake harder than a dt allows, so the speed falls by 0.144 to 0.856.
    v = _profile().speeds(np.array([[1.0, 0.001, 0.05]]), np.zeros((1, 3)),
                          np.array([[0.0, 0.0, 1.0]]), LAG, QD_LIM)
    np.testing.assert_allclose(v, [[0.144, 0.02, 0.856]], atol=1e-12)


def test_motion_stays_within_its_limits_and_stops_at_the_target() -> None:
    # A joint that moves at the commanded speed (q += v dt) is driven to three targets.
    p = _profile()
    target = np.array([[0.8, -0.3, 0.02]])
    q, v = np.zeros((1, 3)), np.zeros((1, 3))
    path = []
    for _ in range(60):
        v_new = p.speeds(target, q, v, LAG, QD_LIM)
        assert np.abs(v_new - v).max() <= 0.144 + 1e-12  # a dt
        assert np.abs(v_new).max() <= 1.8 + 1e-12
        v = v_new
        q = q + v * 0.02
        path.append(q[0].copy())
    np.testing.assert_allclose(q, target, atol=1e-4)  # there within 1.2 s
    travel = np.array(path) * np.sign(target[0])
    assert (travel - np.abs(target[0])).max() < 1e-3  # braked in time: no overshoot


def test_numpy_and_torch_agree_and_held_robots_keep_their_target() -> None:
    p = _profile()
    rng = np.random.default_rng(0)
    q, goal, v_last = (rng.uniform(-1, 1, (4, 3)) for _ in range(3))
    held = np.array([False, True, False, False])
    out, v = p(Targets("joint", joint=goal), q, v_last, LAG, QD_LIM, held)
    t_out, t_v = p(Targets("joint", joint=torch.from_numpy(goal)), torch.from_numpy(q),
                   torch.from_numpy(v_last), torch.from_numpy(LAG), torch.from_numpy(QD_LIM),
                   torch.from_numpy(held))
    np.testing.assert_allclose(t_out.joint.numpy(), out.joint, atol=1e-12)
    np.testing.assert_allclose(t_v.numpy(), v, atol=1e-12)
    np.testing.assert_array_equal(out.joint[1], goal[1])
    np.testing.assert_allclose(v[1], (goal[1] - q[1]) / LAG)
    np.testing.assert_allclose(out.joint[0], q[0] + v[0] * LAG)


@pytest.mark.parametrize("kw", [{"accel_fraction": 0.0}, {"speed_fraction": 1.5}])
def test_fractions_outside_0_1_are_refused(kw: dict) -> None:
    with pytest.raises(ConfigError, match="fraction"):
        MotionConfig(**kw)


def _joint_velocity_share(motion: bool) -> float:
    """Share of the scripted push expert's steps the shield's joint-velocity layer changed."""
    env = make_env("push", 4, seed=0, motion=MotionConfig(enabled=motion))
    expert = make_expert(env, "scripted", seed=0)
    env.reset(seed=0)
    steps = 100
    for _ in range(steps):
        env.step(expert(env.state))
    return float(env.shield_counts["joint_velocity"].sum()) / (steps * env.num_envs)


def test_the_profile_takes_the_shaping_off_the_shield() -> None:
    # Without the profile the joint-velocity layer reshapes most of the expert's commands
    # (about 70% of its steps); with it, the shield passes them.
    assert _joint_velocity_share(False) > 0.3
    assert _joint_velocity_share(True) < 0.01


def test_the_shield_bounds_a_profiled_command_against_the_last_command() -> None:
    # The shield's acceleration bound takes the speed of the last command it let through
    # (the track); the profile must not overwrite it before the shield runs (it did: the
    # bound then compared each command with itself and stopped binding).
    env = make_env("reach", 2, seed=0, motion=MotionConfig(enabled=True))
    env.reset(seed=0)
    pipe = env.pipeline
    arm = env.state.arm_state(numpy=env.numpy_control)
    action = np.full((2, env.act_dim), 0.9, dtype=np.float32)
    pipe.act(action, action * 0, arm)
    after_first = np.array(pipe._track.v, copy=True)
    seen = []
    filter_targets = pipe.shield.filter_targets

    def spy(t, s, track=None):  # type: ignore[no-untyped-def]
        seen.append(np.array(track.v, copy=True))
        return filter_targets(t, s, track)

    pipe.shield.filter_targets = spy  # type: ignore[method-assign]
    pipe.act(-action, action, arm)
    np.testing.assert_array_equal(seen[0], after_first)
    assert np.abs(after_first).max() > 0.1  # the first command moved
