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


def _ramp_env(ramp: bool):  # type: ignore[no-untyped-def]
    """reach at 10 Hz (50 physics steps of 2 ms per control step), joint deltas."""
    env = make_env("reach", 1, dr="off", decimation=50, motion=MotionConfig(ramp=ramp))
    env.reset(seed=0)
    return env


@pytest.mark.slow
def test_a_ramped_command_starts_at_the_laws_lead_and_the_shield_models_its_speed() -> None:
    held, ramped = _ramp_env(False), _ramp_env(True)
    kp, kd = ramped.pipeline.controller.kp, ramped.pipeline.controller.kd
    lag, dt = kd / kp, ramped.control_dt  # 0.1 s
    assert ramped.pipeline.shield.ramp == dt and held.pipeline.shield.ramp == 0.0
    arm = ramped.state.arm_state(numpy=ramped.numpy_control)
    q = np.array(arm.q, copy=True)
    a = np.zeros((1, ramped.act_dim), dtype=np.float32)
    a[0, 0] = 0.3  # 0.03 rad on joint 1: within every bound, held or ramped
    t = ramped.pipeline.act(a, a * 0, arm).targets
    want_end = q.copy()
    want_end[0, 0] += 0.03
    np.testing.assert_allclose(t.joint, want_end, atol=1e-12)
    # the ramp starts where the PD law's steady lead is for the speed 0.03 / (lag + dt)
    np.testing.assert_allclose(t.start, q + (want_end - q) * lag / (lag + dt), atol=1e-12)
    np.testing.assert_allclose(t.at(0.5).joint, (t.start + t.joint) / 2, atol=1e-12)
    np.testing.assert_allclose(t.at(1.0).joint, t.joint, atol=0)
    # A whole 0.1-rad step from rest: held, the PD law reads it as the speed 0.1 / lag =
    # 1.5 rad/s (lag 0.067 s on joint 1), more than the shield's acceleration bound lets a
    # command reach in one step (8 rad/s^2 x 0.1 s); ramped, as 0.1 / (lag + dt) = 0.6 rad/s,
    # within it and the speed limit: it passes untouched.
    a[0, 0] = 1.0
    accel = ramped.pipeline.shield.cfg.max_joint_accel
    assert 0.1 / lag[0] > accel * dt > 0.1 / (lag[0] + dt)
    assert 0.1 / (lag[0] + dt) < ramped.pipeline.shield.qd_limit[0]
    harm = held.state.arm_state(numpy=held.numpy_control)
    h = held.pipeline.act(a, a * 0, harm)
    r = ramped.pipeline.act(a, a * 0, ramped.state.arm_state(numpy=ramped.numpy_control))
    assert h.flags["joint_velocity"][0] and not r.flags["joint_velocity"][0]
    assert h.targets.start is None
    np.testing.assert_allclose(r.targets.joint[0, 0] - q[0, 0], 0.1, atol=1e-12)


def test_a_ramped_joint_moves_through_the_step_instead_of_stopping() -> None:
    # 0.05 rad per 0.1-s step on joint 1: a held target is reached and the joint slows
    # within each step (its speed at the step's end about half its mean); ramped, the
    # joint moves at the command's speed 0.05 / (lag + dt) = 0.33 rad/s throughout.
    for ramp in (False, True):
        env = _ramp_env(ramp)
        a = torch.zeros(1, env.act_dim)
        a[0, 0] = 0.5
        for _ in range(4):  # the motion settles into its steady pattern
            q = float(env.state.joint_pos[0, 0])
            env.step(a)
        mean = (float(env.state.joint_pos[0, 0]) - q) / env.control_dt
        end = float(env.state.joint_vel[0, 0])
        if ramp:
            lag = float(env.pipeline.controller.kd[0] / env.pipeline.controller.kp[0])
            assert abs(mean - 0.05 / (lag + env.control_dt)) < 0.03, mean
            assert abs(end - mean) < 0.05 * mean, (end, mean)
        else:
            assert end < 0.6 * mean, (end, mean)


def test_a_ramp_needs_joint_commands() -> None:
    from robot_rl.controllers import EEDeltaConfig, OSCConfig

    with pytest.raises(ConfigError, match="ramp"):
        make_env("reach", 1, action=EEDeltaConfig(gripper=False), controller=OSCConfig(),
                 motion=MotionConfig(ramp=True))
