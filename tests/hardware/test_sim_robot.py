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
