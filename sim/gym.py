"""gymnasium adapters: a single-env ``gymnasium.Env`` and a ``gymnasium.vector.VectorEnv``.

    import gymnasium, robot_rl
    env = gymnasium.make("robot_rl/Push-v0")                 # SB3, any single-env code
    venv = RobotRLVectorEnv("push", num_envs=64)             # CleanRL-style vector code

Both speak numpy float32. The vector adapter auto-resets in the same step (gymnasium's
``AutoresetMode.SAME_STEP``): a finished env's last observation is in ``infos["final_obs"]``
(an object array with entries where ``infos["_final_obs"]`` is set). Infos also carry the
safety ``cost``, ``success`` and the per-term breakdowns.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
import torch
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from robot_rl.sim import make_env
from robot_rl.sim.configs import DRPreset
from robot_rl.sim.render import EnvRenderer


def _spaces(obs_dim: int, act_dim: int) -> tuple[spaces.Box, spaces.Box]:
    obs = spaces.Box(-np.inf, np.inf, (obs_dim,), np.float32)
    act = spaces.Box(-1.0, 1.0, (act_dim,), np.float32)
    return obs, act


def _scalars(info: dict, i: int) -> dict[str, Any]:
    """Per-env info of env ``i`` as Python scalars."""
    return {
        "success": bool(info["success"][i]),
        "diverged": bool(info["diverged"][i]),
        "invalid_action": bool(info["invalid_action"][i]),
        "reward_terms": {k: float(v[i]) for k, v in info["reward_terms"].items()},
        "cost_terms": {k: float(v[i]) for k, v in info["cost_terms"].items()},
    }


class RobotRLEnv(gymnasium.Env):
    """One simulation of a robot_rl task as a gymnasium environment."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 50}

    def __init__(self, task: str = "reach", render_mode: str | None = None,
                 dr: DRPreset | None = None, camera: str = "corner", **overrides: Any):
        self.env = make_env(task, 1, dr=dr, nthread=1, **overrides)
        self.observation_space, self.action_space = _spaces(self.env.obs_dim, self.env.act_dim)
        self.metadata = {**self.metadata, "render_fps": round(1.0 / self.env.control_dt)}
        self.render_mode = render_mode
        self._camera = camera
        self._renderer: EnvRenderer | None = None

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        obs = self.env.reset(seed=seed)
        return obs[0].numpy(), {}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        a = torch.as_tensor(np.asarray(action, dtype=np.float32).reshape(1, -1))
        obs, reward, cost, terminated, truncated, info = self.env.step(a)
        done = bool(terminated[0] | truncated[0])
        # The batched env has already reset a finished env; gymnasium callers expect the
        # final observation now and call reset() themselves.
        out = info["final_obs"][0] if done else obs[0]
        extra = {"cost": float(cost[0]), **_scalars(info, 0)}
        return out.numpy(), float(reward[0]), bool(terminated[0]), bool(truncated[0]), extra

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array":
            return None
        if self._renderer is None:
            self._renderer = EnvRenderer(self.env, [0], camera=self._camera)
        return self._renderer.render()

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None


class RobotRLVectorEnv(VectorEnv):
    """A batched robot_rl env as a gymnasium VectorEnv (same-step auto-reset, numpy I/O)."""

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(self, task: str, num_envs: int, dr: DRPreset | None = None,
                 nthread: int | None = None, **overrides: Any):
        self.env = make_env(task, num_envs, dr=dr, nthread=nthread, **overrides)
        self.num_envs = num_envs
        self.single_observation_space, self.single_action_space = _spaces(
            self.env.obs_dim, self.env.act_dim)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)

    def reset(self, *, seed: int | list[int] | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        if isinstance(seed, list | tuple):
            seed = seed[0] if seed else None
        if seed is not None:
            self._np_random, self._np_random_seed = gymnasium.utils.seeding.np_random(seed)
        return self.env.reset(seed=seed).numpy(), {}

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                 np.ndarray, dict[str, Any]]:
        a = torch.as_tensor(np.asarray(actions, dtype=np.float32))
        obs, reward, cost, terminated, truncated, info = self.env.step(a)
        done = (terminated | truncated).numpy()
        infos: dict[str, Any] = {
            "cost": cost.numpy(),
            "success": info["success"].numpy(),
            "reward_terms": {k: v.numpy() for k, v in info["reward_terms"].items()},
            "cost_terms": {k: v.float().numpy() for k, v in info["cost_terms"].items()},
        }
        if done.any():
            final = np.full(self.num_envs, None, dtype=object)
            final_obs = info["final_obs"].numpy()
            for i in np.flatnonzero(done):  # only the finished envs, for gymnasium's layout
                final[i] = final_obs[i]
            infos["final_obs"], infos["_final_obs"] = final, done
        return obs.numpy(), reward.numpy(), terminated.numpy(), truncated.numpy(), infos
