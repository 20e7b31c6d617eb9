"""The simulated arm: real time, latency, actuation delay, dead sensor.

Nothing here assumes how fast this host runs: conditions are polled with generous deadlines,
and only orderings the implementation guarantees are asserted (a command never acts before
its delay, a reading is never younger than the latency). The pace itself is measured by the
``perf`` test at the end (``pytest -m perf``; ``make test`` leaves it out).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import pytest

from robot_rl.hardware.configs import SimRobotConfig
from robot_rl.hardware.robot import JointCommand
from robot_rl.hardware.sim_robot import SimRobot
from tests import polling

DEADLINE = 20.0
"""Seconds any polled condition may take on a loaded host before the test fails."""


def wait_for(cond: Callable[[], bool], timeout: float = DEADLINE) -> bool:
    return polling.wait_for(cond, timeout, every=0.005)


def wait_steps(robot: SimRobot, n: int) -> None:
    """Until the physics has advanced ``n`` more steps."""
    start = robot.steps
    assert wait_for(lambda: robot.steps >= start + n), "the physics stopped"


def test_follows_position_commands():
    with SimRobot(SimRobotConfig()) as robot:
        target = np.asarray(robot.spec.home) + 0.2
        robot.send_action(JointCommand.position(target))
        assert wait_for(lambda: np.abs(robot.observe().q - target).max() < 0.02)


def test_sensing_latency_and_actuation_delay():
    cfg = SimRobotConfig(sensing_latency=0.05, actuation_delay=0.2)
    with SimRobot(cfg) as robot:
        r = robot.observe()
        assert time.monotonic() - r.stamp >= 0.05  # never younger than the latency
        q0 = robot.true_q()
        cmd = JointCommand.position(q0 + 0.3)
        sent_at = time.monotonic()
        robot.send_action(cmd)
        assert wait_for(lambda: robot.applied is not None and
                        np.allclose(robot.applied.values, cmd.values))
        assert time.monotonic() - sent_at >= 0.2  # it acted no earlier than the delay
        assert wait_for(lambda: np.abs(robot.true_q() - q0).max() > 0.05)


def test_a_dead_sensor_gives_no_fresh_readings():
    with SimRobot(SimRobotConfig()) as robot:
        robot.sensing = False
        wait_steps(robot, 5)  # a sample being taken as it died is in (no latency here)
        a = robot.observe()
        wait_steps(robot, 25)
        assert robot.observe().stamp == a.stamp
        robot.sensing = True
        assert wait_for(lambda: robot.observe().stamp > a.stamp)


@pytest.mark.slow
def test_the_arm_in_its_own_process_behaves_like_the_threaded_one():
    from robot_rl.hardware.sim_robot_process import SimRobotProcess

    cfg = SimRobotConfig(sensing_latency=0.01, actuation_delay=0.05)
    with SimRobotProcess(cfg) as robot:
        r0 = robot.observe()
        assert time.monotonic() - r0.stamp >= 0.01  # latency applied in the child, same clock
        np.testing.assert_allclose(r0.q, robot.spec.home, atol=1e-3)
        target = np.asarray(robot.spec.home) + 0.2
        sent_at = time.monotonic()
        sent = robot.send_action(JointCommand.position(target))
        np.testing.assert_allclose(sent.values, target)
        assert wait_for(lambda: np.abs(robot.true_q() - r0.q).max() > 1e-3)
        assert time.monotonic() - sent_at >= 0.05  # no motion before the actuation delay
        assert wait_for(lambda: np.abs(robot.observe().q - target).max() < 0.02)
        assert robot.observe().stamp > r0.stamp
        ee = robot.ee_pos()
        robot.sensing = False
        # the physics never runs ahead of the wall clock: 25 steps of 2 ms outlast the 10 ms
        # latency, after which every sample taken before the sensor died is visible
        wait_steps(robot, 25)
        stale = robot.observe()
        wait_steps(robot, 25)
        assert robot.observe().stamp == stale.stamp  # dead sensor: nothing new
        robot.sensing = True
        robot.reset()
        assert wait_for(lambda: np.abs(robot.observe().q - robot.spec.home).max() < 1e-2)
        assert np.linalg.norm(robot.ee_pos() - ee) > 0.01
        proc = robot._proc
    assert not proc.is_alive()  # close() ended the child


@pytest.mark.perf
def test_steps_in_real_time():
    """About 500 physics steps of 2 ms per second of wall clock (a rate: ``-m perf``)."""
    with SimRobot(SimRobotConfig()) as robot:
        r0, s0 = robot.observe(), robot.steps
        time.sleep(1.0)
        r1, steps = robot.observe(), robot.steps - s0
    assert 0.7 < (r1.stamp - r0.stamp) < 1.5
    assert 300 < steps < 700


def test_friction_is_added_per_joint_or_to_every_joint():
    from robot_rl.errors import ConfigError
    from robot_rl.hardware.sim_robot import build_model
    from robot_rl.robots import get_robot

    robot = get_robot("arm7")
    dofs = [int(build_model(SimRobotConfig(), robot).joint(n).dofadr[0])
            for n in robot.joint_names]
    nominal = build_model(SimRobotConfig(), robot).dof_frictionloss[dofs]
    per_joint = (8.0, 8.0, 6.0, 6.0, 0.0, 0.0, 1.0)
    np.testing.assert_allclose(
        build_model(SimRobotConfig(frictionloss=per_joint), robot).dof_frictionloss[dofs],
        nominal + per_joint)
    np.testing.assert_allclose(
        build_model(SimRobotConfig(frictionloss=2.0), robot).dof_frictionloss[dofs],
        nominal + 2.0)
    with pytest.raises(ConfigError, match="frictionloss has 3 entries"):
        SimRobotConfig(frictionloss=(1.0, 1.0, 1.0)).validate(robot)
    with pytest.raises(ConfigError, match="must be >= 0"):
        SimRobotConfig(frictionloss=(1.0, -1.0, 0, 0, 0, 0, 0)).validate(robot)


def test_stepping_in_simulated_time_needs_a_reset_after_a_real_time_run() -> None:
    """``SimRobot.step``: readings stamped from the reset's, and refused after the thread
    ran (its stamps may be ahead of the simulated clock) until ``reset``."""
    robot = SimRobot(SimRobotConfig())
    t0 = robot.observe().stamp  # type: ignore[union-attr]
    robot.step(5)
    assert robot.observe().stamp == pytest.approx(t0 + 5 * robot.cfg.physics_dt)  # type: ignore[union-attr]
    robot.connect()
    robot.close()
    with pytest.raises(RuntimeError, match="reset"):
        robot.step(1)
    robot.reset()
    robot.step(1)
    assert robot.observe().stamp > robot._reset_stamp  # type: ignore[union-attr]
