"""Delays in whole control steps, each env's own, drawn at its reset.

The env sends its controller targets to the arm through a ``TargetDelay`` (actuation delay:
the targets a step's action makes, after the shield and the action space, act that many
steps late, as a command sent by the deploy runtime reaches a real arm's servos late) and
shows its policy observations through a ``DelayLine`` (sensing delay: the policy sees the
state that many steps ago).

    line = DelayLine((0, 2), num_envs=4, width=7, device=cpu)
    line.draw(ids, gen)            # new delays for the envs ``ids``
    late = line(x)                 # (E, D): row e is x of ``delay[e]`` calls ago
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import torch

from robot_rl.controllers.action_spaces import Targets

TARGET_FIELDS = ("joint", "pos", "rot", "gripper", "start")


class DelayLine:
    """A ring of the last ``hi + 1`` (E, D) tensors and each env's delay in ``[lo, hi]``."""

    def __init__(self, steps: tuple[int, int], num_envs: int, width: int,
                 device: torch.device | str, dtype: torch.dtype = torch.float32,
                 delay: torch.Tensor | None = None):
        """``delay``: an (E,) long tensor of delays to share with other lines (drawn by
        whoever owns it); default: this line's own."""
        self.lo, self.hi = steps
        self.ring = torch.zeros(self.hi + 1, num_envs, width, device=device, dtype=dtype)
        """(hi + 1, E, D): the newest tensor at ``head``, older ones before it."""
        self.head = 0
        self.delay = delay if delay is not None else torch.zeros(num_envs, dtype=torch.long,
                                                                 device=device)
        """(E,) each env's delay in steps."""
        self._arange = torch.arange(num_envs, device=device)

    @property
    def active(self) -> bool:
        """Whether any env can be delayed (else ``__call__`` passes tensors through)."""
        return self.hi > 0

    def draw(self, ids: torch.Tensor, gen: torch.Generator) -> None:
        """New delays for the envs ``ids`` (drawn only when the line is active)."""
        draw_delays(self.delay, ids, (self.lo, self.hi), gen)

    def fill(self, ids: torch.Tensor, value: torch.Tensor | float) -> None:
        """Every slot of the envs ``ids`` holds ``value`` (a restart: (n, D) or a scalar)."""
        self.ring[:, ids] = value if isinstance(value, float) else value.to(self.ring.dtype)

    def __call__(self, x: torch.Tensor, fresh: torch.Tensor | None = None) -> torch.Tensor:
        """Push ``x`` (E, D); returns each env's tensor of ``delay`` pushes ago. ``fresh``:
        (E,) bool, the envs whose every slot becomes ``x`` first (their stream starts now;
        no read of the device)."""
        if not self.active:
            return x
        n = self.hi + 1
        self.head = (self.head + 1) % n
        self.ring[self.head] = x
        if fresh is not None:
            self.ring.copy_(torch.where(fresh[None, :, None], x.to(self.ring.dtype)[None],
                                        self.ring))
        return self.ring[(self.head - self.delay) % n, self._arange]


class TargetDelay:
    """The controller targets in flight: every field of ``Targets`` delayed alike, by each
    env's actuation delay. An env that restarts (``restart``) acts on its next targets at
    once and on later ones late, as if that first command had been sent before its episode
    began."""

    def __init__(self, steps: tuple[int, int], num_envs: int, device: torch.device | str):
        self.steps, self.num_envs, self.device = steps, num_envs, torch.device(device)
        self.delay = torch.zeros(num_envs, dtype=torch.long, device=device)
        """(E,) each env's actuation delay in control steps."""
        self._lines: dict[str, DelayLine] = {}
        self._fresh = torch.ones(num_envs, dtype=torch.bool, device=device)
        """(E,) the envs whose next targets start their stream."""

    @property
    def active(self) -> bool:
        return self.steps[1] > 0

    def draw(self, ids: torch.Tensor, gen: torch.Generator) -> None:
        """New delays for the envs ``ids`` (drawn only when active)."""
        draw_delays(self.delay, ids, self.steps, gen)

    def restart(self, ids: torch.Tensor) -> None:
        """The envs ``ids`` start an episode: nothing of the last one is in flight."""
        if self.active:
            self._fresh[ids] = True

    def __call__(self, targets: Targets) -> Targets:
        """The targets that act now: each env's of ``delay`` steps ago."""
        if not self.active:
            return targets
        out: dict[str, Any] = {}
        for name in TARGET_FIELDS:
            value = getattr(targets, name)
            if value is None:
                out[name] = None
                continue
            t = torch.as_tensor(value)
            flat = t.reshape(self.num_envs, -1)
            line = self._lines.get(name)
            if line is None:
                line = self._lines[name] = DelayLine(self.steps, self.num_envs, flat.shape[1],
                                                     flat.device, flat.dtype, self.delay)
            late = line(flat, self._fresh).reshape(t.shape)
            out[name] = late.numpy() if isinstance(value, np.ndarray) else late
        self._fresh[:] = False
        return dataclasses.replace(targets, **out)  # type: ignore[arg-type]


def draw_delays(delay: torch.Tensor, ids: torch.Tensor, steps: tuple[int, int],
                gen: torch.Generator) -> None:
    """Draw ``delay[ids]`` uniformly from ``steps`` (lo, hi); nothing where hi is 0."""
    lo, hi = steps
    if hi > 0:
        delay[ids] = torch.randint(lo, hi + 1, (len(ids),), generator=gen, device=delay.device)
