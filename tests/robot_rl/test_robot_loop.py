"""Fine-tuning on the robot: the live policy whose weights change while the runtime runs it,
and the episode cycle (move home, act, a person's interventions, commit, hand over) on the
simulated arm on its own thread."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from robot_rl.algos.configs import SACConfig, SafetyConfig
from robot_rl.cluster.weights import acting_state
from robot_rl.data.reader import Dataset
from robot_rl.data.writer import DatasetWriter
from robot_rl.export.artifact import task_meta
from robot_rl.finetune.robot.configs import OnlineLoopConfig
from robot_rl.finetune.robot.live_policy import LivePolicy
from robot_rl.finetune.robot.loop import OnlineRobotLoop, RobotEpisode
from robot_rl.hardware.configs import DeployConfig, SimRobotConfig
from robot_rl.hardware.runtime import DeployRuntime
from robot_rl.hardware.sim_robot import SimRobot
from robot_rl.hardware.teleop.base import ScriptedTeleop, TeleopCommand
from robot_rl.recording.robot_recorder import robot_dataset_spec
from robot_rl.robots import get_robot
from robot_rl.runner import make_agent
from robot_rl.sim import make_env, make_task_config
from robot_rl.train_config import TrainConfig


def _cfg(tmp_path: Path) -> TrainConfig:
    return TrainConfig(task="reach", env=make_task_config("reach"), runs_dir=tmp_path,
                       sac=SACConfig(actor_hidden=(32, 32), critic_hidden=(32, 32)),
                       safety_critic=SafetyConfig(hidden=(32, 32)), safety="both")


def _live(cfg: TrainConfig, seed: int = 0) -> tuple[LivePolicy, dict]:
    env = make_env(cfg.env, 1, dr="off")
    torch.manual_seed(seed)
    agent = make_agent(cfg, env.obs_dim, env.act_dim)
    state = acting_state(agent)
    return LivePolicy(cfg, task_meta(env), state, version=0), state


def _episodes(actor: Any, state: dict, n: int, seconds: float) -> list:
    """Start ``actor``'s loop with ``state`` and take up to ``n`` of its episodes (Rollouts)
    within ``seconds``."""
    episodes = []
    assert actor.next_episode(0, state, timeout=0.01) is None  # starts the loop
    deadline = time.monotonic() + seconds
    while len(episodes) < n and time.monotonic() < deadline:
        ro = actor.next_episode(0, None, timeout=1.0)
        if ro is not None:
            episodes.append(ro)
    return episodes


def test_a_swap_changes_the_policy_at_the_next_step_and_the_gate_follows_its_call(tmp_path):
    cfg = _cfg(tmp_path)
    live, _ = _live(cfg)
    live.stochastic = False
    obs = np.random.default_rng(0).normal(size=live.obs_dim).astype(np.float32)
    before = live(obs)
    env = make_env(cfg.env, 1, dr="off")
    torch.manual_seed(5)
    other = make_agent(cfg, env.obs_dim, env.act_dim)
    live.swap(acting_state(other), version=1)
    after = live(obs)
    assert live.version == 1 and live.swaps == 1 and not np.allclose(before, after)
    expected = other.act(torch.from_numpy(obs)[None], deterministic=True, gate=False)
    np.testing.assert_allclose(after, expected.action[0].numpy(), atol=1e-6)
    # the gate screens with the agent that made the call, even if a swap came in between
    acting = live._acting
    live.swap(acting_state(make_agent(cfg, env.obs_dim, env.act_dim)), version=2)
    assert live._acting is acting
    a, hold, rejected = live.gate(obs, after)
    assert a.shape == (live.act_dim,) and isinstance(hold, bool) and isinstance(rejected, bool)
    # as the artifact's gate: a safe action is the policy's own (the critics do not choose)
    live._acting.gate.threshold = float("inf")
    np.testing.assert_array_equal(live.gate(obs, after)[0], after)
    assert live.has_cost_critic  # safety both: the runtime gates


@pytest.mark.slow
def test_episodes_on_the_arm_go_home_record_interventions_and_reach_the_learner(tmp_path):
    cfg = _cfg(tmp_path)
    live, state = _live(cfg)
    episodes: list[RobotEpisode] = []
    loop: OnlineRobotLoop | None = None
    push = np.eye(6)[1] * 0.8

    def person(_k: int) -> TeleopCommand:  # pushes sideways for steps 5..14 of each episode
        assert loop is not None
        n = loop.writer.frames_in_episode
        moving = loop.phase == "episode" and 5 <= n < 15
        return TeleopCommand(push if moving else np.zeros(6), None, frozenset())

    stop = threading.Event()
    swapping = threading.Event()

    def learner() -> None:  # new weights every 20 ms while the arm runs
        v = 0
        while not stop.wait(0.02):
            v += 1
            live.swap(state, v)
        swapping.set()

    with SimRobot(SimRobotConfig()) as robot:
        rt = DeployRuntime(live, robot, DeployConfig(rate_hz=100.0, autostart=False))
        writer = DatasetWriter(tmp_path / "online", robot_dataset_spec(rt))
        loop = OnlineRobotLoop(rt, writer, ScriptedTeleop(person), episodes.append,
                               OnlineLoopConfig(episode_length=30, end_on_success=False),
                               version=lambda: live.version, log=lambda _m: None)

        def on_tick(r: DeployRuntime) -> None:
            assert loop is not None
            loop.tick(r)
            if len(episodes) >= 3:
                stop.set()

        thread = threading.Thread(target=learner, daemon=True)
        thread.start()
        rt.run(duration=60.0, stop=stop, on_tick=on_tick)
        stop.set()
        thread.join(timeout=5)
        loop.close()
        home_ee = loop.home.home_ee
    assert len(episodes) >= 3 and live.swaps > 0
    ds = Dataset(tmp_path / "online")
    assert ds.validate() == [] and ds.num_episodes == len(episodes)
    for ep in episodes[:3]:
        frames = ds.episode(ep.index)
        assert len(ep) == len(frames["action"]) == 30  # 30 steps, all committed
        np.testing.assert_allclose(frames["observation.state"], ep.obs, atol=1e-6)
        np.testing.assert_array_equal(frames["intervention"], ep.intervention)
        assert 9 <= ep.intervention.sum() <= 11 and not ep.intervention[:4].any()
        np.testing.assert_array_equal(ep.next_obs[:-1], ep.obs[1:])
        assert not ep.terminated.any()  # time-outs bootstrap
        assert ds.episodes[ep.index]["robot_rl/source"] == "policy+scripted"
        # each episode began after the move home: every joint back at home (the
        # simulator's start pose; the person's push moved the arm sideways in the last one),
        # so the hand too
        assert np.abs(ep.obs[0, :7]).max() < 0.05
        assert np.linalg.norm(ep.obs[0, 14:17] - home_ee) < 0.02
    assert all(0 <= ep.policy_version for ep in episodes)


@pytest.mark.parametrize("refusals", [3, None])
def test_a_start_refused_after_the_move_home_is_tried_again_then_held(tmp_path, refusals):
    """The runtime refuses to start (no fresh joint states: a reading late on a loaded host)
    right after the move home: the loop tries again at the next ticks and the episode runs
    (3 refusals); refused for longer than ``start_timeout`` (None: every time), it holds
    and says why."""
    cfg = _cfg(tmp_path)
    live, _ = _live(cfg)
    episodes: list[RobotEpisode] = []
    logs: list[str] = []
    phases: list[str] = []
    stop = threading.Event()
    with SimRobot(SimRobotConfig()) as robot:
        rt = DeployRuntime(live, robot, DeployConfig(rate_hz=100.0, autostart=False))
        writer = DatasetWriter(tmp_path / "online", robot_dataset_spec(rt))
        loop = OnlineRobotLoop(rt, writer, ScriptedTeleop(lambda _k: TeleopCommand()),
                               episodes.append,
                               OnlineLoopConfig(episode_length=5, end_on_success=False,
                                                start_timeout=0.3), log=logs.append)
        start = rt.start

        def refusing(now: float | None = None) -> tuple[bool, str]:
            phases.append(loop.phase)  # the first call starts the move home
            if len(phases) > 1 and (refusals is None or len(phases) <= 1 + refusals):
                return False, "no fresh joint states"
            return start(now)

        rt.start = refusing  # type: ignore[method-assign]

        def on_tick(r: DeployRuntime) -> None:
            loop.tick(r)
            if episodes or loop.phase == "held":
                stop.set()

        rt.run(duration=30.0, stop=stop, on_tick=on_tick)
        loop.close()
    if refusals is not None:
        assert len(episodes) == 1 and len(episodes[0]) == 5
        assert phases[1:5] == ["home", "start", "start", "start"]
        assert not any("cannot start" in m for m in logs)
    else:
        assert not episodes and loop.phase == "held"
        assert phases.count("start") >= 3  # tried at ticks for 0.3 s, not once
        assert any(m == "cannot start an episode: no fresh joint states" for m in logs)


@pytest.mark.slow
def test_a_fallen_simulated_arm_is_put_back_when_the_move_home_times_out(tmp_path):
    """reset_fallen_arm: after a move home that ended by its time-out (here every one: a
    time-out of 0 s), the simulated arm is put back at home, so the episode starts there."""
    from robot_rl.finetune.robot.actor import RobotActor
    from robot_rl.finetune.robot.configs import RobotSetup

    cfg = _cfg(tmp_path)
    _, state = _live(cfg)
    setup = RobotSetup(dataset=tmp_path / "data", reset_fallen_arm=True,
                       sim=SimRobotConfig(init_q=tuple(np.asarray(
                           get_robot("arm7").home) + 0.3)),
                       deploy=DeployConfig(rate_hz=100.0, autostart=False),
                       loop=OnlineLoopConfig(episode_length=10, end_on_success=False,
                                             home_timeout=0.0, restart_after_hold=0.5))
    actor = RobotActor(cfg, setup, log=lambda _m: None)
    try:
        episodes = _episodes(actor, state, 2, seconds=60.0)
        resets = actor.summary()["arm_resets"]
    finally:
        actor.close()
    assert len(episodes) == 2 and resets >= 2
    for ro in episodes:  # the arm started 0.3 rad off home: each episode began at home
        assert np.abs(ro.obs[0, :7]).max() < 0.05
    # the reset moves the arm only: the goals go on being drawn, not drawn again
    assert not np.allclose(episodes[0].obs[0, 17:20], episodes[1].obs[0, 17:20])


def test_an_episode_length_must_be_positive(tmp_path):
    cfg = _cfg(tmp_path)
    live, _ = _live(cfg)
    with SimRobot(SimRobotConfig()) as robot:
        rt = DeployRuntime(live, robot, DeployConfig(rate_hz=100.0, autostart=False))
        writer = DatasetWriter(tmp_path / "x", robot_dataset_spec(rt))
        with pytest.raises(Exception, match="episode_length"):
            OnlineRobotLoop(rt, writer, ScriptedTeleop([]), lambda _e: None,
                            OnlineLoopConfig(episode_length=-1))
        writer.close()


@pytest.mark.slow
def test_the_robot_actor_runs_its_episodes_on_a_ros_arm(tmp_path):
    """The robot actor's ROS path: policy_node's subscription and schedule with the live
    policy, against sim_robot_node in its own process over loopback DDS."""
    pytest.importorskip("rclpy")
    from robot_rl.finetune.robot.actor import RobotActor
    from robot_rl.finetune.robot.configs import RobotSetup
    from robot_rl.hardware.ros.launcher import stop_node
    from tests.hardware.test_ros_nodes import _domain_id
    from tests.hardware.test_teleop_node import Node

    domain = _domain_id()
    cfg = _cfg(tmp_path)
    _, state = _live(cfg)
    sim = Node("sim_robot_node", {}, domain)
    # a loaded 2-core host can starve /joint_states: a generous watchdog, and a restart
    # after a hold, so that the episodes go on unattended
    setup = RobotSetup(dataset=tmp_path / "ros_data", robot="ros", ros_domain_id=domain,
                       ros_overrides={"watchdog_periods": "20"},
                       loop=OnlineLoopConfig(episode_length=20, end_on_success=False,
                                             restart_after_hold=0.5))
    actor = RobotActor(cfg, setup, log=lambda _m: None)
    episodes = []
    try:
        episodes = _episodes(actor, state, 2, seconds=90.0)
        summary = actor.summary()
    finally:
        actor.close()
        stop_node(sim.p, timeout=15)
    assert len(episodes) == 2, "".join(sim.log)
    assert [len(ro) for ro in episodes] == [20, 20] and summary["ticks"] > 0
    ds = Dataset(tmp_path / "ros_data")
    assert ds.validate() == [] and ds.num_episodes == 2
    np.testing.assert_array_equal(ds.episode(1)["observation.state"], episodes[1].obs)
