"""Scripted experts in the styles demonstrations come in: the task's own, multimodal, and
human-like.

    expert = make_expert(env, "multimodal-human", seed=0)
    action = expert(env.state)            # (E, A) in [-1, 1]; call once per control step

* ``scripted``: the task's expert; unimodal and noiseless.
* ``multimodal``: the task's ``ModalExpert``, one of its modes drawn per episode (push goes
  round the puck on its left or its right; lift grasps across either pair of the cube's
  faces). The modes' mean fails, so a policy that regresses to the mean action fails too.
* ``human``: one way of doing the task (the modal expert's first mode where the task has
  one, which keeps a memory of its progress; else the scripted expert), driven as a person
  drives: slower by an amount drawn per episode,
  jittery (temporally correlated noise), pausing now and then, and some episodes with a
  detour (a push off course that the expert then corrects).
* ``multimodal-human``: both.

The expert is stateful (per-env mode, memory and human state). It notices an env's new
episode from ``state.episode_step == 0``, so it must be called once per control step, before
``env.step``, and it follows the env's automatic resets by itself.
"""

from __future__ import annotations

import dataclasses
from typing import get_args

import torch

from robot_rl.errors import ConfigError
from robot_rl.sim.configs import ExpertStyle
from robot_rl.sim.env import BatchedEnv
from robot_rl.sim.state import SimState

EXPERT_STYLES: tuple[str, ...] = get_args(ExpertStyle)


@dataclasses.dataclass(frozen=True)
class HumanLikeConfig:
    """How the human-like style departs from the scripted expert (arm actions only; the
    gripper command is the expert's). Times are in seconds, so the style is the same
    person at any control rate (at 50 Hz: pauses of 5-20 steps, 2% of steps starting one)."""

    speed: tuple[float, float] = (0.5, 1.0)
    """Per-episode factor on the arm action, uniform in this range."""
    jitter_std: float = 0.1
    """Stationary std of the AR(1) jitter added to the arm action [action units]."""
    jitter_corr: float = 0.9
    """Correlation of the jitter over 20 ms (at a control step of dt: this ** (dt / 0.02))."""
    pause_rate: float = 1.0
    """Pauses started per second (arm action 0: the joints hold) [1/s]."""
    pause_time: tuple[float, float] = (0.1, 0.4)
    """A pause's length, uniform in this range [s]."""
    detour_prob: float = 0.5
    """Probability that an episode has a detour."""
    detour_start: tuple[float, float] = (0.0, 0.6)
    """The detour's start in the episode, uniform in this range [s]."""
    detour_time: tuple[float, float] = (0.2, 0.5)
    """The detour's length, uniform in this range [s]."""
    detour_scale: float = 0.4
    """Size of the detour's constant push on the arm action (a random direction)."""


class Expert:
    """A batched expert of one style for an env (see module docstring): per env, the
    mode (E,), the modal expert's memory (E, M) and the human-like state."""

    def __init__(self, env: BatchedEnv, style: ExpertStyle = "scripted", seed: int = 0,
                 human: HumanLikeConfig | None = None):
        if style not in EXPERT_STYLES:
            raise ConfigError(f"unknown expert style {style!r}; styles: {list(EXPERT_STYLES)}")
        task = env.task
        if task.expert is None:
            raise ConfigError(f"task {env.cfg.name!r} has no scripted expert")
        self.multimodal = style.startswith("multimodal")
        if self.multimodal and task.modal_expert is None:
            raise ConfigError(f"task {env.cfg.name!r} has no multimodal expert; styles "
                              f"for it: scripted, human")
        self.style = style
        self.modal = task.modal_expert is not None and style != "scripted"
        self.human = (human or HumanLikeConfig()) if style.endswith("human") else None
        self.dt = env.control_dt
        self.task, self.cfg = task, env.cfg
        E, A, dev = env.num_envs, env.act_dim, env.device
        self.arm_dim = A - int(env.pipeline.action_space.has_gripper)
        self.gen = torch.Generator(device=dev).manual_seed(seed)
        self.mode = torch.zeros(E, dtype=torch.long, device=dev)
        width = task.modal_expert.memory if task.modal_expert is not None else 0
        self.memory = torch.zeros(E, width, device=dev)
        self.speed = torch.ones(E, device=dev)
        self.jitter = torch.zeros(E, self.arm_dim, device=dev)
        self.pause_left = torch.zeros(E, dtype=torch.long, device=dev)
        self.detour_from = torch.full((E,), -1, dtype=torch.long, device=dev)
        self.detour_to = torch.full((E,), -1, dtype=torch.long, device=dev)
        self.detour = torch.zeros(E, self.arm_dim, device=dev)

    def __call__(self, state: SimState) -> torch.Tensor:
        """(E, A) action in [-1, 1] at the current state (call once per control step)."""
        new = state.episode_step == 0
        if bool(new.any()):
            self._new_episodes(new.nonzero().squeeze(1))
        if self.modal:
            assert self.task.modal_expert is not None
            action, self.memory = self.task.modal_expert.act(state, self.cfg, self.mode,
                                                             self.memory)
        else:
            assert self.task.expert is not None
            action = self.task.expert(state, self.cfg)
        action = action.float()
        if self.human is not None:
            action = self._humanize(action, state.episode_step)
        return action.clamp(-1.0, 1.0)

    # -- internals -------------------------------------------------------------------------

    def _uniform(self, n: int, lo: float, hi: float) -> torch.Tensor:
        u = torch.rand(n, generator=self.gen, device=self.gen.device)
        return lo + (hi - lo) * u

    def _randint(self, n: int, lo: int, hi: int) -> torch.Tensor:
        return torch.randint(lo, hi + 1, (n,), generator=self.gen, device=self.gen.device)

    def _steps(self, span: tuple[float, float]) -> tuple[int, int]:
        """A range of times [s] as control steps."""
        return round(span[0] / self.dt), round(span[1] / self.dt)

    def _new_episodes(self, ids: torch.Tensor) -> None:
        n = len(ids)
        self.memory[ids] = 0.0
        if self.multimodal:
            assert self.task.modal_expert is not None
            self.mode[ids] = self._randint(n, 0, self.task.modal_expert.modes - 1)
        h = self.human
        if h is None:
            return
        self.speed[ids] = self._uniform(n, *h.speed)
        self.jitter[ids] = h.jitter_std * torch.randn(n, self.arm_dim, generator=self.gen,
                                                      device=self.gen.device)
        self.pause_left[ids] = 0
        has = self._uniform(n, 0.0, 1.0) < h.detour_prob
        start = self._randint(n, *self._steps(h.detour_start))
        self.detour_from[ids] = torch.where(has, start, -1)
        length = self._randint(n, *self._steps(h.detour_time))
        self.detour_to[ids] = torch.where(has, start + length, -1)
        d = torch.randn(n, self.arm_dim, generator=self.gen, device=self.gen.device)
        self.detour[ids] = h.detour_scale * d / torch.linalg.vector_norm(
            d, dim=1, keepdim=True).clamp(min=1e-6)

    def _humanize(self, action: torch.Tensor, step: torch.Tensor) -> torch.Tensor:
        h = self.human
        assert h is not None
        E, k = action.shape[0], self.arm_dim
        rho = h.jitter_corr ** (self.dt / 0.02)
        self.jitter = rho * self.jitter + h.jitter_std * (1.0 - rho * rho) ** 0.5 * torch.randn(
            E, k, generator=self.gen, device=self.gen.device)
        starting = (self.pause_left == 0) & (self._uniform(E, 0.0, 1.0)
                                             < h.pause_rate * self.dt)
        self.pause_left = torch.where(starting, self._randint(E, *self._steps(h.pause_time)),
                                      self.pause_left)
        paused = self.pause_left > 0
        self.pause_left = (self.pause_left - 1).clamp(min=0)
        in_detour = (step >= self.detour_from) & (step < self.detour_to)
        arm = action[:, :k] * self.speed[:, None] + self.jitter
        arm = arm + in_detour[:, None] * self.detour
        arm = torch.where(paused[:, None], torch.zeros_like(arm), arm)
        return torch.cat([arm, action[:, k:]], dim=1)


def make_expert(env: BatchedEnv, style: ExpertStyle = "scripted", seed: int = 0,
                human: HumanLikeConfig | None = None) -> Expert:
    """The env's task expert in ``style`` (ConfigError if the task has none of that style)."""
    return Expert(env, style, seed, human)
