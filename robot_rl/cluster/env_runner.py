"""An env-runner: a CPU ``BatchedEnv`` and an acting copy of the policy, collecting rollouts.

    runner = EnvRunner(cfg, index=1, threads=1)      # cfg: the learner's TrainConfig
    runner.set_weights(acting_state(agent), version=3)
    rollout = runner.collect(steps=32)                # 32 vector steps of cfg.num_envs envs

Nothing here knows Ray (``ray_pool.py`` wraps it in an actor): on a cluster each runner is one
process on its own cores, with one MuJoCo thread pool of ``threads`` threads and torch pinned
to as many, so runners on one machine do not oversubscribe it. Episodes continue across
``collect`` calls; the env resets only when the runner starts. Runner ``i`` seeds its env with
``cfg.seed + 1000 * (i + 1)``, so runners never repeat each other's episodes.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import torch

from robot_rl.algos import SAC
from robot_rl.cluster.rollout import Rollout
from robot_rl.cluster.weights import load_acting_state
from robot_rl.errors import ConfigError
from robot_rl.runner import make_agent
from robot_rl.sim import make_env
from robot_rl.sim.vec_env import VecEnv, uniform_actions
from robot_rl.train_config import TrainConfig
from robot_rl.train_session import rejected_count, step_sums


def runner_seed(cfg: TrainConfig, index: int) -> int:
    """The env seed of env-runner ``index``."""
    return cfg.seed + 1000 * (index + 1)


class EnvRunner:
    """Collects transitions with the latest weights it was given (see module docstring)."""

    def __init__(self, cfg: TrainConfig, index: int = 0, threads: int = 1,
                 env: VecEnv | None = None):
        """``env``: step this env (of ``cfg.env``'s task and ``cfg.num_envs`` envs) instead
        of one made from the config (e.g. a batched copy of a held-out arm)."""
        if cfg.backend != "cpu":
            raise ConfigError("env-runners step the cpu backend (MuJoCo threads); a warp "
                              "learner on a GPU steps its own batch without runners")
        if threads < 1:
            raise ConfigError(f"threads must be >= 1, got {threads}")
        torch.set_num_threads(threads)
        self.index, self.threads = index, threads
        cfg = dataclasses.replace(cfg, device="cpu", resume=None)
        self.cfg = cfg
        seed = runner_seed(cfg, index)
        self.env = env if env is not None else make_env(
            cfg.env, cfg.num_envs, seed=seed, nthread=min(threads, cfg.num_envs))
        self.agent: SAC = make_agent(cfg, self.env.obs_dim, self.env.act_dim)
        self.agent.eval()
        self.version = -1
        self._gen = torch.Generator().manual_seed(seed)
        torch.manual_seed(seed)
        self._obs = self.env.reset(seed=seed)
        self._per_step = self.env.num_envs * int(getattr(self.env, "steps_per_step", 1))

    def set_weights(self, state: dict[str, torch.Tensor], version: int) -> None:
        """Act with ``state`` (``acting_state`` of the learner's agent) from now on."""
        load_acting_state(self.agent, state)
        self.version = version

    def collect(self, steps: int, uniform: bool = False) -> Rollout:
        """``steps`` vector steps with the current weights (``uniform``: uniform random
        actions, before learning starts)."""
        if not uniform and self.version < 0:
            raise RuntimeError(f"env-runner {self.index} has no weights to act with")
        t0 = time.perf_counter()
        env, parts = self.env, []
        sums: dict[str, torch.Tensor | float] = {}
        rejected: torch.Tensor | float = 0.0
        returns: list[float] = []
        costs: list[float] = []
        success: list[float] = []
        obs = self._obs
        for _ in range(steps):
            if uniform:
                action, hold, rej = uniform_actions(env, self._gen), None, None
            else:
                act = self.agent.act(obs)
                action, hold, rej = act.action, act.hold, act.rejected
            next_obs, reward, cost, terminated, _, info = env.step(action, hold)
            keep = slice(None) if hold is None else ~hold
            parts.append((obs[keep], action[keep], reward[keep], cost[keep],
                          info["final_obs"][keep], terminated[keep].float()))
            for k, v in step_sums(info).items():
                sums[k] = sums.get(k, 0.0) + v
            rejected = rejected + rejected_count(rej)
            if "episode" in info:
                ep, done = info["episode"], info["episode"]["done"]
                returns += ep["return"][done].tolist()
                costs += ep["cost"][done].tolist()
                success += ep["success"][done].float().tolist()
            obs = next_obs
        self._obs = obs
        obs_, act_, rew_, cost_, next_, term_ = (np.ascontiguousarray(torch.cat(c).numpy())
                                                 for c in zip(*parts, strict=True))
        return Rollout(obs_, act_, rew_, cost_, next_, term_, env_steps=steps * self._per_step,
                       steps=steps * env.num_envs, sums={k: float(v) for k, v in sums.items()},
                       rejected=float(rejected),
                       episode_return=returns, episode_cost=costs, episode_success=success,
                       runner=self.index, version=-1 if uniform else self.version,
                       seconds=time.perf_counter() - t0)
