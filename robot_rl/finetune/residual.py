"""A residual fine-tuner on a frozen flow chunk policy (Policy Decorator, Yuan et al. 2024;
ResFiT, Ankile et al. 2025): SAC and the safety critic learn a small bounded per-step
correction of the chunk the flow policy executes.

    env = ResidualEnv(make_env("push", 16), flow_policy, scale=0.4, every=5)
    obs = env.reset(seed=0)                       # (E, O + A): observation and base action
    obs, r, c, terminated, truncated, info = env.step(residual)   # residual (E, A) in [-1, 1]

The flow policy acts as it was trained and is exported (chunks of H, K executed, through
the chunk executor; its noise zero, so the base is a deterministic function of the
observations), and the env's action is ``clip(base + scale * residual, -1, 1)``: DSRL
steers only the noise a whole chunk comes from, a residual corrects inside the chunk, step
by step. The residual policy and its critics see the observation and the base action the
flow would take now. ``scale`` bounds the correction (Policy Decorator's bounded residual),
so exploration stays near the demonstrations and the shield guards every executed action
as always.

At an episode's end, the final observation's base action (what a critic bootstraps a
time-out from) is the first action of a fresh chunk at it.

``every`` K > 1 makes the residual a decision of a slower rate (the control rate / K): one
step of the env is K control steps (``MacroStep``: their rewards and costs summed, the
Runner's discount per K steps), and the correction chosen at the first,
``clip(base + scale * residual) - base``, is held and added to the flow's action at each
of the K (clipped to [-1, 1]). SAC learns push from scratch at 10 Hz and not at 50
(docs/performance/history/learners-1.md); this asks whether the residual does too. The
exported artifact holds the correction the same way (``policy.json``'s ``residual.every``).

``explore_ramp`` is Policy Decorator's progressive exploration: early decisions apply the
residual only in a growing share of the envs, so the first replay is mostly the flow's own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from rich.console import Console

from robot_rl.algos import SAC
from robot_rl.bc import bc_env, bc_task_config, load_bc_policy
from robot_rl.checkpoint import load_checkpoint
from robot_rl.data.mirror import dataset_mirror_signs
from robot_rl.data.reader import Dataset
from robot_rl.errors import ConfigError
from robot_rl.finetune.configs import ResidualConfig
from robot_rl.finetune.macro_step import MacroStep, MacroStepEnv
from robot_rl.finetune.residual_base import (
    ExecutedActionSAC,
    base_executor,
    fresh_base,
    residual_demo_buffer,
)
from robot_rl.policies import ChunkPolicy
from robot_rl.replay import ReplayBuffer
from robot_rl.runner import Runner, load_agent, make_agent
from robot_rl.sim.configs import DRPreset
from robot_rl.sim.vec_env import POLICY, StepResult, VecEnv

EXECUTED = "executed_action"
"""``ResidualEnv.step``'s info key: the actions (E, A) executed, base plus residual; with
``every`` K > 1, the decision's first (its correction is held on the base's next K - 1)."""
EXECUTED_STEPS = "executed_actions"
"""With ``every`` K > 1, beside ``EXECUTED``: the actions (E, K, A) executed at each
control step (an env whose episode ended holds still at the rest)."""


class ResidualEnv(MacroStepEnv):
    """A ``VecEnv`` whose actions are residuals on a flow policy's actions (module
    docstring)."""

    def __init__(self, env: VecEnv, policy: ChunkPolicy, scale: float = 0.1, every: int = 1):
        if not 0.0 < scale <= 2.0:
            raise ConfigError(f"the residual scale must be in (0, 2], got {scale}")
        if every < 1:
            raise ConfigError(f"the residual's every must be >= 1 control step, got {every}")
        super().__init__(env, policy, every)
        self.scale = scale
        self.base_dim = env.act_dim
        self.obs_dim = env.obs_dim + env.act_dim
        self.act_dim = env.act_dim
        self.every = every
        self.executor = base_executor(policy)
        self.base: torch.Tensor | None = None
        """(E, A) the flow's action for the current observation."""

    @property
    def obs_groups(self) -> Mapping[str, int]:
        return {POLICY: self.obs_dim}

    def group_obs(self) -> dict[str, torch.Tensor]:
        return {}

    def __repr__(self) -> str:
        every = "" if self.every == 1 else f", held {self.every} steps"
        return f"ResidualEnv(residual x {self.scale}{every} on a flow chunk policy) of {self.env}"

    def reset(self, seed: int | None = None) -> torch.Tensor:
        obs = self.env.reset(seed=seed)
        self.executor.reset()
        self.base = self.executor(obs)
        return torch.cat([obs, self.base], dim=1)

    def applied(self, residual: torch.Tensor) -> torch.Tensor:
        """(E, A) the action executed for residuals (E, A) now."""
        assert self.base is not None, "reset() first"
        return (self.base + self.scale * residual.to(self.device)).clamp(-1.0, 1.0)

    def step(self, action: torch.Tensor, hold: torch.Tensor | None = None) -> StepResult:
        executed = self.applied(action)
        if self.every == 1:
            obs, reward, cost, terminated, truncated, info = self.env.step(executed, hold)
            self.executor.reset(terminated | truncated)
            self.base = self.executor(obs)
            info = dict(info)
            info[EXECUTED] = executed
        else:
            obs, reward, cost, terminated, truncated, info = self._held(executed, hold)
        ended = terminated | truncated
        assert self.base is not None
        final = info["final_obs"]
        final_base = self.base
        if self.device.type != "cpu":  # read nothing back: a fresh base for every env
            final_base = torch.where(ended[:, None], fresh_base(self.policy, final), self.base)
        elif bool(ended.any()):
            final_base = self.base.clone()
            final_base[ended] = fresh_base(self.policy, final[ended])
        info["final_obs"] = torch.cat([final, final_base], dim=1)
        return torch.cat([obs, self.base], dim=1), reward, cost, terminated, truncated, info

    def _held(self, executed: torch.Tensor, hold: torch.Tensor | None) -> StepResult:
        """``every`` control steps with the correction of ``executed`` (E, A) held."""
        assert self.base is not None
        correction = executed - self.base
        acc = MacroStep(self.num_envs, self.device)
        obs, info = torch.empty(0), dict[str, Any]()
        steps = []
        for k in range(self.every):
            if k:
                executed = (self.base + correction).clamp(-1.0, 1.0)
            steps.append(executed)
            obs, r, c, term, trunc, info = self.env.step(executed, acc.held(hold))
            acc.add(r, c, term, trunc, info)
            # an env whose episode ended holds still at its next episode's start, where
            # its base is a fresh chunk's first action however many steps it holds
            self.executor.reset(acc.ended)
            self.base = self.executor(obs)
        return acc.result(obs, info, **{EXECUTED: steps[0],
                                        EXECUTED_STEPS: torch.stack(steps, dim=1)})


class ResidualRunner(Runner):
    """The SAC runner on ``ResidualEnv``s of the flow policy's task, made as its dataset was
    recorded (randomization, episode length)."""

    kind = "residual"
    eval_gate = False
    """Evaluation runs the residual actor's mean on the flow's zero-noise chunks, ungated:
    the exported artifact runs exactly this (its cost critic would score residuals, not
    actions)."""
    config_type = ResidualConfig
    cfg: ResidualConfig

    def __init__(self, cfg: ResidualConfig, console: Console | None = None):
        if cfg.resume is not None:  # the policy and scale of the run being resumed
            saved = ResidualConfig.from_saved(load_checkpoint(cfg.resume)["config"])
            cfg = dataclasses.replace(cfg, policy=saved.policy, scale=saved.scale,
                                      every=saved.every)
        policy, bc_cfg, bc_state = load_bc_policy(cfg.policy)
        policy = policy.to(cfg.device)  # the base acts where the envs and the learner are
        env_cfg = bc_task_config(bc_state, cfg.policy, "a residual")
        cfg = dataclasses.replace(cfg, task=env_cfg.name, env=env_cfg,
                                  every=cfg.decision_steps(env_cfg.control_dt))
        cfg.validate()
        self.bc_cfg = bc_cfg  # its dataset gives the signs of --mirror (``mirror_signs``)
        self._explore_gen = torch.Generator().manual_seed(cfg.seed + 1)
        """Draws ``explore_ramp``'s masks (apart from the warm-up's uniform actions); a
        resumed run continues its sequence (``load_extra_state``)."""
        super().__init__(cfg, console,
                         env=residual_env(cfg, policy, bc_state, cfg.num_envs, cfg.seed,
                                          overtime=True),
                         eval_env=residual_env(cfg, policy, bc_state,
                                               min(cfg.eval_episodes, 32), cfg.seed + 10_000))
        self.flow_policy = policy
        self.demos: ReplayBuffer | None = None
        """The demonstrations of --demo-ratio (``before_training``)."""
        held = "" if cfg.every == 1 else f", held {cfg.every} control steps"
        steps = cfg.overtime_steps(env_cfg.control_dt)
        overtime = f"; failed training episodes run {steps} control steps on" if steps else ""
        self.console.print(f"residual x {cfg.scale}{held} on {cfg.policy} ({bc_cfg.algo}, chunk "
                           f"{policy.horizon}x{policy.act_dim}, {bc_cfg.policy.executed} "
                           f"steps executed); gamma {self.cfg.sac.gamma:.4f}{overtime}")

    def build_agent(self) -> SAC:
        """SAC whose actor's mean starts at exactly zero correction: the run starts from the
        flow policy itself (Policy Decorator's zero-initialized residual); with
        ``critic_action`` executed, an ``ExecutedActionSAC``."""
        cfg = self.cfg
        agent = residual_agent(cfg, self.env.obs_dim, self.env.act_dim)
        if cfg.resume is None:
            with torch.no_grad():
                agent.gaussian_actor.mu.weight.zero_()
                agent.gaussian_actor.mu.bias.zero_()
        return agent

    def before_training(self) -> None:
        """With --demo-ratio: the demonstrations, relabelled with the base's actions."""
        if self.cfg.demo_ratio > 0:
            path = self.cfg.demos or self.bc_cfg.demos
            assert isinstance(self.env, ResidualEnv)
            self.demos = residual_demo_buffer(Dataset(path), self.env.env, self.flow_policy,
                                              self.cfg.device)
            self.console.print(f"demonstrations: {len(self.demos):,} steps of {path}, "
                               f"{self.cfg.demo_ratio:.0%} of every batch")

    def decide(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None,
                                                 torch.Tensor | None]:
        """The runner's decision (E, A), with ``explore_ramp`` zero correction in the envs
        its mask leaves out."""
        self.agent.mean_anchor = self.anchor_weight(self.env_steps)
        action, hold, rejected = super().decide(obs)
        ramp = self.cfg.explore_ramp
        if ramp and self.env_steps < ramp:
            applied = explore_mask(self.env_steps / ramp, action.shape[0], self._explore_gen)
            action = torch.where(applied[:, None].to(action.device), action,
                                 torch.zeros_like(action))
        return action, hold, rejected

    def anchor_weight(self, env_steps: int) -> float:
        """--sac.anchor after ``env_steps``, faded over ``anchor_fade``."""
        weight, steps = self.cfg.sac.anchor, self.cfg.anchor_fade()
        return weight if steps == 0 else weight * max(0.0, 1.0 - env_steps / steps)

    def store(self, obs: torch.Tensor, action: torch.Tensor, reward: torch.Tensor,
              cost: torch.Tensor, terminated: torch.Tensor, truncated: torch.Tensor,
              info: dict[str, Any], keep: torch.Tensor | None) -> None:
        """As the runner stores, with the executed action where the critics score it."""
        if self.cfg.critic_action == "executed":
            action = info[EXECUTED]
        super().store(obs, action, reward, cost, terminated, truncated, info, keep)

    def replay_shares(self) -> list[tuple[ReplayBuffer, float]]:
        """With demonstrations, ``demo_ratio`` of every batch from them."""
        return [] if self.demos is None else [(self.demos, self.cfg.demo_ratio)]

    def mirror_signs(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The signs of a residual transition's mirror image (--mirror), from the flow's
        dataset: its observation's and then its action's (the base's), and the action's
        for the residual."""
        signs = dataset_mirror_signs(Dataset(self.bc_cfg.demos)).with_action_in_obs()
        if len(signs.obs) != self.env.obs_dim:
            raise ConfigError(f"--mirror: {self.bc_cfg.demos} observes "
                              f"{len(signs.obs) - len(signs.action)} elements, the residual's "
                              f"env {self.env.obs_dim - len(signs.action)}")
        return torch.as_tensor(signs.obs), torch.as_tensor(signs.action)

    def extra_state(self) -> dict[str, Any]:
        """The ramp's generator, so a resumed run draws the masks it would have drawn."""
        return {"explore_rng": self._explore_gen.get_state()}

    def load_extra_state(self, state: dict[str, Any]) -> None:
        """The ramp's generator where the checkpoint has it (not before 2026-11-29)."""
        if "explore_rng" in state:
            self._explore_gen.set_state(state["explore_rng"])

    def actor_learns(self) -> bool:
        """The actor moves only after ``critic_warmup`` critic steps."""
        return self.agent.updates >= self.cfg.critic_warmup


def explore_mask(rate: float, num_envs: int, gen: torch.Generator) -> torch.Tensor:
    """(E,) bool: the envs whose residual is applied at this decision, each with
    probability ``rate`` (Policy Decorator's progressive exploration)."""
    return torch.rand(num_envs, generator=gen) < rate


def residual_env(cfg: ResidualConfig, policy: ChunkPolicy, bc_state: dict[str, Any],
                 num_envs: int, seed: int, dr: DRPreset | None = None,
                 overtime: bool = False) -> ResidualEnv:
    """A ``ResidualEnv`` of the flow policy's task, made as its dataset was recorded; a
    training env (``overtime``) with ``cfg.overtime``."""
    env = bc_env(bc_state, cfg.policy, "a residual", num_envs, seed, dr or cfg.dr, cfg.device,
                 cfg.backend, cfg.warp)
    if overtime:
        env.overtime = cfg.overtime_steps(env.control_dt)
    return ResidualEnv(env, policy, cfg.scale, cfg.decision_steps(env.control_dt))


def residual_agent(cfg: ResidualConfig, obs_dim: int, act_dim: int) -> SAC:
    """The residual's SAC: an ``ExecutedActionSAC`` where its critics score executed
    actions (``critic_action``), else the runner's plain one."""
    if cfg.critic_action == "executed":
        return make_agent(cfg, obs_dim, act_dim, ExecutedActionSAC, scale=cfg.scale)
    return make_agent(cfg, obs_dim, act_dim)


def load_residual(path: str | Path, num_envs: int, seed: int, dr: DRPreset | None = None
                  ) -> tuple[Any, ResidualConfig, ResidualEnv]:
    """A residual run's agent (an ``ExecutedActionSAC`` where its critics score executed
    actions), its config and a residual env to act in."""
    if load_checkpoint(path).get("kind") != "residual":
        raise ConfigError(f"{path} is not a residual run")
    agent, cfg, _ = load_agent(path, ResidualConfig, residual_agent)
    assert isinstance(cfg, ResidualConfig)
    policy, _, bc_state = load_bc_policy(cfg.policy)
    return agent, cfg, residual_env(cfg, policy, bc_state, num_envs, seed, dr)
