"""The deploy runtime: reaching on the simulated arm, and every fail-safe rule."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from robot_rl.errors import ConfigError
from robot_rl.export import load_policy
from robot_rl.hardware.configs import DeployConfig, SimRobotConfig
from robot_rl.hardware.robot import RobotError
from robot_rl.hardware.runtime import DeployRuntime
from robot_rl.hardware.sim_robot import SimRobot
from tests.hardware.conftest import ScriptedRobot

GOAL = (0.5, -0.15, 0.3)


def _run_until_reached(rt: DeployRuntime, robot, budget: float = 60.0) -> dict:  # type: ignore[no-untyped-def]
    """Run the loop a second at a time until the arm is at the goal, restarting after a
    watchdog hold as an operator would (a loaded host can starve the arm's samples for
    longer than the watchdog: the watchdog has its own tests). No wall-clock pace is
    assumed: the budget only bounds a broken run."""
    def restart(r: DeployRuntime) -> None:
        if r.mode == "idle":
            r.start()

    end = time.monotonic() + budget
    while True:
        out = rt.run(duration=1.0, on_tick=restart)
        reached = np.linalg.norm(robot.ee_pos() - np.asarray(GOAL)) < 0.03 and out["success"]
        if reached or time.monotonic() > end:
            return out


@pytest.mark.slow
def test_reaches_the_goal_on_the_simulated_arm_and_ends_with_a_hold(reach_artifact):
    with SimRobot(SimRobotConfig(sensing_latency=0.002, q_noise_std=1e-4)) as robot:
        rt = DeployRuntime(load_policy(reach_artifact), robot,
                           DeployConfig(goal=GOAL, watchdog_periods=10))
        out = _run_until_reached(rt, robot)
        dist = np.linalg.norm(robot.ee_pos() - np.asarray(GOAL))
        final = rt.last_sent
    assert dist < 0.03, out
    assert out["success"] and out["policy_steps"] > 0
    assert final is not None and final.hold  # the last command is a hold
    assert out["bad_readings"] == 0 and not out["interrupted"]


def test_stale_data_holds_within_the_watchdog_and_needs_an_explicit_start(reach_artifact,
                                                                          scripted_robot):
    r = scripted_robot
    rt = DeployRuntime(load_policy(reach_artifact), r, DeployConfig(
        goal=GOAL, rate_hz=100, sliced_policy=False))
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


def test_the_summary_reports_the_readings_age_when_their_commands_go_out(reach_artifact,
                                                                        scripted_robot):
    """Readings 4 ms old when they arrive: every policy step's targets leave 4 ms after
    the measurement they act on (sensing to actuation, as the runtime sees it)."""
    r = scripted_robot
    rt = DeployRuntime(load_policy(reach_artifact), r, DeployConfig(
        goal=GOAL, rate_hz=100, sliced_policy=False))
    q0 = np.asarray(r.spec.home, dtype=float)
    for k in range(12):
        t = k * rt.period
        r.set(q0, stamp=t - 0.004)
        rt.tick(r.observe(), now=t)
    lag = rt.stats.summary()["sense_to_act_ms"]
    assert rt.stats.policy_steps >= 5 and lag == pytest.approx([4.0] * 3, abs=1e-6)


def test_estop_latches_until_reset_and_start(reach_artifact, scripted_robot):
    r = scripted_robot
    rt = DeployRuntime(load_policy(reach_artifact), r, DeployConfig(
        goal=GOAL, rate_hz=100, sliced_policy=False))
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
    rt = DeployRuntime(load_policy(reach_artifact), r, DeployConfig(
        goal=GOAL, rate_hz=100, sliced_policy=False),
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
    with pytest.raises(ConfigError, match="spin_us"):  # busy-waiting a whole period
        DeployRuntime(load_policy(reach_artifact), scripted_robot, DeployConfig(spin_us=2000))


def _stepped_episode(artifact: Path, interface: str, rate_hz: float,
                     seconds: float = 3.0) -> list[float]:
    """The policy on the simulated arm in simulated time (``SimRobot.step``; the clock
    starts at the reset's reading): the hand's distance to GOAL after every tick."""
    robot = SimRobot(SimRobotConfig(interface=interface))  # type: ignore[arg-type]
    rt = DeployRuntime(load_policy(artifact), robot,
                       DeployConfig(rate_hz=rate_hz, goal=GOAL, sliced_policy=False))
    per_tick = round(1.0 / rate_hz / robot.cfg.physics_dt)
    assert per_tick * robot.cfg.physics_dt == pytest.approx(1.0 / rate_hz)
    dist, t0 = [], robot.observe().stamp
    for k in range(round(seconds * rate_hz)):
        now = t0 + k / rate_hz
        if k == 0:
            rt.tick(robot.observe(), now=now)
            assert rt.start(now=now)[0]
        rt.tick(robot.observe(), now=now)
        robot.step(per_tick)
        dist.append(float(np.linalg.norm(robot.ee_pos() - np.asarray(GOAL))))
    return dist


def test_joint_targets_on_an_effort_interface_run_the_pd_law_on_the_host(reach_artifact):
    """A joint-target policy on a torque-controlled arm (a Franka's effort interface): the
    runtime evaluates the joint PD law each tick, and the arm ends where the position servo
    takes it. Too slow a tick for the law's damping is refused with the rate that works."""
    with pytest.raises(ConfigError, match="tick at 500 Hz or faster"):
        DeployRuntime(load_policy(reach_artifact), ScriptedRobot(interface="effort"),
                      DeployConfig(rate_hz=250))
    servo = _stepped_episode(reach_artifact, "position", 500.0)
    host = _stepped_episode(reach_artifact, "effort", 500.0)
    assert servo[-1] < 0.02 and host[-1] < 0.02, (servo[-1], host[-1])
    assert abs(host[-1] - servo[-1]) < 2e-3
    assert max(host[-250:]) - min(host[-250:]) < 1e-3  # settled: no oscillation


@pytest.mark.slow
def test_velocity_interface_drives_the_arm_to_the_goal(reach_artifact):
    with SimRobot(SimRobotConfig(interface="velocity")) as robot:
        # the loop busy-waits the last 200 µs before each deadline
        rt = DeployRuntime(load_policy(reach_artifact), robot,
                           DeployConfig(goal=GOAL, spin_us=200, watchdog_periods=10))
        _run_until_reached(rt, robot)
        assert np.linalg.norm(robot.ee_pos() - np.asarray(GOAL)) < 0.03


def test_sliced_policy_step_runs_in_idle_time_and_never_in_the_tick(reach_artifact,
                                                                     scripted_robot):
    """A due tick only begins the policy step; ``idle`` runs its stages while they fit before
    a deadline, and a step begun before a stop/start is dropped."""
    r = scripted_robot
    rt = DeployRuntime(load_policy(reach_artifact), r, DeployConfig(goal=GOAL, rate_hz=100))
    q0 = np.asarray(r.spec.home, dtype=float)
    r.set(q0, stamp=0.0)
    first = rt.tick(r.observe(), now=0.0)
    assert rt.mode == "running" and first.hold  # no targets yet: hold where it is
    np.testing.assert_allclose(first.values, q0)
    assert rt.stats.policy_steps == 0 and rt._pending is not None
    rt.idle(until=0.0)  # the deadline has passed: nothing runs
    assert rt._stage == ""
    rt.idle()  # all the time in the world: the step completes
    assert rt._pending is None and rt.stats.policy_steps == 1
    assert set(rt._stage_cost) == {"observe", "policy", "targets", "success"}
    r.set(q0, stamp=0.01)
    assert not rt.tick(r.observe(), now=0.01).hold
    # Begin the next step, stop and start again before it finishes: it is dropped.
    for k in range(2, 11):
        r.set(q0, stamp=0.01 * k)
        rt.tick(r.observe(), now=0.01 * k)
    assert rt._pending is not None
    rt.stop()
    assert rt.start(now=0.1)[0]
    assert rt._pending is None and rt.stats.policy_steps == 1


def test_a_starved_policy_step_is_forced_to_finish(reach_artifact, scripted_robot):
    """With never any idle time the step still completes, one stage per tick, from half a
    policy period on."""
    r = scripted_robot
    rt = DeployRuntime(load_policy(reach_artifact), r, DeployConfig(goal=GOAL, rate_hz=100))
    q0 = np.asarray(r.spec.home, dtype=float)
    done_at = None
    for k in range(rt.decimation + 6):
        r.set(q0, stamp=0.01 * k)
        rt.tick(r.observe(), now=0.01 * k)
        rt.idle(until=0.0)  # always too late
        if rt.stats.policy_steps and done_at is None:
            done_at = k
    assert done_at is not None and done_at <= rt.decimation // 2 + 3


@pytest.mark.slow
def test_reaches_the_goal_against_the_arm_in_its_own_process(reach_artifact):
    from robot_rl.hardware.sim_robot_process import SimRobotProcess

    with SimRobotProcess(SimRobotConfig(sensing_latency=0.002)) as robot:
        rt = DeployRuntime(load_policy(reach_artifact), robot,
                           DeployConfig(goal=GOAL, watchdog_periods=10))
        out = _run_until_reached(rt, robot)
        dist = np.linalg.norm(robot.ee_pos() - np.asarray(GOAL))
        assert robot.steps > 0  # the arm stepped in its own process
    assert dist < 0.03 and out["success"], out


def test_the_shield_term_is_charged_to_the_action_the_shield_reshaped(reach_artifact,
                                                                      scripted_robot,
                                                                      monkeypatch):
    """The reward read at a policy step is the last action's (as the env's step returns
    it), so the shield term it carries is the last action's flag, not the new one's."""
    from robot_rl.controllers import MOTION_LAYERS

    r = scripted_robot
    art = load_policy(reach_artifact)
    rt = DeployRuntime(art, r, DeployConfig(goal=GOAL, rate_hz=art.control_hz,
                                            sliced_policy=False))
    acted: list[bool] = []
    act = rt.pipeline.act

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        step = act(*args, **kwargs)
        acted.append(any(bool(step.flags[n][0]) for n in MOTION_LAYERS if n in step.flags))
        return step

    noted: list[bool] = []
    monkeypatch.setattr(rt.pipeline, "act", spy)
    monkeypatch.setattr(rt.observer, "note_shield", noted.append)
    steps: list = []
    rt.on_step = steps.append
    # a person's whole-step jump of every joint at the third step (the shield cuts it)
    rt.override = lambda obs, reading, arm: np.full(art.act_dim, 1.0 if len(steps) == 2
                                                    else 0.0)
    q = np.asarray(r.spec.home, dtype=float)
    for k in range(6):
        r.set(q, stamp=k * rt.period)
        rt.tick(r.observe(), now=k * rt.period)
    assert len(steps) == 6 and acted[2]
    assert noted == [False, *acted[:-1]]
