"""The deploy runtime: reaching on the simulated arm, and every fail-safe rule."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from robot_rl.errors import ConfigError
from robot_rl.export import load_policy
from robot_rl.hardware.robot import RobotError
from robot_rl.hardware.runtime import DeployConfig, DeployRuntime
from robot_rl.hardware.sim_robot import SimRobot, SimRobotConfig
from tests.hardware.conftest import ScriptedRobot

GOAL = (0.5, -0.15, 0.3)


def test_reaches_the_goal_on_the_simulated_arm_and_ends_with_a_hold(reach_artifact):
    with SimRobot(SimRobotConfig(sensing_latency=0.002, q_noise_std=1e-4)) as robot:
        rt = DeployRuntime(load_policy(reach_artifact), robot, DeployConfig(goal=GOAL))
        out = rt.run(duration=3.0)
        dist = np.linalg.norm(robot.ee_pos() - np.asarray(GOAL))
        final = rt.last_sent
    assert dist < 0.03, out
    assert out["success"] and out["policy_steps"] > 100 and out["ticks"] > 1000
    assert final is not None and final.hold  # the last command is a hold
    assert out["bad_readings"] == 0 and not out["interrupted"]


def test_stale_data_holds_within_the_watchdog_and_needs_an_explicit_start(reach_artifact,
                                                                          scripted_robot):
    r = scripted_robot
    rt = DeployRuntime(load_policy(reach_artifact), r, DeployConfig(goal=GOAL, rate_hz=100))
    period = rt.period
    q0 = np.asarray(r.spec.home, dtype=float)
    r.set(q0, stamp=0.0)
    rt.tick(r.observe(), now=0.0)
    assert rt.mode == "running"
    t = 0.0
    for k in range(1, 20):  # fresh data, the arm moving slightly
        t = k * period
        r.set(q0 + 0.001 * k, stamp=t)
        sent = rt.tick(r.observe(), now=t)
        assert not sent.hold
    moving = r.sent[-1].values.copy()
    last_q = r.reading.q.copy()
    held_at = None
    for k in range(1, 6):  # the same (old) reading again: no fresh data
        sent = rt.tick(r.observe(), now=t + k * period)
        if sent.hold and held_at is None:
            held_at = k
    assert held_at is not None and held_at <= 4  # within 3 periods (+ the tick it is seen)
    assert rt.mode == "idle" and rt.watchdog.trips == 1
    np.testing.assert_allclose(r.sent[-1].values, last_q)  # holds where it was, no jump
    assert not np.allclose(moving, last_q)
    # fresh data again: still held until start
    t2 = t + 10 * period
    r.set(last_q, stamp=t2)
    assert rt.tick(r.observe(), now=t2).hold
    ok, why = rt.start(now=t2)
    assert ok, why
    r.set(last_q, stamp=t2 + period)
    assert not rt.tick(r.observe(), now=t2 + period).hold


def test_estop_latches_until_reset_and_start(reach_artifact, scripted_robot):
    r = scripted_robot
    rt = DeployRuntime(load_policy(reach_artifact), r, DeployConfig(goal=GOAL, rate_hz=100))
    q0 = np.asarray(r.spec.home, dtype=float)
    for k in range(3):
        r.set(q0, stamp=k * 0.01)
        rt.tick(r.observe(), now=k * 0.01)
    rt.estop("test")
    assert rt.mode == "estop"
    r.set(q0, stamp=0.03)
    assert rt.tick(r.observe(), now=0.03).hold
    ok, why = rt.start(now=0.03)
    assert not ok and "reset" in why
    rt.reset()
    assert rt.mode == "idle"
    ok, _ = rt.start(now=0.03)
    assert ok and rt.mode == "running"


def test_bad_readings_are_dropped_never_forwarded(reach_artifact, scripted_robot):
    r = scripted_robot
    logs: list[str] = []
    rt = DeployRuntime(load_policy(reach_artifact), r, DeployConfig(goal=GOAL, rate_hz=100),
                       log=logs.append)
    q0 = np.asarray(r.spec.home, dtype=float)
    r.set(q0, stamp=0.0)
    rt.tick(r.observe(), now=0.0)
    for k in range(1, 6):
        bad = q0.copy()
        bad[1] = np.nan
        r.set(bad, stamp=k * 0.01)
        sent = rt.tick(r.observe(), now=k * 0.01)
        assert np.isfinite(sent.values).all()
        assert np.isfinite(rt.observer.state.qpos.numpy()).all()  # never reached the policy
    assert rt.stats.bad_readings == 5
    assert len(logs) == 2  # one rate-limited line, and the watchdog's hold
    assert rt.mode == "idle" and sent.hold  # bad data is no data: the watchdog holds


def test_refuses_an_artifact_for_another_robot(reach_artifact):
    other = ScriptedRobot()
    other.joint_names = tuple(f"j{i}" for i in range(7))
    with pytest.raises(RobotError, match="refusing to start"):
        DeployRuntime(load_policy(reach_artifact), other)


def test_rate_must_be_a_multiple_of_the_policy_rate(reach_artifact, scripted_robot):
    with pytest.raises(ConfigError, match="whole multiple"):
        DeployRuntime(load_policy(reach_artifact), scripted_robot, DeployConfig(rate_hz=75))


def test_joint_targets_need_a_position_or_velocity_interface(reach_artifact):
    with pytest.raises(RobotError, match="position or velocity"):
        DeployRuntime(load_policy(reach_artifact), ScriptedRobot(interface="effort"))


def test_velocity_interface_drives_the_arm_to_the_goal(reach_artifact):
    with SimRobot(SimRobotConfig(interface="velocity")) as robot:
        rt = DeployRuntime(load_policy(reach_artifact), robot, DeployConfig(goal=GOAL))
        stop = threading.Event()
        rt.run(duration=3.0, stop=stop)
        assert np.linalg.norm(robot.ee_pos() - np.asarray(GOAL)) < 0.05
