"""Training on Ray: env-runners, the learner's loop, and a run on a two-node cluster that
survives a killed env-runner and a killed learner."""

from __future__ import annotations

import dataclasses
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from robot_rl.algos import SAC, SACConfig, SafetyConfig
from robot_rl.checkpoint import CHECKPOINT, REPLAY, load_checkpoint
from robot_rl.dist.env_runner import EnvRunner
from robot_rl.dist.learner import DistRunner
from robot_rl.dist.rollout import Rollout
from robot_rl.dist.weights import acting_state, load_acting_state
from robot_rl.errors import ConfigError
from robot_rl.ray_options import RayOptions
from robot_rl.runner import TrainConfig, make_agent
from robot_rl.sim import make_task_config


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
    other = SAC(11, 3, cfg.sac, dataclasses.replace(cfg.safety_critic, mode="both"))
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


def test_learner_keeps_the_update_to_data_ratio_and_publishes_after_updates(tmp_path):
    cfg = _cfg(tmp_path, total_steps=256)
    learner = DistRunner(cfg)
    pool = _LocalPool(cfg, 2)
    history = learner.train_distributed(pool)
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

@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[object]:
    """Two Ray nodes of one CPU each on this machine, this process connected to them."""
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1,
                                                            "include_dashboard": False})
    cluster.add_node(num_cpus=1)
    ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
    cluster.wait_for_nodes()
    yield cluster
    ray.shutdown()
    cluster.shutdown()


def _wait(cond, what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_training_on_two_nodes_survives_a_killed_runner_and_a_killed_learner(ray_cluster,
                                                                            tmp_path):
    import ray

    from robot_rl.dist.cluster import RayTraining

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
