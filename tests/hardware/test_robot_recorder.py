"""Recording on a robot (the simulated arm on its own thread, as hardware would be): the deploy
runtime acts, a scripted device drives it, episodes go into the dataset of robot-rl record."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from robot_rl.data.reader import Dataset
from robot_rl.data.writer import DatasetWriter
from robot_rl.export import load_policy
from robot_rl.finetune.demos import demo_and_online, demo_buffer
from robot_rl.hardware.configs import DeployConfig, SimRobotConfig
from robot_rl.hardware.runtime import DeployRuntime
from robot_rl.hardware.sim_robot import SimRobot
from robot_rl.hardware.teleop.base import ScriptedTeleop, TeleopCommand
from robot_rl.recording.pacing import Pacing
from robot_rl.recording.robot_recorder import NoPolicy, RobotRecorder, robot_dataset_spec
from robot_rl.sim import make_env

RATE = 100.0  # ticks/s; the reach policy steps at 50 Hz


def _device(script: Callable[[int], tuple[np.ndarray, frozenset[str]]]) -> ScriptedTeleop:
    def fn(k: int) -> TeleopCommand:
        twist, events = script(k)
        return TeleopCommand(twist, None, events)
    return ScriptedTeleop(fn)


def _record(runtime: DeployRuntime, recorder: RobotRecorder, timeout: float) -> None:
    stop = threading.Event()

    def on_tick(rt: DeployRuntime) -> None:
        recorder.tick(rt)
        if recorder.done:
            stop.set()

    runtime.run(duration=timeout, stop=stop, on_tick=on_tick)
    recorder.close()


def _ee(frames: dict, key: str = "observation.state") -> np.ndarray:
    return frames[key][:, 14:17]  # reach's layout: joint_pos 7, joint_vel 7, ee_pos 3


class Operator:
    """A scripted person: each episode, start it, hold the device on one axis for ``steps``
    recorded steps (so the script does not depend on the loaded host's tick rate), label it,
    save it. Reads the recorder to know where the episode is."""

    def __init__(self, twists: list[np.ndarray], steps: int, labels: list[str | None]):
        self.twists, self.steps, self.labels = twists, steps, labels
        self.recorder: RobotRecorder | None = None
        self.episode = 0

    def __call__(self, _k: int) -> tuple[np.ndarray, frozenset[str]]:
        rec = self.recorder
        assert rec is not None
        if self.episode >= len(self.twists):
            return np.zeros(6), frozenset()
        if not rec.recording:
            return np.zeros(6), frozenset({"next"})  # start the episode
        if rec.writer.frames_in_episode < self.steps:
            return self.twists[self.episode], frozenset()
        label = self.labels[self.episode]
        self.episode += 1
        return np.zeros(6), frozenset({"next"} | ({label} if label else set()))


@pytest.mark.slow
def test_teleop_episodes_on_the_robot_are_recorded_like_sim(tmp_path: Path):
    x, z = np.eye(6)[0] * 0.8, np.eye(6)[2] * 0.8
    person = Operator([x, z], steps=40, labels=[None, "failure"])
    with SimRobot(SimRobotConfig()) as robot:
        rt = DeployRuntime(NoPolicy("reach"), robot, DeployConfig(rate_hz=RATE,
                                                                  autostart=False))
        writer = DatasetWriter(tmp_path / "ds", robot_dataset_spec(rt))
        rec = RobotRecorder(rt, writer, _device(person), episodes=2, log=lambda _m: None,
                            pacing=Pacing(success_ends="confirm"))
        person.recorder = rec
        _record(rt, rec, timeout=15.0)
    assert rec.done and rec.saved == 2

    ds = Dataset(tmp_path / "ds")
    assert ds.validate() == []
    ds.check(robot_dataset_spec(rt))  # the sim env's spec: same names, actions and rate
    assert ds.num_episodes == 2
    assert [r["robot_rl/source"] for r in ds.episodes] == ["scripted", "scripted"]
    assert [r["robot_rl/seed"] for r in ds.episodes] == [-1, -1]  # nothing to replay in sim
    assert ds.episodes[1]["robot_rl/success"] is False  # labelled with "n"
    for index, axis in ((0, 0), (1, 2)):
        ep = ds.episode(index)
        n = len(ep["action"])
        assert 40 <= n <= 42  # the step that saw the "next" may be in too
        # each frame's next observation is the next frame's observation
        np.testing.assert_array_equal(ep["next.observation.state"][:-1],
                                      ep["observation.state"][1:])
        moved = _ee(ep, "next.observation.state")[-1] - _ee(ep)[0]
        assert moved[axis] > 0.05, moved  # the device's axis, in the base frame
        assert np.abs(np.delete(moved, axis)).max() < 0.3 * moved[axis]
        assert not ep["intervention"].any()  # no policy: demonstrations, not interventions
        assert np.isfinite(ep["next.reward"]).all() and (ep["next.cost"] >= 0).all()

    # the task's reward of a recorded state is the env's reward there
    env = make_env("reach", 1, dr="off")
    assert ds.spec.action_space == robot_dataset_spec(rt).action_space
    assert demo_buffer(ds, env).obs.shape[1] == env.obs_dim


@pytest.mark.slow
def test_a_person_takes_over_from_the_policy_and_the_steps_are_interventions(
        tmp_path: Path, reach_artifact: Path):
    y = np.eye(6)[1] * 0.8
    rec: RobotRecorder | None = None

    def script(_k: int) -> tuple[np.ndarray, frozenset[str]]:
        assert rec is not None
        n = rec.writer.frames_in_episode
        if not rec.recording:
            return np.zeros(6), frozenset({"next"})
        if 20 <= n < 40:  # the person pushes sideways for 20 steps of the policy's 60
            return y, frozenset()
        return np.zeros(6), frozenset({"next"} if n >= 60 else ())

    with SimRobot(SimRobotConfig()) as robot:
        rt = DeployRuntime(load_policy(reach_artifact), robot,
                           DeployConfig(rate_hz=RATE, autostart=False, goal=(0.5, -0.15, 0.3)))
        writer = DatasetWriter(tmp_path / "hil", robot_dataset_spec(rt))
        rec = RobotRecorder(rt, writer, _device(script), episodes=1, with_policy=True,
                            log=lambda _m: None, pacing=Pacing(success_ends="confirm"))
        _record(rt, rec, timeout=15.0)
    ds = Dataset(tmp_path / "hil")
    ep = ds.episode(0)
    flags = ep["intervention"]
    assert ds.episodes[0]["robot_rl/source"] == "policy+scripted"
    assert 19 <= flags.sum() <= 21 and not flags[:19].any()  # the device's reads lead by a step
    assert (~flags).sum() >= 39
    assert int(ds.episodes[0]["robot_rl/interventions"]) == flags.sum()
    # fine-tuning (HIL-SERL): every step is online experience, the interventions also demos
    env = make_env("reach", 1, dr="off")
    demos, online = demo_and_online(ds, env)
    assert len(demos) == flags.sum() and online["obs"].shape[0] == len(flags)
    np.testing.assert_array_equal(demos.action[:len(demos)].numpy(), ep["action"][flags])


def test_an_estop_drops_the_open_episode_and_stays_latched(tmp_path: Path, scripted_robot):
    rt = DeployRuntime(NoPolicy("reach"), scripted_robot,
                       DeployConfig(rate_hz=RATE, autostart=False, sliced_policy=False))
    writer = DatasetWriter(tmp_path / "ds", robot_dataset_spec(rt))
    x = np.eye(6)[0] * 0.5
    rec = RobotRecorder(rt, writer, _device(lambda k: (x, frozenset({"next"}) if k == 1
                                                       else frozenset())),
                        episodes=3, log=lambda _m: None)
    home = np.asarray(rt.observer.env.robot.home, dtype=float)
    goals = [rt.goal]
    t0 = time.monotonic()  # start() checks freshness on the monotonic clock
    for k in range(12):
        t = t0 + k / RATE
        scripted_robot.set(home, stamp=t)
        rec.tick()
        rt.tick(scripted_robot.observe(), now=t)
    assert rec.recording and writer.frames_in_episode >= 4
    rt.estop("test")
    rec.tick()
    assert not rec.recording and rec.dropped == 1 and writer.num_episodes == 0
    assert rt.mode == "estop"  # the recorder does not release it
    goals.append(rt.goal)
    assert not np.allclose(goals[0], goals[1])  # the next episode gets a new goal
    rec.close()


def test_a_persons_episode_on_the_robot_ends_at_its_time_limit(tmp_path: Path):
    """Pacing on the robot: with --episode-time 0.3 s (15 policy steps of reach) an episode
    that runs out without success is dropped; one the person labels n is kept."""
    rec: RobotRecorder | None = None

    def script(_k: int) -> tuple[np.ndarray, frozenset[str]]:
        assert rec is not None
        if rec.dropped + rec.saved >= 2:
            return np.zeros(6), frozenset({"quit"})
        if not rec.recording:
            return np.zeros(6), frozenset({"next"})
        return np.zeros(6), frozenset({"failure"}) if rec.dropped == 1 else frozenset()

    with SimRobot(SimRobotConfig()) as robot:
        rt = DeployRuntime(NoPolicy("reach"), robot, DeployConfig(rate_hz=RATE,
                                                                  autostart=False))
        writer = DatasetWriter(tmp_path / "paced", robot_dataset_spec(rt))
        rec = RobotRecorder(rt, writer, _device(script), episodes=5, log=lambda _m: None,
                            pacing=Pacing(episode_time=0.3))
        assert rec.episode_length == 15
        _record(rt, rec, timeout=15.0)
    assert rec.done and rec.dropped == 1 and rec.saved == 1
    ds = Dataset(tmp_path / "paced")
    assert ds.num_episodes == 1 and ds.episodes[0]["robot_rl/success"] is False
    assert 14 <= ds.episodes[0]["length"] <= 15
