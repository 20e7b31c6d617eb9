"""Isaac Gym interop: our env as a VecTask that skrl's Isaac Gym wrapper trains on, and a
VecTask (a MuJoCo-backed double with IsaacGymEnvs' reset timing) as a VecEnv our Runner
trains on. ``isaacgym`` itself is never imported."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from robot_rl.algos.configs import SACConfig, SafetyConfig
from robot_rl.interop import IsaacGymVecEnv, VecTaskAdapter
from robot_rl.runner import Runner
from robot_rl.sim import check_vec_env, make_env, make_task_config
from robot_rl.train_config import TrainConfig


def test_the_adapter_has_the_vectask_surface() -> None:
    env = make_env("push", 3, seed=0, episode_length=4)
    task = VecTaskAdapter(env)
    assert (task.num_envs, task.num_obs, task.num_actions) == (3, env.obs_dim, env.act_dim)
    assert task.num_states == env.obs_groups["critic"] > env.obs_dim  # the puck's velocity
    assert task.action_space.shape == (env.act_dim,) and float(task.action_space.high[0]) == 1.0
    obs = task.reset()
    assert obs["obs"].shape == (3, env.obs_dim) and obs["states"].shape == (3, task.num_states)
    for t in range(4):
        obs, rew, reset, extras = task.step(torch.ones(3, env.act_dim) * 5.0)  # clipped to 1
        assert rew.shape == (3,) and reset.dtype == torch.long
        assert extras["time_outs"].dtype == torch.bool
        if t < 3:
            assert not bool(reset.any()) and task.progress_buf.tolist() == [t + 1] * 3
    assert reset.tolist() == [1, 1, 1] and extras["time_outs"].all()
    assert task.progress_buf.tolist() == [0, 0, 0]  # the new episodes
    # the returned observation is the new episode's; the last one is final_obs
    assert not torch.equal(extras["final_obs"], obs["obs"])
    np.testing.assert_allclose(env.state.action[0].numpy(), 0.0)  # reset after the episode


@pytest.mark.slow
def test_skrl_sac_trains_on_reach_through_its_isaac_gym_wrapper() -> None:
    """skrl's own preview-4 wrapper, memory and SAC agent, a few hundred updates."""
    from skrl.agents.torch.sac import SAC, SAC_DEFAULT_CONFIG
    from skrl.envs.wrappers.torch import wrap_env
    from skrl.memories.torch import RandomMemory
    from skrl.models.torch import DeterministicMixin, GaussianMixin, Model
    from skrl.trainers.torch import SequentialTrainer

    class Actor(GaussianMixin, Model):
        def __init__(self, obs: Any, act: Any, device: Any) -> None:
            Model.__init__(self, obs, act, device)
            GaussianMixin.__init__(self, clip_actions=True, clip_log_std=True,
                                   min_log_std=-5.0, max_log_std=2.0)
            self.net = torch.nn.Sequential(torch.nn.Linear(self.num_observations, 64),
                                           torch.nn.ReLU(),
                                           torch.nn.Linear(64, self.num_actions))
            self.log_std = torch.nn.Parameter(torch.zeros(self.num_actions))

        def compute(self, inputs: dict, role: str) -> tuple:
            return torch.tanh(self.net(inputs["states"])), self.log_std, {}

    class Critic(DeterministicMixin, Model):
        def __init__(self, obs: Any, act: Any, device: Any) -> None:
            Model.__init__(self, obs, act, device)
            DeterministicMixin.__init__(self)
            self.net = torch.nn.Sequential(
                torch.nn.Linear(self.num_observations + self.num_actions, 64),
                torch.nn.ReLU(), torch.nn.Linear(64, 1))

        def compute(self, inputs: dict, role: str) -> tuple:
            return self.net(torch.cat([inputs["states"], inputs["taken_actions"]], 1)), {}

    logging.getLogger("skrl").setLevel(logging.WARNING)  # its handler outlives pytest's capture
    torch.manual_seed(0)
    env = wrap_env(VecTaskAdapter(make_env("reach", 8, seed=0, episode_length=40)),
                   wrapper="isaacgym-preview4", verbose=False)
    o, a, dev = env.observation_space, env.action_space, env.device
    models = {"policy": Actor(o, a, dev), "critic_1": Critic(o, a, dev),
              "critic_2": Critic(o, a, dev), "target_critic_1": Critic(o, a, dev),
              "target_critic_2": Critic(o, a, dev)}
    cfg = dict(SAC_DEFAULT_CONFIG)
    cfg.update(batch_size=64, learning_starts=40, random_timesteps=40,
               experiment={"write_interval": 0, "checkpoint_interval": 0})
    agent = SAC(models=models, memory=RandomMemory(2_000, num_envs=8, device=dev), cfg=cfg,
                observation_space=o, action_space=a, device=dev)
    before = [p.detach().clone() for p in models["policy"].parameters()]
    SequentialTrainer(cfg={"timesteps": 300, "headless": True, "disable_progressbar": True},
                      env=env, agents=agent).train()
    assert len(agent.memory) == 300 * 8  # every step of every env went into skrl's memory
    states = agent.memory.get_tensor_by_name("states")[:300]
    nexts = agent.memory.get_tensor_by_name("next_states")[:300]
    assert torch.equal(states[1:], nexts[:-1]) and not torch.equal(states, nexts)
    rewards = agent.memory.get_tensor_by_name("rewards")[:300]
    assert torch.isfinite(rewards).all() and rewards.std() > 0
    truncated = agent.memory.get_tensor_by_name("truncated")[:300]
    assert int(truncated.sum()) == 7 * 8  # episodes of 40 steps: 7 time-outs per env
    moved = [not torch.equal(x, y) for x, y in zip(before, models["policy"].parameters(),
                                                   strict=True)]
    assert any(moved), "260 updates left the actor unchanged"


class MujocoVecTask(VecTaskAdapter):
    """A double of an IsaacGymEnvs VecTask backed by MuJoCo: the adapter's surface, with
    IsaacGymEnvs' reset timing (the step an episode ends returns its last observation; the
    env starts afresh on the next step) and a control period ``dt``."""

    def __init__(self, task: str, num_envs: int, **overrides: Any):
        env = make_env(task, num_envs, seed=0, **overrides)
        super().__init__(env)
        self.dt = env.control_dt

    def step(self, actions: torch.Tensor) -> Any:
        obs_dict, rew, reset, extras = super().step(actions)
        done = reset.bool()
        obs_dict["obs"] = torch.where(done[:, None], extras["final_obs"], obs_dict["obs"])
        return obs_dict, rew, reset, extras


def test_an_isaac_gym_task_is_a_vec_env_with_its_reset_timing() -> None:
    task = MujocoVecTask("reach", 2, episode_length=3)
    env = IsaacGymVecEnv(task)
    check_vec_env(env)
    assert env.control_dt == pytest.approx(0.02)
    assert env.obs_groups == {"policy": env.obs_dim, "critic": env.obs_dim}  # noise-free copy
    env.reset(seed=0)
    for _ in range(3):
        obs, reward, cost, terminated, truncated, info = env.step(torch.zeros(2, env.act_dim))
    assert truncated.all() and not terminated.any()
    assert torch.equal(info["final_obs"], obs)  # the episode's last observation
    assert info["episode"]["length"].tolist() == [3, 3]
    env.step(torch.ones(2, env.act_dim), hold=torch.tensor([True, False]))
    assert torch.equal(task.env.state.action[0], torch.zeros(env.act_dim))  # zero action


def test_runner_trains_on_an_isaac_gym_task(tmp_path: Path) -> None:
    env = IsaacGymVecEnv(MujocoVecTask("reach", 4, episode_length=20))
    small = SACConfig(actor_hidden=(32, 32), critic_hidden=(32, 32), batch_size=32,
                      buffer_size=2_000, learning_starts=80)
    cfg = TrainConfig(task="reach", env=make_task_config("reach", episode_length=20),
                      num_envs=4, total_steps=240, eval_every=10**9, eval_episodes=2,
                      log_every=40, runs_dir=tmp_path, run_name="ig", progress=False,
                      sac=small, safety_critic=SafetyConfig(hidden=(32, 32)))
    runner = Runner(cfg, env=env)
    history = runner.train()
    assert runner.env_steps == 240 and len(runner.buffer) == 240
    assert history and 0.0 <= history[-1]["success_rate"] <= 1.0
    assert (tmp_path / "ig" / "checkpoints" / "latest.pt").is_file()


@pytest.mark.slow
def test_nothing_imports_isaacgym() -> None:
    code = ("import sys; import robot_rl.interop; "
            "assert 'isaacgym' not in sys.modules, 'isaacgym was imported'")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
