"""Executing action chunks step by step, for a batch of envs or one robot.

    run = ChunkExecutor(policy_fn, horizon=8, execute=4, obs_history=2)
    run.reset()                       # all envs start an episode
    action = run(obs)                 # obs (E, O) -> action (E, A), one per control step
    run.reset(done)                   # (E,) bool: these envs start a new episode

``policy_fn(obs_hist (N, T, O)) -> chunk (N, H, A)`` is called only for the envs whose
queue ran out (receding horizon: the first ``execute`` actions of each chunk run, then the
policy sees the newest observations again), with every env's last T observations (the
first one of an episode repeated before it). With ``ensemble`` (ACT's temporal
ensembling) the policy is called every step and each action is the weighted mean of every
chunk's prediction for that step, weight exp(-ensemble * i) for the i-th oldest prediction.
With ``clock`` (a policy that sees a clock, ``PolicyConfig.clock``) the policy is called as
``policy_fn(obs_hist, steps)``, ``steps`` (N,) the control steps since each called env's
episode start (0 at its first).

Torch tensors (the batched evaluation) and numpy arrays (the deploy loop) both work: the
state takes the type of the first observation.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from robot_rl.controllers.xp import namespace
from robot_rl.errors import ConfigError

Array = Any  # torch.Tensor or np.ndarray
ChunkFn = Callable[..., Array]
"""(obs_hist (N, T, O)[, steps (N,)]) -> chunk (N, H, A)."""


class ObsHistory:
    """Each env's last T observations (E, T, O), oldest first; an env starting an episode
    has its first observation repeated T times."""

    def __init__(self, length: int):
        self.length = length
        self.value: Array = None

    def push(self, obs: Array, fresh: Array | None = None) -> Array:
        """Add the (E, O) observations; ``fresh`` (E,) bool (all if None, or on the first
        call): those envs start an episode. Returns the history (E, T, O)."""
        xp = namespace(obs)
        if self.value is None or self.value.shape[0] != obs.shape[0] or fresh is None:
            self.value = xp.stack([obs] * self.length, axis=1) if xp is np else \
                obs[:, None].repeat(1, self.length, 1)
            return self.value
        rolled = xp.concatenate([self.value[:, 1:], obs[:, None]], axis=1) \
            if self.length > 1 else obs[:, None]
        self.value = xp.where(fresh[:, None, None], obs[:, None], rolled)
        return self.value


class ChunkExecutor:
    """Per-env queues of chunked actions (see module docstring)."""

    def __init__(self, policy_fn: ChunkFn, horizon: int, execute: int, obs_history: int = 1,
                 ensemble: float | None = None, clock: bool = False):
        if horizon < 1 or not 1 <= execute <= horizon or obs_history < 1:
            raise ConfigError(f"need 1 <= execute <= horizon and obs_history >= 1, got "
                              f"horizon {horizon}, execute {execute}, obs_history "
                              f"{obs_history}")
        if ensemble is not None and ensemble < 0:
            raise ConfigError(f"the temporal ensembling rate must be >= 0, got {ensemble}")
        self.policy_fn = policy_fn
        self.horizon, self.execute, self.obs_history = horizon, execute, obs_history
        self.ensemble = ensemble
        self.clock = clock
        self.calls = 0
        """Policy calls so far (one per chunk and env group)."""
        self._hist = ObsHistory(obs_history)
        self._queue: Array = None  # (E, H, A); with ensembling: weighted sums
        self._weight: Array = None  # (E, H) with ensembling: the sums' weights
        self._pos: Array = None  # (E,) next action's index in the queue
        self._fresh: Array = None  # (E,) the env starts an episode at its next step
        self._steps: Array = None  # (E,) with ``clock``: steps since the episode's start

    def reset(self, mask: Array | None = None) -> None:
        """Envs in ``mask`` (E,) bool (all envs if None) start a new episode: their history
        and queued actions are dropped."""
        if self._fresh is None:
            return  # nothing yet: the first call starts every env afresh
        if mask is None:
            self._fresh[:] = True
        else:
            self._fresh[mask] = True

    def __call__(self, obs: Array) -> Array:
        """(E, O) observations -> (E, A) actions to apply now."""
        xp = namespace(obs)
        E = obs.shape[0]
        if self._pos is None or self._pos.shape[0] != E:
            self._allocate(obs)
        fresh = self._fresh
        hist = self._hist.push(obs, fresh)
        if self.clock:  # counted only for a policy that sees it: the deploy loop is hot
            self._steps[fresh] = 0
        if self.ensemble is not None:
            return self._ensembled(xp, fresh, hist)
        need = fresh | (self._pos >= self.execute)
        if bool(need.any()):
            chunk = self._call(hist[need], need)
            if self._queue is None:
                self._queue = _zeros_like_rows(xp, chunk, E)
            self._queue[need] = chunk
            self._pos[need] = 0
        self._fresh[:] = False
        action = self._queue[_arange(xp, E, obs), self._pos]
        self._pos += 1
        if self.clock:
            self._steps += 1
        return action

    def _call(self, hist: Array, rows: Array | slice) -> Array:
        """The policy on the histories of the envs in ``rows`` (with their steps)."""
        self.calls += 1
        if self.clock:
            return self.policy_fn(hist, self._steps[rows])  # type: ignore[call-arg]
        return self.policy_fn(hist)

    def _ensembled(self, xp: Any, fresh: Array, hist: Array) -> Array:
        chunk = self._call(hist, slice(None))  # (E, H, A)
        if self._queue is None:
            self._queue = _zeros_like_rows(xp, chunk, chunk.shape[0])
        # a fresh env forgets its older predictions; the others' weigh exp(ensemble) more
        # than the new one per step of age
        keep = 1.0 - fresh.astype(np.float32) if xp is np else 1.0 - fresh.float()
        older = keep * math.exp(self.ensemble or 0.0)
        self._queue = self._queue * older[:, None, None] + chunk
        self._weight = self._weight * older[:, None] + 1.0
        action = self._queue[:, 0] / self._weight[:, :1]
        # shift by one step: slot 0 was executed, the last slot has no prediction yet
        self._queue = xp.concatenate([self._queue[:, 1:], self._queue[:, :1] * 0.0], axis=1)
        self._weight = xp.concatenate([self._weight[:, 1:], self._weight[:, :1] * 0.0],
                                      axis=1)
        self._fresh[:] = False
        if self.clock:
            self._steps += 1
        return action

    def _allocate(self, obs: Array) -> None:
        xp = namespace(obs)
        n_envs = obs.shape[0]
        bool_: Any = torch.bool if xp is torch else np.bool_
        long_: Any = torch.long if xp is torch else np.int64

        def zeros(*shape: int, dtype: Any = obs.dtype) -> Array:
            if xp is torch:
                return torch.zeros(shape, dtype=dtype, device=obs.device)
            return np.zeros(shape, dtype=dtype)

        self._queue = None
        self._weight = zeros(n_envs, self.horizon)
        self._pos = zeros(n_envs, dtype=long_)
        self._steps = zeros(n_envs, dtype=long_) if self.clock else None
        self._fresh = zeros(n_envs, dtype=bool_) | True

    @property
    def queue_empty(self) -> Array:
        """(E,) bool: the env's next step calls the policy."""
        return self._fresh | (self._pos >= self.execute)


class HeldCorrection:
    """A correction of each env's actions decided every ``every`` calls from its episode's
    start and held between (a residual policy deciding at a slower rate than the control
    loop: the exported artifact's ``Policy``, ``ResidualActing``):

        held = HeldCorrection(every=5)
        action = held(base, lambda decide: corrected(obs[decide], base[decide]))
        held.reset(done)              # (E,) bool: these envs start a new episode

    At a decision the env's action is ``decide_fn``'s and its correction (that action
    minus the base) is kept; at the calls between, the action is ``clip(base + correction,
    -1, 1)``. Torch tensors and numpy arrays both work, as for ``ChunkExecutor``."""

    def __init__(self, every: int):
        if every < 1:
            raise ConfigError(f"a held correction needs every >= 1 call, got {every}")
        self.every = every
        self._since: Array = None  # (E,) calls since the env's episode started
        self._held: Array = None  # (E, A) each env's correction held

    def reset(self, mask: Array | None = None) -> None:
        """Envs in ``mask`` (E,) bool (all if None) start a new episode: their next call
        decides."""
        if self._since is not None:
            self._since[slice(None) if mask is None else mask] = 0

    def __call__(self, base: Array, decide_fn: Callable[[Array], Array]) -> Array:
        """(E, A) actions for the base actions (E, A); ``decide_fn(decide)`` gives the
        corrected actions of the envs in ``decide`` (E,) bool, which decide now."""
        xp = namespace(base)
        if self._since is None or self._since.shape[0] != base.shape[0]:
            self._since = np.zeros(base.shape[0], np.int64) if xp is np else \
                torch.zeros(base.shape[0], dtype=torch.long, device=base.device)
            self._held = xp.zeros_like(base)
        decide = self._since % self.every == 0
        out = xp.clip(base + self._held, -1.0, 1.0)
        if bool(decide.any()):
            out[decide] = decide_fn(decide)
            self._held[decide] = out[decide] - base[decide]
        self._since += 1
        return out


def _zeros_like_rows(xp: Any, chunk: Array, rows: int) -> Array:
    """Zeros (rows, *chunk.shape[1:]) of the chunk's type."""
    return xp.zeros((rows, *chunk.shape[1:]), dtype=chunk.dtype) if xp is np else \
        torch.zeros((rows, *chunk.shape[1:]), dtype=chunk.dtype, device=chunk.device)


def _arange(xp: Any, n: int, like: Array) -> Array:
    return torch.arange(n, device=like.device) if xp is torch else np.arange(n)
