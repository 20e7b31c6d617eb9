"""The bookkeeping of one off-policy training run, whoever collects the data: the SAC runner
steps its own env, the distributed learner (``robot_rl.dist``) receives rollouts from
env-runner actors. Both feed a ``TrainSession`` the same counts and call ``tick`` once per
round of collection and learning:

    with TrainSession(runner) as session:
        while runner.env_steps < cfg.total_steps:
            session.check_interrupt()
            ...collect, store, learn; runner.env_steps += n...
            session.add_steps(n, term_sums, rejected, cost)
            session.add_episodes(returns, costs, successes)
            if session.tick():      # multiplier, log, evaluate, stop rules, checkpoint
                break

On leaving, the session evaluates once more unless the last evaluation was at this step,
writes the checkpoint, closes TensorBoard and prints why it stopped. Ctrl-C is a request read
by ``check_interrupt`` (between two rounds): the checkpoint is written, then the interrupt
goes on.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

import torch
from rich.progress import (
    BarColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from robot_rl.checkpoint import CHECKPOINT
from robot_rl.evaluate import EvalResult
from robot_rl.run_control import StopRules, saving_on_interrupt, summary_writer


class SessionHost(Protocol):
    """What a ``TrainSession`` keeps the books of: a ``Runner``, or the distributed
    learner (``robot_rl.dist``)."""

    cfg: Any
    """A ``TrainConfig`` (stop rules, logging, evaluation, progress bar)."""
    console: Any
    run_dir: Path
    agent: Any
    """The SAC agent (its Lagrange multiplier steps every round)."""
    env_steps: int
    elapsed: float
    train_cost: float
    history: list[dict[str, float]]
    next_eval: int
    """The env step of the next evaluation."""
    writer: Any
    """The TensorBoard writer (the session opens and closes it)."""

    def evaluate_now(self) -> EvalResult: ...

    def log_metrics(self, metrics: dict[str, float]) -> None: ...

    def save(self) -> Path: ...

    def keep(self) -> Path: ...


def step_sums(info: dict[str, Any]) -> dict[str, float]:
    """The sums over envs of one step's reward terms, cost terms and shield interventions,
    under their TensorBoard names (``reward/<term>``, ``cost/<term>``,
    ``safety/shield_<what>``)."""
    out: dict[str, float] = {}
    for group, prefix in (("reward_terms", "reward/"), ("cost_terms", "cost/"),
                          ("safety", "safety/shield_")):
        for name, v in info.get(group, {}).items():
            out[prefix + name] = float(v.sum())
    return out


class TrainWindow:
    """Training statistics since the last log line."""

    def __init__(self) -> None:
        self._t = time.perf_counter()
        self.sps = 0.0
        self.success_text = "-"
        self.cost_text = "-"
        self._reset()

    def _reset(self) -> None:
        self.returns: list[float] = []
        self.costs: list[float] = []
        self.success: list[float] = []
        self.losses: dict[str, list[float]] = {}
        self.terms: dict[str, float] = {}
        self.n_steps = 0
        self.rejected = 0.0

    def add_steps(self, n: int, sums: dict[str, float], rejected: float) -> None:
        """``n`` env transitions whose per-term sums are ``sums`` and of which ``rejected``
        were gate rejections."""
        self.n_steps += n
        for k, v in sums.items():
            self.terms[k] = self.terms.get(k, 0.0) + v
        self.rejected += rejected

    def add_episodes(self, returns: list[float], costs: list[float],
                     success: list[float]) -> None:
        self.returns.extend(returns)
        self.costs.extend(costs)
        self.success.extend(success)

    def add_losses(self, metrics: dict[str, float]) -> None:
        for k, v in metrics.items():
            self.losses.setdefault(k, []).append(v)

    def flush(self, elapsed: float) -> dict[str, float]:
        now = time.perf_counter()
        self.sps = self.n_steps / max(now - self._t, 1e-9)
        self._t = now
        out = {k: v / max(self.n_steps, 1) for k, v in self.terms.items()}
        out.update({k: sum(v) / len(v) for k, v in self.losses.items()})
        out["perf/sps"] = self.sps
        out["safety/gate_rejected_rate"] = self.rejected / max(self.n_steps, 1)
        if self.returns:
            out["train/episode_return"] = sum(self.returns) / len(self.returns)
            out["train/episode_cost"] = sum(self.costs) / len(self.costs)
            out["train/success_rate"] = sum(self.success) / len(self.success)
            self.success_text = f"{out['train/success_rate']:.0%}"
            self.cost_text = f"{out['train/episode_cost']:.2f}"
        out["charts/elapsed_seconds"] = elapsed
        self._reset()
        return out


class TrainSession:
    """Logging, evaluation, stop rules, checkpoints, the Lagrange multiplier's steps and the
    progress bar of ``runner``'s training (see the module docstring)."""

    def __init__(self, runner: SessionHost):
        self.runner = runner
        cfg = runner.cfg
        self.window = TrainWindow()
        self.rules = StopRules(cfg.target_success, cfg.time_budget, cfg.checkpoint_every,
                               cfg.target_evals)
        self.stop_reason = "total_steps reached"
        self.evaluated = False
        """Whether the last ``tick`` evaluated (an env shared with evaluation needs a reset)."""
        self._next_log = runner.env_steps + cfg.log_every
        self._next_keep = _next_multiple(runner.env_steps, cfg.keep_every)
        self._start = time.perf_counter() - runner.elapsed
        columns = (TextColumn("[bold]{task.description}"), BarColumn(),
                   TextColumn("{task.completed:,.0f}/{task.total:,.0f} steps"),
                   TextColumn("{task.fields[sps]:>6,.0f} sps"),
                   TextColumn("success {task.fields[success]}"),
                   TextColumn("cost {task.fields[cost]}"),
                   TimeElapsedColumn(), TimeRemainingColumn())
        self.progress = Progress(*columns, console=runner.console, disable=not cfg.progress)
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> TrainSession:
        r = self.runner
        r.writer = summary_writer(r.run_dir / "tb")
        self._stop = self._stack.enter_context(saving_on_interrupt(r.save, r.console))
        self._stack.enter_context(self.progress)
        self._bar = self.progress.add_task(f"{r.cfg.task} {r.cfg.algo}",
                                           total=r.cfg.total_steps, completed=r.env_steps,
                                           sps=0.0, success="-", cost="-")
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stack.__exit__(exc_type, exc, tb)
        r = self.runner
        if exc_type is not None:
            r.writer.close()
            return
        if not r.history or r.history[-1]["env_steps"] != r.env_steps:
            r.evaluate_now()
        r.save()
        r.writer.close()
        last = r.history[-1]
        r.console.print(f"stopped: {self.stop_reason}. {r.env_steps:,} env steps in "
                        f"{r.elapsed:.0f} s; last eval success {last['success_rate']:.0%},"
                        f" episode cost {last['episode_cost']:.2f}; training cost "
                        f"{r.train_cost:,.0f}. Checkpoint: {r.run_dir / CHECKPOINT}",
                        soft_wrap=True)
        if (short := self.rules.short_of_target(last["success_rate"])) is not None:
            more = "" if r.cfg.time_budget is None else \
                f" --time-budget {2 * r.cfg.time_budget:g}"
            r.console.print(f"[bold red]{short}[/]: the policy is not yet as good as asked. "
                            f"Train on from here with:")
            r.console.print(f"  robot-rl train --resume {r.run_dir}{more} --target-success "
                            f"{r.cfg.target_success:g}", soft_wrap=True, highlight=False)

    def check_interrupt(self) -> None:
        """Raise KeyboardInterrupt if Ctrl-C was pressed (the checkpoint is then written)."""
        if self._stop.requested:
            raise KeyboardInterrupt

    def add_steps(self, n: int, sums: dict[str, float], rejected: float, cost: float) -> None:
        """``n`` collected transitions: per-term sums, gate rejections, total cost."""
        self.runner.train_cost += cost
        self.window.add_steps(n, sums, rejected)

    def add_episodes(self, returns: list[float], costs: list[float],
                     success: list[float]) -> None:
        """Finished training episodes (their costs enter the Lagrange multiplier's window)."""
        self.window.add_episodes(returns, costs, success)
        self.runner.agent.lagrange.add_episodes(costs)

    def add_losses(self, metrics: dict[str, float]) -> None:
        self.window.add_losses(metrics)

    def tick(self) -> bool:
        """After a round: log, evaluate, keep (``keep_every``), apply the stop rules,
        checkpoint. True: stop."""
        r, cfg = self.runner, self.runner.cfg
        r.elapsed = time.perf_counter() - self._start
        self.evaluated = False
        if cfg.safety in ("lagrangian", "both"):
            r.agent.lagrange.step()
        if r.env_steps >= self._next_log:
            self._next_log += cfg.log_every
            r.log_metrics(self.window.flush(r.elapsed))
            self.progress.update(self._bar, sps=self.window.sps,
                                 success=self.window.success_text, cost=self.window.cost_text)
        self.progress.update(self._bar, completed=r.env_steps)
        result = None
        if r.env_steps >= r.next_eval:
            result = r.evaluate_now()
            self.evaluated = True
        if cfg.keep_every and r.env_steps >= self._next_keep:  # kept before any stop
            self._next_keep = _next_multiple(r.env_steps, cfg.keep_every)
            r.keep()
        if result is not None and (reason := self.rules.target_reached(result.success_rate)):
            self.stop_reason = reason
            return True
        if reason := self.rules.out_of_time(r.elapsed):
            self.stop_reason = reason
            return True
        if self.rules.checkpoint_due():
            r.save()
        return False


def _next_multiple(steps: int, every: int) -> int:
    """The first multiple of ``every`` above ``steps`` (0 when ``every`` is 0: never used)."""
    return (steps // every + 1) * every if every else 0


def rejected_count(rejected: torch.Tensor | None) -> float:
    """Gate rejections of one step (None: no gate)."""
    return 0.0 if rejected is None else float(rejected.sum())
