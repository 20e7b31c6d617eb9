"""Isaac Gym interop, both ways, typed by ``isaacgym-stubs``; ``isaacgym`` itself is never
imported (it is not installable here, and this module works without it).

**VecTaskAdapter** exposes any ``robot_rl.sim.VecEnv`` (a ``BatchedEnv``, say) as the surface
of an IsaacGymEnvs ``VecTask``, which learners written for Isaac Gym drive: skrl's
``wrap_env(env, "isaacgym-preview4")``, rl_games through IsaacGymEnvs' ``RLGPUEnv``.

    env = VecTaskAdapter(make_env("reach", 64))
    obs_dict = env.reset()                        # {"obs": (E, O), "states": (E, S)}
    obs_dict, rew, reset, extras = env.step(actions)   # extras["time_outs"]: (E,) bool
                                                  # (new tensors each step, as IsaacGymEnvs)

Buffers (E = num_envs): ``obs_buf`` (E, num_obs), ``states_buf`` (E, num_states: the env's
``critic`` observation group, 0 wide without one), ``rew_buf`` (E,), ``reset_buf`` (E,) long
(the episode ended: terminated or timed out), ``timeout_buf`` (E,) long, ``progress_buf``
(E,) long (steps into the episode), ``extras`` {"time_outs", "cost", "success",
"final_obs"}. Spaces are ``Box`` (OpenAI gym's, as Isaac Gym declares them, when ``gym`` is
installed; else gymnasium's): observations unbounded (clipped to ``clip_obs``), actions in
[-1, 1]. The env resets finished episodes inside ``step``; the
observation returned is the new episode's (its last one is ``extras["final_obs"]``).

**IsaacGymVecEnv** goes the other way: an Isaac Gym task (an IsaacGymEnvs ``VecTask``; any
object with the ``VecTaskLike`` surface) as a ``VecEnv``, so ``Runner``, ``evaluate`` and
``dagger`` train and evaluate on it. An IsaacGymEnvs task resets finished envs at the start
of its next step, so the observation it returns with ``reset_buf`` set is the episode's last:
it is ``info["final_obs"]`` (time-outs bootstrap from it) and also the observation the next
action is chosen from, one step of lag that IsaacGymEnvs' own learners live with too. The
constraint cost is ``extras["cost"]`` when the task writes one (else 0), success
``extras["success"]``; ``hold`` sends a zero action (a VecTask has no hold of its own).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import gymnasium
import numpy as np
import torch

from robot_rl.errors import ConfigError
from robot_rl.sim.vec_env import (
    CRITIC,
    POLICY,
    EpisodeBooks,
    StepResult,
    VecEnv,
    check_vec_env,
)

if TYPE_CHECKING:
    from isaacgym import gymapi


class VecTaskAdapter:
    """A ``VecEnv`` as an IsaacGymEnvs ``VecTask`` (module docstring)."""

    def __init__(self, env: VecEnv, clip_obs: float = float("inf"), clip_actions: float = 1.0):
        check_vec_env(env)
        if clip_actions <= 0 or clip_obs <= 0:
            raise ConfigError("clip_obs and clip_actions must be > 0")
        self.env = env
        self.num_envs = env.num_envs
        self.num_obs = env.obs_dim
        self.num_states = int(env.obs_groups.get(CRITIC, 0))
        self.num_actions = env.act_dim
        self.num_agents = 1
        self.max_episode_length = env.max_episode_length
        self.clip_obs, self.clip_actions = float(clip_obs), float(clip_actions)
        dev = torch.device(env.device)
        self.device = self.rl_device = self.sim_device = str(dev)
        box = _box_class()
        self.observation_space = box(-np.inf, np.inf, (self.num_obs,), np.float32)
        self.state_space = box(-np.inf, np.inf, (self.num_states,), np.float32)
        self.action_space = box(-1.0, 1.0, (self.num_actions,), np.float32)
        E = self.num_envs
        self.obs_buf = torch.zeros(E, self.num_obs, device=dev)
        self.states_buf = torch.zeros(E, self.num_states, device=dev)
        self.rew_buf = torch.zeros(E, device=dev)
        self.cost_buf = torch.zeros(E, device=dev)
        self.reset_buf = torch.ones(E, dtype=torch.long, device=dev)
        self.timeout_buf = torch.zeros(E, dtype=torch.long, device=dev)
        self.progress_buf = torch.zeros(E, dtype=torch.long, device=dev)
        self.extras: dict[str, Any] = {}

    def get_number_of_agents(self) -> int:
        return self.num_agents

    def reset(self) -> dict[str, torch.Tensor]:
        """Reset every env; {"obs": (E, num_obs), "states": (E, num_states)}."""
        obs = self.env.reset()
        groups = self.env.group_obs() if self.num_states else {}
        self.progress_buf.zero_()
        self.reset_buf.zero_()
        self.timeout_buf.zero_()
        return self._obs_dict(obs, groups)

    def step(self, actions: torch.Tensor
             ) -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor, dict[str, Any]]:
        """One control step of every env: (obs_dict, rew_buf, reset_buf, extras)."""
        a = torch.as_tensor(actions, dtype=torch.float32, device=self.obs_buf.device)
        a = a.clamp(-self.clip_actions, self.clip_actions)
        obs, reward, cost, terminated, truncated, info = self.env.step(a)
        done = terminated | truncated
        self.rew_buf.copy_(reward)
        self.cost_buf.copy_(cost)
        self.reset_buf.copy_(done)
        self.timeout_buf.copy_(truncated & ~terminated)
        self.progress_buf += 1
        self.progress_buf.masked_fill_(done, 0)
        self.extras = {"time_outs": self.timeout_buf.bool(), "cost": self.cost_buf,
                       "success": info["success"], "final_obs": info["final_obs"]}
        return self._obs_dict(obs, info.get("obs_groups", {})), self.rew_buf.clone(), \
            self.reset_buf.clone(), self.extras

    def _obs_dict(self, obs: torch.Tensor, groups: dict[str, torch.Tensor]
                  ) -> dict[str, torch.Tensor]:
        """The buffers, updated, and fresh tensors of them to hand out: a learner keeps the
        last observation while it steps (IsaacGymEnvs also returns new clamped tensors)."""
        self.obs_buf.copy_(obs.clamp(-self.clip_obs, self.clip_obs))
        if self.num_states:
            self.states_buf.copy_(groups[CRITIC].clamp(-self.clip_obs, self.clip_obs))
        return {"obs": self.obs_buf.clone(), "states": self.states_buf.clone()}

    def close(self) -> None:
        """Nothing to free (the wrapped env owns its simulation)."""

    def __repr__(self) -> str:
        return f"VecTaskAdapter({self.env!r})"


def _box_class() -> Any:
    """Isaac Gym's VecTask declares its spaces with OpenAI gym's ``Box`` (which skrl's and
    rl_games' Isaac Gym wrappers convert); gymnasium's where gym is not installed."""
    try:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import gym
        return gym.spaces.Box
    except ImportError:
        return gymnasium.spaces.Box


class VecTaskLike(Protocol):
    """The surface of an IsaacGymEnvs ``VecTask`` that ``IsaacGymVecEnv`` uses."""

    num_envs: int
    num_obs: int
    num_states: int
    num_actions: int
    max_episode_length: int
    dt: float
    """Seconds of simulation per ``step`` (the control period)."""
    rl_device: str
    states_buf: torch.Tensor

    def reset(self) -> dict[str, torch.Tensor]: ...

    def step(self, actions: torch.Tensor
             ) -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor, dict[str, Any]]: ...


class IsaacGymTask(VecTaskLike, Protocol):
    """A real Isaac Gym ``VecTask``: the surface above plus its simulation handles."""

    gym: gymapi.Gym
    sim: gymapi.Sim
    viewer: gymapi.Viewer | None


class IsaacGymVecEnv:
    """An Isaac Gym task as a ``VecEnv`` (module docstring)."""

    def __init__(self, task: VecTaskLike):
        missing = [n for n in ("num_envs", "num_obs", "num_actions", "max_episode_length",
                               "reset", "step") if not hasattr(task, n)]
        if missing:
            raise ConfigError(f"{type(task).__name__} lacks {', '.join(missing)} of a VecTask")
        self.task = task
        self.num_envs = int(task.num_envs)
        self.obs_dim = int(task.num_obs)
        self.act_dim = int(task.num_actions)
        self.max_episode_length = int(task.max_episode_length)
        self.device = torch.device(getattr(task, "rl_device", "cpu"))
        self._states = int(getattr(task, "num_states", 0) or 0)
        self._dt = float(getattr(task, "dt", 0.0))
        self._books = EpisodeBooks(self.num_envs, self.device)

    @property
    def control_dt(self) -> float:
        if self._dt <= 0:
            raise ConfigError(f"{type(self.task).__name__} gives no dt (seconds per step)")
        return self._dt

    @property
    def obs_groups(self) -> dict[str, int]:
        groups = {POLICY: self.obs_dim}
        if self._states:
            groups[CRITIC] = self._states
        return groups

    def group_obs(self) -> dict[str, torch.Tensor]:
        return {CRITIC: self.task.states_buf} if self._states else {}

    def reset(self, seed: int | None = None) -> torch.Tensor:
        """Reset every env. A VecTask draws its resets from torch's global generator:
        ``seed`` reseeds that."""
        if seed is not None:
            torch.manual_seed(seed)
        self._books.reset()
        return self.task.reset()["obs"].to(self.device)

    def step(self, action: torch.Tensor, hold: torch.Tensor | None = None) -> StepResult:
        a = torch.as_tensor(action, dtype=torch.float32, device=self.device)
        if a.shape != (self.num_envs, self.act_dim):
            raise ConfigError(f"action must have shape ({self.num_envs}, {self.act_dim}), got "
                              f"{tuple(a.shape)}")
        if hold is not None:  # a VecTask has no hold: those envs get a zero action
            a = torch.where(hold.to(self.device, torch.bool)[:, None], 0.0, a)
        obs_dict, rew, reset, extras = self.task.step(a)
        obs = obs_dict["obs"].to(self.device)
        zeros = torch.zeros(self.num_envs, device=self.device)
        done = reset.to(self.device).bool()
        timeouts = torch.as_tensor(extras.get("time_outs", zeros), device=self.device).bool()
        truncated = done & timeouts
        terminated = done & ~timeouts
        reward = rew.to(self.device, torch.float32).reshape(-1)
        cost = torch.as_tensor(extras.get("cost", zeros), device=self.device,
                               dtype=torch.float32).reshape(-1)
        success = torch.as_tensor(extras.get("success", zeros), device=self.device).bool()
        info: dict[str, Any] = {"final_obs": obs, "success": success}
        if self._states:
            info["obs_groups"] = info["final_obs_groups"] = {CRITIC: obs_dict["states"]}
        if (episode := self._books.step(reward, cost, success, done)) is not None:
            info["episode"] = episode
        return obs, reward, cost, terminated, truncated, info

    def __repr__(self) -> str:
        return (f"IsaacGymVecEnv({type(self.task).__name__}, num_envs={self.num_envs}, "
                f"obs_dim={self.obs_dim}, act_dim={self.act_dim})")


def close_isaacgym_task(task: IsaacGymTask) -> None:
    """Free an Isaac Gym task's viewer and simulation through its own gym handle."""
    if task.viewer is not None:
        task.gym.destroy_viewer(task.viewer)
    task.gym.destroy_sim(task.sim)
