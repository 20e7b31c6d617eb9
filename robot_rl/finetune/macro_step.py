"""One step of a wrapper env made of several control steps of the env it wraps: a DSRL
chunk (``NoiseActionEnv``), a residual held for several steps (``ResidualEnv(every=K)``).

    acc = MacroStep(env.num_envs, env.device)
    for k in range(K):
        obs, r, c, term, trunc, info = env.step(action_k, hold=acc.held(hold))
        done = acc.add(r, c, term, trunc, info)       # (E,) the episodes that ended now
    obs, reward, cost, terminated, truncated, info = acc.result(obs, info)

The macro step returns the sums of its steps' rewards and costs (a learner discounts with
gamma^K per macro step: the Runner's gamma from the wrapper's ``control_dt``), the OR of
their termination, truncation and shield flags, the success test at the last step taken,
and the observation after it. An env whose episode ends inside the macro step holds still
(the wrapped env's ``hold``) for its remaining steps, at the start of its next episode; its
``final_obs`` and ``episode`` entries are those of the step where it ended.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from robot_rl.errors import ConfigError
from robot_rl.policies import ChunkPolicy
from robot_rl.sim.vec_env import StepResult, VecEnv, check_vec_env


class MacroStepEnv:
    """What a wrapper ``VecEnv`` on a frozen flow ``policy`` shares, whose one step is
    ``steps`` control steps of ``env`` (DSRL's ``NoiseActionEnv``, the ``ResidualEnv``):
    the frozen policy fitting the env, the env count and device, its episode length and
    control period in macro steps."""

    def __init__(self, env: VecEnv, policy: ChunkPolicy, steps: int):
        check_vec_env(env)
        if (policy.obs_dim, policy.act_dim) != (env.obs_dim, env.act_dim):
            raise ConfigError(f"the policy (obs {policy.obs_dim}, act {policy.act_dim}) does "
                              f"not fit the env (obs {env.obs_dim}, act {env.act_dim})")
        self.env = env
        self.policy = policy.eval().requires_grad_(False)
        self.num_envs = env.num_envs
        self.device = env.device
        self.macro = steps
        self.max_episode_length = math.ceil(env.max_episode_length / steps)

    @property
    def steps_per_step(self) -> int:
        """Control steps of the wrapped env per step (the runner counts env steps by it)."""
        return self.macro

    @property
    def control_dt(self) -> float:
        return self.env.control_dt * self.macro


class MacroStep:
    """Sums the control steps of one macro step (module docstring)."""

    def __init__(self, num_envs: int, device: torch.device | str):
        E = num_envs
        self.ended = torch.zeros(E, dtype=torch.bool, device=device)
        """(E,) the env's episode ended in this macro step."""
        self.reward = torch.zeros(E, device=device)
        self.cost = torch.zeros(E, device=device)
        self.terminated = torch.zeros(E, dtype=torch.bool, device=device)
        self.truncated = torch.zeros(E, dtype=torch.bool, device=device)
        self.success = torch.zeros(E, dtype=torch.bool, device=device)
        self.final_obs: torch.Tensor | None = None
        self.final_groups: dict[str, torch.Tensor] = {}
        self.safety: dict[str, torch.Tensor] = {}
        self.terms: dict[str, dict[str, torch.Tensor]] = {"reward_terms": {},
                                                          "cost_terms": {}}
        self.episode: dict[str, torch.Tensor] = {}

    def held(self, hold: torch.Tensor | None) -> torch.Tensor:
        """(E,) bool: the envs to hold still at the next step (ended, or held by the
        caller)."""
        return self.ended if hold is None else self.ended | hold.to(self.ended.device,
                                                                     torch.bool)

    def add(self, reward: torch.Tensor, cost: torch.Tensor, terminated: torch.Tensor,
            truncated: torch.Tensor, info: dict[str, Any]) -> torch.Tensor:
        """Adds one control step's results; returns (E,) bool, the episodes that ended at
        it."""
        live = ~self.ended
        self.reward += torch.where(live, reward, 0.0)
        self.cost += torch.where(live, cost, 0.0)
        self.terminated |= terminated & live
        self.truncated |= truncated & live
        self.success = torch.where(live, info["success"], self.success)
        for name, flag in info.get("safety", {}).items():
            self.safety[name] = self.safety.get(name, torch.zeros_like(flag)) | (flag & live)
        for key, summed in self.terms.items():
            for name, v in info.get(key, {}).items():
                summed[name] = summed.get(name, 0.0) + torch.where(live, v, 0.0)
        done = (terminated | truncated) & live
        self.final_obs = info["final_obs"] if self.final_obs is None else \
            torch.where(done[:, None], info["final_obs"], self.final_obs)
        for name, v in info.get("final_obs_groups", {}).items():
            self.final_groups[name] = v if name not in self.final_groups else \
                torch.where(done[:, None], v, self.final_groups[name])
        if "episode" in info:
            for key, v in info["episode"].items():
                if key != "done":
                    self.episode[key] = v.clone() if key not in self.episode else \
                        torch.where(done, v, self.episode[key])
        self.ended |= done
        return done

    def result(self, obs: torch.Tensor, info: dict[str, Any], **extra: Any) -> StepResult:
        """The macro step's (obs, reward, cost, terminated, truncated, info) after its last
        control step (``obs`` and ``info``: that step's); ``extra``: more info entries."""
        assert self.final_obs is not None, "add() at least one step first"
        ended = self.ended
        out: dict[str, Any] = {
            "final_obs": torch.where(ended[:, None], self.final_obs, obs),
            "success": self.success, "safety": self.safety, **self.terms, **extra}
        if self.final_groups:
            out["final_obs_groups"] = {n: torch.where(ended[:, None], v, info["obs_groups"][n])
                                       for n, v in self.final_groups.items()}
        if "obs_groups" in info:
            out["obs_groups"] = info["obs_groups"]
        if bool(ended.any()):
            out["episode"] = {**self.episode, "done": ended}
        return obs, self.reward, self.cost, self.terminated, self.truncated, out
