"""Training on Ray: env-runners, the learner's loop, and a run on a two-node cluster that
survives a killed env-runner and a killed learner."""

from __future__ import annotations

import dataclasses
import os
import signal
import threading
from pathlib import Path

import numpy as np
import pytest
import torch

from robot_rl.algos import SAC
from robot_rl.algos.configs import SACConfig, SafetyConfig
from robot_rl.checkpoint import CHECKPOINT, REPLAY, load_checkpoint
from robot_rl.cluster.collector import PoolCollector, make_learner
from robot_rl.cluster.env_runner import EnvRunner
from robot_rl.cluster.rollout import Rollout
from robot_rl.cluster.weights import acting_state, load_acting_state
from robot_rl.errors import ConfigError
from robot_rl.ray_options import RayOptions
from robot_rl.runner import make_agent
from robot_rl.sim import make_task_config
from robot_rl.train_config import TrainConfig
from tests.polling import wait_until


def _cfg(tmp_path: Path, **overrides: object) -> TrainConfig:
    small = dict(actor_hidden=(32, 32), critic_hidden=(32, 32), batch_size=32,
                 buffer_size=50_000, learning_starts=64, updates_per_step=2)
    fields: dict = dict(task="reach", num_envs=4, total_steps=512,
                        env=make_task_config("reach", episode_length=20),
                        eval_every=10**9, eval_episodes=2, log_every=64, runs_dir=tmp_path,
                        run_name="dist", progress=False, safety="both",
                        sac=SACConfig(**small), safety_critic=SafetyConfig(hidden=(32, 32)),
                        env_runners=2,
                        dist=RayOptions(collect_steps=4, runner_cpus=0.5, learner_cpus=0.5))
    fields.update(overrides)
    return TrainConfig(**fields)


# -- without Ray: the env-runner and the learner's loop ---------------------------------------

def test_env_runner_collects_with_the_learners_weights_and_runners_differ(tmp_path):
    cfg = _cfg(tmp_path)
    a, b = EnvRunner(cfg, index=0), EnvRunner(cfg, index=1)
    with pytest.raises(RuntimeError, match="no weights"):
        a.collect(2)
    ro = a.collect(5, uniform=True)
    E, D, A = cfg.num_envs, a.env.obs_dim, a.env.act_dim
    assert len(ro) == 5 * E and ro.obs.shape == (5 * E, D) and ro.action.shape == (5 * E, A)
    assert ro.next_obs.shape == ro.obs.shape and ro.terminated.shape == (5 * E,)
    assert ro.env_steps == ro.steps == 5 * E and ro.version == -1 and ro.runner == 0
    # episodes go on across calls: a transition's next_obs is the following one's obs
    # (no env of the 20-step episodes ended within 5 + 5 steps)
    ro2 = a.collect(5, uniform=True)
    assert torch.equal(torch.from_numpy(ro2.obs[:E]), torch.from_numpy(ro.next_obs[-E:]))
    # the runners' envs are seeded apart
    assert not torch.equal(torch.from_numpy(b.collect(1, uniform=True).obs),
                           torch.from_numpy(ro.obs[:E]))
    # with the learner's acting state, the runner decides as the learner does
    learner = make_agent(cfg, D, A)
    learner.observe(torch.randn(64, D) * 3 + 1)
    a.set_weights(acting_state(learner), version=7)
    obs = torch.from_numpy(ro2.next_obs[-E:])
    decisions = []
    for agent in (a.agent, learner):  # the gate's candidates drawn alike
        torch.manual_seed(3)
        decisions.append(agent.act(obs, deterministic=True).action)
    assert torch.allclose(*decisions)
    assert a.collect(3).version == 7


def test_acting_state_leaves_the_learners_own_tensors_and_refuses_another_agent(tmp_path):
    cfg = _cfg(tmp_path)
    agent = make_agent(cfg, 10, 3)
    state = acting_state(agent)
    assert not any(k.startswith(("critic_target.", "cost_critic.q_target.")) for k in state)
    assert any(k.startswith("cost_critic.q.") for k in state)  # the gate needs it
    other = SAC(11, 3, dataclasses.replace(cfg.sac, gamma=0.97),
                dataclasses.replace(cfg.safety_critic, mode="both"))
    with pytest.raises((ValueError, RuntimeError)):
        load_acting_state(other, state)


class _LocalPool:
    """Env-runners in this process, answering in turn: the learner's loop without Ray."""

    def __init__(self, cfg: TrainConfig, n: int):
        self.runners = [EnvRunner(cfg, index=i) for i in range(n)]
        self.size = n
        self.queue: list[tuple[int, int, bool]] = []
        self.published: list[int] = []
        self.uniform: list[bool] = []

    def publish(self, state: dict, version: int) -> None:
        for r in self.runners:
            r.set_weights(state, version)
        self.published.append(version)

    def submit(self, index: int, steps: int, uniform: bool) -> None:
        self.queue.append((index, steps, uniform))
        self.uniform.append(uniform)

    def next(self) -> Rollout:
        index, steps, uniform = self.queue.pop(0)
        return self.runners[index].collect(steps, uniform)

    def cancel(self) -> None:
        self.queue.clear()


@pytest.mark.slow
def test_learner_keeps_the_update_to_data_ratio_and_publishes_after_updates(tmp_path):
    cfg = _cfg(tmp_path, total_steps=256)
    learner = make_learner(cfg)
    pool = _LocalPool(cfg, 2)
    history = learner.train(PoolCollector(learner, pool))
    # 2 updates per vector step of 4 envs (UTD 0.5) for every rollout (4 steps x 4 envs)
    # from the one that brings the count to learning_starts = 64 on
    assert learner.env_steps == 256 and len(learner.buffer) == 256
    assert learner.agent.updates == (256 - 64 + 16) // 2
    assert pool.uniform[:2] == [True, True] and not pool.uniform[-1]
    assert pool.published == list(range(len(pool.published))) and len(pool.published) > 1
    assert history and (tmp_path / "dist" / CHECKPOINT).is_file()


def test_ray_options_are_checked(tmp_path):
    with pytest.raises(ConfigError, match="env-runners"):
        _cfg(tmp_path, ray="local", env_runners=0).validate()
    with pytest.raises(ConfigError):
        _cfg(tmp_path, ray="local", dist=RayOptions(collect_steps=0)).validate()
    with pytest.raises(ConfigError, match="cpu backend"):
        EnvRunner(_cfg(tmp_path, backend="warp"))


# -- on Ray: a two-node cluster on this machine -----------------------------------------------

def _wait(cond, what: str, timeout: float = 120.0) -> None:  # type: ignore[no-untyped-def]
    wait_until(cond, timeout, what)


@pytest.mark.slow
def test_training_on_two_nodes_survives_a_killed_runner_and_a_killed_learner(ray_cluster,
                                                                            tmp_path):
    import ray

    from robot_rl.cluster.driver import RayTraining

    cfg = _cfg(tmp_path, ray="auto", total_steps=10**9, time_budget=6.0,
               checkpoint_every=0.5)
    training = RayTraining(cfg).start()
    try:
        runner_where = ray.get([h.where.remote() for h in training.runners])
        assert len({node for node, _ in runner_where}) == 2  # spread over both nodes
        _, learner_pid = ray.get(training.learner.where.remote())
        ckpt = training.run_dir / CHECKPOINT
        killed: dict[str, float] = {}

        def faults() -> None:
            _wait(ckpt.is_file, "the first checkpoint")
            os.kill(runner_where[0][1], signal.SIGKILL)
            killed["runner"] = load_checkpoint(ckpt)["env_steps"]
            first = ckpt.stat().st_mtime_ns
            _wait(lambda: ckpt.stat().st_mtime_ns != first, "a checkpoint after the kill")
            os.kill(learner_pid, signal.SIGKILL)
            killed["learner"] = load_checkpoint(ckpt)["env_steps"]

        thread = threading.Thread(target=faults, daemon=True)
        thread.start()
        history = training.run()
        thread.join(timeout=5)
        assert set(killed) == {"runner", "learner"}
        # both came back as new processes, and the run went on past the kills
        _, new_learner_pid = ray.get(training.learner.where.remote())
        _, new_runner_pid = ray.get(training.runners[0].where.remote())
        assert new_learner_pid != learner_pid and new_runner_pid != runner_where[0][1]
        state = load_checkpoint(ckpt)  # the last checkpoint is whole
        assert state["env_steps"] > killed["learner"] >= killed["runner"] > 0
        assert history[-1]["env_steps"] == state["env_steps"]
        # the replay buffer is the one of the checkpoint: every counted transition in it
        replay = torch.load(training.run_dir / REPLAY, weights_only=False)
        assert int(replay["size"]) == state["env_steps"]
    finally:
        training.stop()


# -- fine-tuning on the robot -----------------------------------------------------------------

def _init_run(tmp_path: Path) -> Path:
    """A sim-trained reach run (untrained weights do: only their shapes matter here)."""
    from robot_rl.runner import Runner

    runner = Runner(_cfg(tmp_path, run_name="sim", num_envs=2))
    runner.save()
    return runner.run_dir


def _robot_cfg(tmp_path: Path, **overrides: object):
    from robot_rl.finetune.robot.configs import OnlineLoopConfig, RobotFinetuneConfig, RobotSetup
    from robot_rl.finetune.robot.learner import resolve_init
    from robot_rl.hardware.configs import DeployConfig

    fields: dict = dict(
        init=_init_run(tmp_path), runs_dir=tmp_path, run_name="robot", progress=False,
        total_steps=10**9, checkpoint_every=0.5, log_every=20,
        sac=SACConfig(batch_size=32, learning_starts=20, updates_per_step=1),
        robot=RobotSetup(dataset=Path("robot_data"), teleop="corrector",
                         deploy=DeployConfig(rate_hz=100.0, autostart=False),
                         loop=OnlineLoopConfig(episode_length=25, restart_after_hold=0.5)),
        dist=RayOptions(runner_cpus=0.5, learner_cpus=0.5, robot_resource="robot"))
    fields.update(overrides)
    return resolve_init(RobotFinetuneConfig(**fields))


def _write_episodes(root: Path, n: int, length: int, first: float = 0.0,
                    intervened: int = 0) -> None:
    """``n`` episodes of reach frames (random values) into the robot dataset at ``root``,
    the first ``intervened`` steps of each a person's."""
    from robot_rl.data.writer import DatasetWriter
    from robot_rl.recording.record import dataset_spec
    from robot_rl.sim import make_env

    env = make_env("reach", 1, dr="off")
    rng = np.random.default_rng(int(first))
    resume = (root / "meta" / "info.json").is_file()
    with DatasetWriter(root, dataset_spec(env), resume=resume) as w:
        for _ in range(n):
            w.begin_episode(source="policy+corrector")
            for k in range(length):
                w.add_frame(intervention=k < intervened, obs=rng.normal(size=env.obs_dim),
                            joint_pos=rng.normal(size=7), joint_vel=rng.normal(size=7),
                            action=rng.uniform(-1, 1, env.act_dim),
                            next_obs=rng.normal(size=env.obs_dim), reward=first, cost=0.0,
                            terminated=False, truncated=False, success=False)
            w.save_episode(success=False)


@pytest.mark.slow
def test_a_restarted_robot_learner_takes_what_its_checkpoint_missed_from_the_dataset(tmp_path):
    from robot_rl.finetune.robot.learner import RobotFinetuneRunner

    cfg = _robot_cfg(tmp_path)
    assert cfg.robot.dataset == tmp_path / "robot" / "robot_data"
    _write_episodes(cfg.robot.dataset, 3, 10, intervened=2)
    learner = RobotFinetuneRunner(dataclasses.replace(cfg, intervention_ratio=0.5,
                                                      prior_ratio=0.25))
    assert learner.robot_episodes == 3 and len(learner.buffer) == 30
    assert len(learner.interventions) == 6  # HIL-SERL: also in the demonstration buffer
    assert learner.prior is not None  # the init run's replay (empty: it never trained)
    assert learner.sample_batch().obs.shape[0] == cfg.sac.batch_size
    with pytest.raises(ConfigError, match="sum to at most 1"):
        dataclasses.replace(cfg, intervention_ratio=0.6, prior_ratio=0.6).validate()
    # the init run's weights are the learner's; its learning rates are this config's
    fixed = RobotFinetuneRunner(dataclasses.replace(
        cfg, run_name="fixed", sac=dataclasses.replace(cfg.sac, alpha_lr=0.0)))
    assert fixed.agent.alpha_opt.param_groups[0]["lr"] == 0.0
    assert load_checkpoint(cfg.init)["agent"]["alpha_opt"]["param_groups"][0]["lr"] > 0
    init = load_checkpoint(cfg.init)["agent"]["modules"]
    assert torch.equal(learner.agent.state_dict()["actor.mu.weight"], init["actor.mu.weight"])
    learner.save()
    _write_episodes(cfg.robot.dataset, 2, 7, first=1.0)  # the robot went on without it
    resumed = RobotFinetuneRunner(dataclasses.replace(cfg, resume=learner.run_dir))
    assert resumed.robot_episodes == 5 and len(resumed.buffer) == 30 + 14
    assert len(resumed.interventions) == 6  # rebuilt from the dataset
    assert resumed.env_steps == 44
    # the robot hands over episodes 3 and 4 again (its queue): skipped; episode 5 is new
    from robot_rl.cluster.rollout import Rollout

    def ro(index: int) -> Rollout:
        D, A = learner.env.obs_dim, learner.env.act_dim

        def z(*shape: int) -> np.ndarray:
            return np.zeros(shape, np.float32)

        return Rollout(z(4, D), z(4, A), z(4), z(4), z(4, D), z(4), env_steps=4, steps=4,
                       sums={}, rejected=0.0, episode_return=[0.0], episode_cost=[0.0],
                       episode_success=[0.0], runner=0, version=0, seconds=1.0,
                       episode_index=index)

    assert not resumed.accepts(ro(4)) and resumed.accepts(ro(5))
    # the anchor: a frozen copy of the init policy's actor, pulling the actor's mean to it
    anchored = RobotFinetuneRunner(dataclasses.replace(cfg, run_name="anchored", anchor=5.0,
                                                       actor_warmup=0))
    anchor = anchored.agent.anchor
    assert anchor is not None and not any(p.requires_grad for p in anchor.parameters())
    assert torch.equal(anchor.mu.weight, init["actor.mu.weight"])
    assert "losses/actor_aux" in anchored.learn() | anchored.learn()
    # AWAC: the actor regresses onto the batch's own actions, weighted by their advantage
    awac = RobotFinetuneRunner(dataclasses.replace(cfg, run_name="awac", awac=1.0,
                                                   actor_warmup=0))
    before = awac.agent.actor.mu.weight.detach().clone()
    metrics = awac.learn()
    assert metrics["charts/awac_weight"] > 0 and "charts/entropy" not in metrics
    assert not torch.equal(awac.agent.actor.mu.weight, before)


@pytest.mark.slow
def test_fine_tuning_on_the_simulated_arm_over_ray(ray_cluster, tmp_path):
    import ray

    from robot_rl.cluster.driver import RayTraining
    from robot_rl.data.reader import Dataset
    from robot_rl.finetune.robot.learner import RobotFinetuneRunner
    from robot_rl.finetune.robot.pool import ROBOT

    cfg = _robot_cfg(tmp_path, ray="auto", time_budget=6.0)
    training = RayTraining(cfg, RobotFinetuneRunner, ROBOT).start()
    try:
        robot_node, _ = ray.get(training.runners[0].where.remote())
        nodes = {n["NodeID"]: n for n in ray.nodes()}
        assert nodes[robot_node]["Resources"].get("robot") == 1.0  # on the robot's machine
        history = training.run()
        summary = ROBOT.summary(training.runners)
    finally:
        training.stop()
    assert history and summary["robot_episodes"] >= 2 and summary["swaps"] >= 1
    assert summary["ticks"] > 0 and summary["estops"] == 0
    state = load_checkpoint(training.run_dir / CHECKPOINT)
    ds = Dataset(cfg.robot.dataset)
    assert ds.validate() == [] and ds.num_episodes >= state["robot_episodes"] >= 2
    # every robot transition the learner counted is in its replay and in the dataset
    lengths = [int(r["length"]) for r in ds.episodes]
    replay = torch.load(training.run_dir / REPLAY, weights_only=False)
    assert int(replay["size"]) == state["env_steps"] == sum(lengths[:state["robot_episodes"]])
    assert all(r["robot_rl/source"] == "policy+corrector" for r in ds.episodes)


@pytest.mark.slow  # imports Ray
def test_a_learner_is_refused_a_config_or_a_fleet_it_cannot_train_on(tmp_path):
    from robot_rl.cluster.driver import RayTraining
    from robot_rl.finetune import FinetuneRunner
    from robot_rl.finetune.robot.pool import ROBOT
    from robot_rl.runner import Runner

    cfg = _cfg(tmp_path)
    with pytest.raises(TypeError, match="FinetuneRunner trains FinetuneConfig, not "
                                        "TrainConfig"):
        make_learner(cfg, runner=FinetuneRunner)
    # refused before Ray starts or a run directory is made
    with pytest.raises(TypeError, match="learns from the env"):
        RayTraining(dataclasses.replace(cfg, ray="local"), Runner, ROBOT)
    assert not (tmp_path / "dist").exists()


def test_transitions_of_another_width_are_refused_by_the_replay_buffer():
    from robot_rl.replay import ReplayBuffer

    buf = ReplayBuffer(8, obs_dim=3, act_dim=2)
    tr = {"obs": torch.zeros(4, 5), "action": torch.zeros(4, 2), "reward": torch.zeros(4),
          "cost": torch.zeros(4), "next_obs": torch.zeros(4, 5), "terminated": torch.zeros(4)}
    with pytest.raises(ConfigError, match="5 observation and 2 action values; the replay "
                                          "buffer takes 3 and 2"):
        buf.add_transitions(tr)
    assert buf.add_transitions({**tr, "obs": torch.zeros(4, 3),
                                "next_obs": torch.zeros(4, 3)}) == 4 and len(buf) == 4
