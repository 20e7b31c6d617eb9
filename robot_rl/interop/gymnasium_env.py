"""Any gymnasium env as a ``robot_rl.sim.VecEnv``: our learners (SAC with its safety critic,
evaluation, DAgger) on someone else's env.

    env = GymVecEnv("Pusher-v5", num_envs=8)              # by id: gymnasium.make_vec
    env = GymVecEnv(lambda: MyEnv(), num_envs=8)          # a factory of single envs
    env = GymVecEnv(my_vector_env)                        # a VectorEnv (SAME_STEP autoreset)
    runner = Runner(cfg, env=env, eval_env=GymVecEnv("Pusher-v5", 8))

What the adapter reads and turns into the ``VecEnv`` contract (E = ``num_envs``):

- **Actions**: the policy's (E, A) in [-1, 1] are mapped linearly onto the env's ``Box``
  bounds (which must be finite); ``hold`` gives those envs the action 0 of [-1, 1], the
  middle of the bounds (zero torque for MuJoCo's torque-driven envs).
- **Observations**: a ``Box`` of any shape, flattened to (E, O) float32. Dict and discrete
  spaces are refused (``gymnasium.wrappers.FlattenObservation`` flattens a Dict).
- **Resets**: the vector env resets a finished env in the same step
  (``AutoresetMode.SAME_STEP``); its last observation is ``info["final_obs"]``, so a
  truncated episode bootstraps from its true final state. A vector env of another autoreset
  mode is refused with how to make one.
- **Cost**: ``info["cost"]`` (Safety-Gymnasium's convention), else 0.
- **Success**: ``info["success"]`` (Meta-World) or ``info["is_success"]`` (gymnasium-
  robotics, SB3), else False; an episode succeeded if any of its steps did.
- **Episodes**: ``info["episode"]`` (return, cost, length, success) when envs finish, as
  ``BatchedEnv`` gives it; ``max_episode_length`` from the env's ``TimeLimit``
  (``spec.max_episode_steps``) or the argument; ``control_dt`` from the env's ``dt``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium
import numpy as np
import torch
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, SyncVectorEnv, VectorEnv

from robot_rl.errors import ConfigError
from robot_rl.sim.vec_env import POLICY, EpisodeBooks, StepResult

EnvSource = str | Callable[[], gymnasium.Env] | VectorEnv
"""A registered id, a factory of single envs, or a vector env."""


def make_vector_env(source: EnvSource, num_envs: int, **kwargs: Any) -> VectorEnv:
    """A synchronous vector env of ``num_envs`` that resets finished envs in the same step
    (``kwargs`` go to ``gymnasium.make`` for an id)."""
    if isinstance(source, VectorEnv):
        mode = source.metadata.get("autoreset_mode")
        if mode != AutoresetMode.SAME_STEP:
            raise ConfigError(f"{type(source).__name__} resets finished envs in mode {mode}; "
                              f"give one made with autoreset_mode=AutoresetMode.SAME_STEP "
                              f"(gymnasium.make_vec(id, n, vector_kwargs={{'autoreset_mode': "
                              f"AutoresetMode.SAME_STEP}})), an id or a factory")
        return source
    if num_envs < 1:
        raise ConfigError(f"num_envs must be >= 1, got {num_envs}")
    if isinstance(source, str):
        env_id = source

        def factory() -> gymnasium.Env:
            return gymnasium.make(env_id, **kwargs)
    elif callable(source):
        factory = source
    else:
        raise ConfigError(f"a gymnasium env is given by id, factory or vector env, not "
                          f"{type(source).__name__}")
    return SyncVectorEnv([factory] * num_envs, autoreset_mode=AutoresetMode.SAME_STEP)


class GymVecEnv:
    """A gymnasium vector env as a ``VecEnv`` (module docstring)."""

    def __init__(self, source: EnvSource, num_envs: int = 1, device: str | torch.device = "cpu",
                 max_episode_length: int | None = None, **kwargs: Any):
        self.venv = make_vector_env(source, num_envs, **kwargs)
        self.name = source if isinstance(source, str) else self._name()
        """The env's id (or its class's name), for messages."""
        obs_space, act_space = self.venv.single_observation_space, \
            self.venv.single_action_space
        name = self.name
        if not isinstance(obs_space, spaces.Box):
            raise ConfigError(f"{name} observes a {type(obs_space).__name__} space; our "
                              f"learners take a Box (gymnasium.wrappers.FlattenObservation "
                              f"flattens a Dict)")
        if not isinstance(act_space, spaces.Box):
            raise ConfigError(f"{name} acts in a {type(act_space).__name__} space; SAC acts "
                              f"in a continuous Box")
        low, high = act_space.low.astype(np.float64), act_space.high.astype(np.float64)
        if not (np.isfinite(low).all() and np.isfinite(high).all()):
            raise ConfigError(f"{name}'s action bounds are not finite ({low} .. {high}): "
                              f"actions in [-1, 1] cannot be mapped onto them")
        self.num_envs = self.venv.num_envs
        self.obs_dim = int(np.prod(obs_space.shape))
        self.act_dim = int(np.prod(act_space.shape))
        self.device = torch.device(device)
        self._act_shape = act_space.shape
        self._low = torch.as_tensor(low.reshape(-1), dtype=torch.float32)
        self._half = torch.as_tensor((high - low).reshape(-1) / 2.0, dtype=torch.float32)
        limit = max_episode_length or self._spec_limit()
        if limit is None:
            raise ConfigError(f"{name} has no TimeLimit (spec.max_episode_steps): give "
                              f"max_episode_length")
        self.max_episode_length = int(limit)
        self._books = EpisodeBooks(self.num_envs, self.device)

    def _name(self) -> str:
        spec = self.venv.metadata.get("spec") or getattr(self.venv, "spec", None)
        return getattr(spec, "id", None) or type(self.venv).__name__

    def _spec_limit(self) -> int | None:
        """The first env's ``TimeLimit`` (a wrapper, or its registration's
        ``max_episode_steps``); None without one."""
        envs = getattr(self.venv, "envs", None)
        env: Any = envs[0] if envs else None
        while env is not None:
            if isinstance(env, gymnasium.wrappers.TimeLimit):
                return int(env._max_episode_steps)
            env = env.env if isinstance(env, gymnasium.Wrapper) else None
        spec = envs[0].spec if envs else getattr(self.venv, "spec", None)
        return getattr(spec, "max_episode_steps", None)

    @property
    def control_dt(self) -> float:
        """The env's ``dt`` (MuJoCo envs: frame_skip x the model's timestep)."""
        envs = getattr(self.venv, "envs", None)
        dt = getattr(envs[0].unwrapped, "dt", None) if envs else None
        if dt is None:
            raise ConfigError(f"{self.name} gives no dt (seconds per step)")
        return float(dt)

    @property
    def obs_groups(self) -> dict[str, int]:
        return {POLICY: self.obs_dim}

    def group_obs(self) -> dict[str, torch.Tensor]:
        return {}

    def _obs(self, obs: Any) -> torch.Tensor:
        return torch.as_tensor(np.asarray(obs, dtype=np.float32).reshape(self.num_envs, -1),
                               device=self.device)

    def reset(self, seed: int | None = None) -> torch.Tensor:
        """Reset every env (env i seeded ``seed + i``)."""
        self._books.reset()
        obs, _ = self.venv.reset(seed=seed)
        return self._obs(obs)

    def step(self, action: torch.Tensor, hold: torch.Tensor | None = None) -> StepResult:
        a = torch.as_tensor(action, dtype=torch.float32).detach().cpu()
        if a.shape != (self.num_envs, self.act_dim):
            raise ConfigError(f"action must have shape ({self.num_envs}, {self.act_dim}), got "
                              f"{tuple(a.shape)}")
        a = a.clamp(-1.0, 1.0)
        if hold is not None:
            a = torch.where(hold.cpu().bool()[:, None], 0.0, a)
        env_action = (self._low + (a + 1.0) * self._half).numpy()
        obs, reward, terminated, truncated, infos = self.venv.step(
            env_action.reshape((self.num_envs, *self._act_shape)))
        done = np.logical_or(terminated, truncated)
        cost = _per_env(infos, "cost", done, self.num_envs, 0.0).astype(np.float32)
        success = np.zeros(self.num_envs, dtype=bool)
        for key in ("success", "is_success"):
            success |= _per_env(infos, key, done, self.num_envs, False).astype(bool)
        dev = self.device
        next_obs = self._obs(obs)
        final = next_obs.clone()
        for i in np.flatnonzero(done):
            final[i] = torch.as_tensor(np.asarray(infos["final_obs"][i], np.float32)
                                       .reshape(-1), device=dev)
        r = torch.as_tensor(np.asarray(reward, np.float32), device=dev)
        c = torch.as_tensor(cost, device=dev)
        s = torch.as_tensor(success, device=dev)
        info: dict[str, Any] = {"final_obs": final, "success": s}
        if (episode := self._books.step(r, c, s, torch.as_tensor(done, device=dev))) \
                is not None:
            info["episode"] = episode
        return (next_obs, r, c, torch.as_tensor(terminated, device=dev),
                torch.as_tensor(truncated, device=dev), info)

    def close(self) -> None:
        self.venv.close()

    def __repr__(self) -> str:
        return f"GymVecEnv({self.name}, num_envs={self.num_envs})"


def _per_env(infos: dict[str, Any], key: str, done: np.ndarray, n: int,
             default: float | bool) -> np.ndarray:
    """The step's ``key`` for each env: a finished env's from ``final_info`` (its reset's
    info replaced the step's at the top level), the others' from ``infos``; ``default``
    where an env did not report it."""
    out = np.full(n, default, dtype=np.float64 if isinstance(default, float) else bool)
    if key in infos:
        have = infos.get(f"_{key}", np.ones(n, dtype=bool)) & ~done
        out[have] = np.asarray(infos[key])[have]
    final = infos.get("final_info")
    if final is not None and key in final:
        have = final.get(f"_{key}", np.ones(n, dtype=bool)) & done
        out[have] = np.asarray(final[key])[have]
    return out
