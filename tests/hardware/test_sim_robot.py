"""The simulated arm: real time, latency, actuation delay, dead sensor."""

from __future__ import annotations

import time

import numpy as np

from robot_rl.hardware.robot import JointCommand
from robot_rl.hardware.sim_robot import SimRobot, SimRobotConfig


def test_steps_in_real_time_and_follows_position_commands():
    with SimRobot(SimRobotConfig()) as robot:
        r0 = robot.observe()
        target = np.asarray(robot.spec.home) + 0.2
        robot.send_action(JointCommand.position(target))
        time.sleep(1.0)
        r1 = robot.observe()
        steps = robot.steps
    assert 0.7 < (r1.stamp - r0.stamp) < 1.5
    assert 300 < steps < 700  # about 500 steps of 2 ms in a second
    assert np.abs(r1.q - target).max() < 0.02


def test_sensing_latency_and_actuation_delay():
    cfg = SimRobotConfig(sensing_latency=0.05, actuation_delay=0.2)
    with SimRobot(cfg) as robot:
        r = robot.observe()
        assert time.monotonic() - r.stamp >= 0.05
        q0 = robot.true_q()
        robot.send_action(JointCommand.position(q0 + 0.3))
        time.sleep(0.1)
        assert np.abs(robot.true_q() - q0).max() < 1e-3  # not yet acting
        time.sleep(0.4)
        assert np.abs(robot.true_q() - q0).max() > 0.05


def test_a_dead_sensor_gives_no_fresh_readings():
    with SimRobot(SimRobotConfig()) as robot:
        robot.sensing = False
        time.sleep(0.02)
        a = robot.observe()
        time.sleep(0.05)
        assert robot.observe().stamp == a.stamp


def test_the_arm_in_its_own_process_behaves_like_the_threaded_one():
    from robot_rl.hardware.sim_robot_process import SimRobotProcess

    cfg = SimRobotConfig(sensing_latency=0.01, actuation_delay=0.05)
    with SimRobotProcess(cfg) as robot:
        r0 = robot.observe()
        assert time.monotonic() - r0.stamp >= 0.01  # latency applied in the child, same clock
        np.testing.assert_allclose(r0.q, robot.spec.home, atol=1e-3)
        target = np.asarray(robot.spec.home) + 0.2
        sent = robot.send_action(JointCommand.position(target))
        np.testing.assert_allclose(sent.values, target)
        time.sleep(0.03)
        assert np.abs(robot.true_q() - r0.q).max() < 1e-3  # inside the actuation delay
        time.sleep(1.0)
        r1 = robot.observe()
        assert np.abs(r1.q - target).max() < 0.02
        assert 300 < robot.steps < 800 and r1.stamp > r0.stamp
        ee = robot.ee_pos()
        robot.sensing = False
        time.sleep(0.05)
        stale = robot.observe()
        time.sleep(0.05)
        assert robot.observe().stamp == stale.stamp  # dead sensor: nothing new
        robot.sensing = True
        robot.reset()
        time.sleep(0.05)
        np.testing.assert_allclose(robot.observe().q, robot.spec.home, atol=1e-2)
        assert np.linalg.norm(robot.ee_pos() - ee) > 0.01
        proc = robot._proc
    assert not proc.is_alive()  # close() ended the child
