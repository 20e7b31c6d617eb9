"""The bookkeeping of one off-policy training run, whoever collects the data: the SAC runner
steps its own env, the distributed learner (``robot_rl.cluster``) receives rollouts from
env-runner actors. Both feed a ``TrainSession`` the same counts and call ``tick`` once per
round of collection and learning:

    with TrainSession(runner) as session:        # the books of runner.state (RunState)
        while runner.state.env_steps < cfg.total_steps:
            session.check_interrupt()
            ...collect, store, learn; runner.state.env_steps += n...
            session.add_steps(n, term_sums, rejected, cost)
            session.add_episodes(episodes)  # an Episodes: returns, costs, successes
            if session.tick():      # multiplier, log, evaluate, stop rules, checkpoint
                break

The frame (the writer, Ctrl-C read by ``check_interrupt`` between two rounds, the bar, the
stop rules, the last evaluation and checkpoint on leaving) is ``run_loop.RunLoop``'s, which
behaviour cloning shares.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import torch
from rich.progress import TextColumn

from robot_rl.evaluate import EvalResult
from robot_rl.run_loop import RunLoop
from robot_rl.run_progress import short_count

if TYPE_CHECKING:
    from robot_rl.run_state import RunState


class SessionHost(Protocol):
    """What a ``TrainSession`` keeps the books of: a ``Runner`` (whatever its collector:
    its own env, Ray's env-runners, the robot)."""

    cfg: Any
    """A ``TrainConfig`` (stop rules, logging, evaluation, progress bar)."""
    console: Any
    run_dir: Path
    agent: Any
    """The SAC agent (its Lagrange multiplier steps every round)."""
    state: RunState
    """Its counters and books (``robot_rl.run_state``), which the session keeps."""
    elapsed: float
    history: list[dict[str, float]]
    writer: Any
    """``state``'s writer (the frame opens and closes it)."""

    def evaluate_now(self) -> EvalResult: ...

    def log_metrics(self, metrics: dict[str, float]) -> None: ...

    def save(self) -> Path: ...

    def keep(self) -> Path: ...


def step_sums(info: dict[str, Any]) -> dict[str, torch.Tensor]:
    """The sums over envs of one step's reward terms, cost terms and shield interventions,
    under their TensorBoard names (``reward/<term>``, ``cost/<term>``,
    ``safety/shield_<what>``): 0-dim tensors, read when the window is logged."""
    out: dict[str, torch.Tensor] = {}
    for group, prefix in (("reward_terms", "reward/"), ("cost_terms", "cost/"),
                          ("safety", "safety/shield_")):
        for name, v in info.get(group, {}).items():
            out[prefix + name] = v.sum()
    return out


@dataclasses.dataclass
class Episodes:
    """The training episodes that ended in a round: their returns, costs and successes,
    (N,) each, or (E,) each for E envs of which ``ended`` (E,) bool marks those whose episode
    ended (tensors that stay on the device: nothing is read back per round)."""

    returns: torch.Tensor
    costs: torch.Tensor
    successes: torch.Tensor
    ended: torch.Tensor | None = None
    """(E,) bool; None: every row ended."""

    @staticmethod
    def of(returns: Sequence[float], costs: Sequence[float],
           successes: Sequence[float]) -> Episodes:
        """Episodes from lists of numbers (a pool's rollout)."""
        def t(v: Sequence[float]) -> torch.Tensor:
            return torch.as_tensor(np.asarray(v, dtype=np.float64))

        return Episodes(t(returns), t(costs), t(successes))

    def mask(self) -> torch.Tensor:
        """(N,) bool: the rows whose episode ended."""
        if self.ended is None:
            return torch.ones(self.returns.shape, dtype=torch.bool, device=self.returns.device)
        return self.ended


Number = torch.Tensor | float
"""A count or sum of the books: a tensor on the learner's device (read when logged), or
a number where it came from the host."""


class TrainWindow:
    """Training statistics since the last log line: sums and counts (tensors until
    ``flush`` reads them, once per log line)."""

    def __init__(self) -> None:
        self._t = time.perf_counter()
        self.sps = 0.0
        self.success_text = "-"
        self.cost_text = "-"
        self._reset()

    def _reset(self) -> None:
        self.episodes: Number = 0.0
        self.returns: Number = 0.0
        self.costs: Number = 0.0
        self.success: Number = 0.0
        self.losses: dict[str, tuple[Number, int]] = {}
        """Each metric's sum and count over the window's updates."""
        self.terms: dict[str, Number] = {}
        self.n_steps = 0
        self.rejected: Number = 0.0

    def add_steps(self, n: int, sums: Mapping[str, Number], rejected: Number) -> None:
        """``n`` env transitions whose per-term sums are ``sums`` and of which ``rejected``
        were gate rejections."""
        self.n_steps += n
        for k, v in sums.items():
            self.terms[k] = self.terms.get(k, 0.0) + v
        self.rejected = self.rejected + rejected

    def add_episodes(self, episodes: Episodes) -> None:
        """Finished training episodes."""
        ended = episodes.mask()
        self.episodes = self.episodes + ended.sum()
        self.returns = self.returns + (episodes.returns.double() * ended).sum()
        self.costs = self.costs + (episodes.costs.double() * ended).sum()
        self.success = self.success + (episodes.successes.double() * ended).sum()

    def add_losses(self, metrics: Mapping[str, Number]) -> None:
        """One update's metrics (0-dim tensors or numbers), summed as they come."""
        for k, v in metrics.items():
            total, n = self.losses.get(k, (0.0, 0))
            self.losses[k] = (total + v, n + 1)

    def flush(self, elapsed: float) -> dict[str, float]:
        """The window's means, read from the device, and a fresh window."""
        now = time.perf_counter()
        self.sps = self.n_steps / max(now - self._t, 1e-9)
        self._t = now
        out = {k: float(v) / max(self.n_steps, 1) for k, v in self.terms.items()}
        out.update({k: float(total) / n for k, (total, n) in self.losses.items()})
        out["perf/sps"] = self.sps
        out["safety/gate_rejected_rate"] = float(self.rejected) / max(self.n_steps, 1)
        if (episodes := float(self.episodes)) > 0:
            out["train/episode_return"] = float(self.returns) / episodes
            out["train/episode_cost"] = float(self.costs) / episodes
            out["train/success_rate"] = float(self.success) / episodes
            self.success_text = f"{out['train/success_rate']:.0%}"
            self.cost_text = f"{out['train/episode_cost']:.2f}"
        out["charts/elapsed_seconds"] = elapsed
        self._reset()
        return out


class TrainSession(RunLoop):
    """``RunLoop`` with the books of an off-policy run (see the module docstring): training
    windows logged every ``log_every`` env steps, the Lagrange multiplier's steps,
    evaluations every ``eval_every``, checkpoints kept every ``keep_every``."""

    def __init__(self, runner: SessionHost):
        cfg = runner.cfg
        columns = (TextColumn("{task.fields[sps]} sps"),
                   TextColumn("success {task.fields[success]}"),
                   TextColumn("cost {task.fields[cost]}"))
        super().__init__(runner, f"{cfg.env_name} {cfg.method_name}", cfg.total_steps,
                         unit="env steps", count="env_steps", columns=columns,
                         fields={"sps": "-", "success": "-", "cost": "-"},
                         target_evals=cfg.target_evals, stop_reason="total_steps reached",
                         resume_command="robot-rl train")
        self.runner = runner
        self.window = TrainWindow()
        self.evaluated = False
        """Whether the last ``tick`` evaluated (an env shared with evaluation needs a reset)."""
        self.state = runner.state
        """The run's counters and books, which the session keeps."""
        self._next_log = self._first_log = self.state.env_steps + cfg.log_every
        self._next_keep = _next_multiple(self.state.env_steps, cfg.keep_every)

    def __enter__(self) -> TrainSession:
        super().__enter__()
        return self

    def summary(self, last: dict[str, float] | None) -> str:
        return super().summary(last) + f"; training cost {float(self.state.train_cost):,.0f}"

    def add_steps(self, n: int, sums: Mapping[str, Number], rejected: Number,
                  cost: Number) -> None:
        """``n`` collected transitions: per-term sums, gate rejections, total cost."""
        self.state.add_cost(cost)
        self.window.add_steps(n, sums, rejected)

    def add_episodes(self, episodes: Episodes) -> None:
        """Finished training episodes (their costs enter the Lagrange multiplier's window)."""
        self.window.add_episodes(episodes)
        self.runner.agent.lagrange.add_episodes(episodes.costs, episodes.ended)

    def add_losses(self, metrics: Mapping[str, Number]) -> None:
        self.window.add_losses(metrics)

    def tick(self) -> bool:
        """After a round: log, evaluate, keep (``keep_every``), apply the stop rules,
        checkpoint. True: stop."""
        r, cfg, state = self.runner, self.runner.cfg, self.state
        self.clock()
        self.evaluated = False
        if cfg.safety in ("lagrangian", "both"):
            r.agent.lagrange.step()
        if state.env_steps >= self._next_log:
            self._next_log += cfg.log_every
            r.log_metrics(self.window.flush(state.elapsed))
            self.show(sps=short_count(self.window.sps), success=self.window.success_text,
                      cost=self.window.cost_text)
        elif self._next_log == self._first_log and (rate := self.rate()) is not None:
            self.show(sps=f"{rate:.2g}" if rate < 10 else short_count(rate))  # before a log
        self.show()
        result = None
        if state.env_steps >= state.next_eval:
            result = r.evaluate_now()
            self.evaluated = True
        if cfg.keep_every and state.env_steps >= self._next_keep:  # kept before any stop
            self._next_keep = _next_multiple(state.env_steps, cfg.keep_every)
            r.keep()
        return self.stop_at(result)


def _next_multiple(steps: int, every: int) -> int:
    """The first multiple of ``every`` above ``steps`` (0 when ``every`` is 0: never used)."""
    return (steps // every + 1) * every if every else 0


def rejected_count(rejected: torch.Tensor | None) -> Number:
    """Gate rejections of one step (None: no gate)."""
    return 0.0 if rejected is None else rejected.sum()
