"""The frame of every training run's loop, whatever it counts (env steps of the SAC runner and
the distributed learner, gradient steps of behaviour cloning, rounds of filtered BC):

    with RunLoop(host, "push bc-flow", total=cfg.steps, unit="gradient steps",
                 count="grad_steps") as loop:
        while host.grad_steps < cfg.steps:
            loop.check_interrupt()
            ...learn; host.grad_steps += 1...
            loop.clock()
            loop.show(loss=...)                 # the progress bar
            result = host.evaluate_now() if due else None
            if loop.stop_at(result):            # target, time budget; else a due checkpoint
                break

It opens the TensorBoard writer (``host.writer``), turns Ctrl-C into a request read between
two steps (the checkpoint is written, then the interrupt goes on), draws the progress bar,
applies the stop rules, and on leaving evaluates once more unless the last evaluation was at
this count, writes the checkpoint, closes the writer and prints why it stopped.
``train_session.TrainSession`` is this frame with the off-policy runs' books (training
windows, the Lagrange multiplier, kept checkpoints).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

from rich.progress import Progress, ProgressColumn, TextColumn

import robot_rl
from robot_rl.checkpoint import CHECKPOINT
from robot_rl.evaluate import EvalResult
from robot_rl.run_config import RunConfig
from robot_rl.run_control import StopRules, saving_on_interrupt, summary_writer
from robot_rl.run_progress import Count, Limit, LimitBar, TimeLeft


class LoopHost(Protocol):
    """What a ``RunLoop`` frames: a runner with a config, a run directory, an evaluation
    history and a checkpoint."""

    @property
    def cfg(self) -> RunConfig:
        """Its ``target_success``, ``time_budget``, ``checkpoint_every`` and ``progress``."""
        ...

    console: Any
    run_dir: Path
    elapsed: float
    """Seconds of training, over resumes (the loop keeps it)."""
    history: list[dict[str, float]]
    """The evaluations, each with the count it was made at."""
    writer: Any
    """The TensorBoard writer (the loop opens and closes it)."""

    def evaluate_now(self) -> EvalResult | None: ...

    def save(self) -> Path: ...


class RunLoop:
    """See the module docstring. ``count``: the host's attribute (and its history's key)
    that the loop counts; ``columns``: the bar's own columns between the count and the
    clocks, ``fields`` their first values."""

    def __init__(self, host: LoopHost, label: str, total: int, *, unit: str, count: str,
                 columns: tuple[ProgressColumn, ...] = (), fields: dict[str, Any] | None = None,
                 target_evals: int = 1, stop_reason: str | None = None,
                 resume_command: str | None = None):
        cfg = host.cfg
        self.host, self.unit, self.count = host, unit, count
        self.rules = StopRules(cfg.target_success, cfg.time_budget, cfg.checkpoint_every,
                               target_evals)
        self.stop_reason = stop_reason or f"{total:,} steps done"
        self.resume_command = resume_command
        """The command that trains on (``robot-rl train``): printed when the run stops short
        of its target; None: nothing printed."""
        self._start = time.perf_counter() - host.elapsed
        self._label, self._total, self._fields = label, total, fields or {}
        self._budget = cfg.time_budget
        self._since: tuple[int, float] | None = None
        """(count, training seconds) when this process's loop began: the rate's origin."""
        self.progress = Progress(TextColumn("[bold]{task.description}"), LimitBar(bar_width=6),
                                 Count(unit.split()[-1]), *columns, TimeLeft(),
                                 console=host.console, disable=not cfg.progress)
        self._stack = contextlib.ExitStack()
        self._entered = time.perf_counter()
        self._command_start: float | None = None
        self._overhead: tuple[float | None, float] | None = None
        """Seconds from the command's start to the loop, and from its end to the report."""

    @property
    def done(self) -> int:
        """The host's count now."""
        return int(getattr(self.host, self.count))

    def __enter__(self) -> RunLoop:
        h = self.host
        h.writer = summary_writer(h.run_dir / "tb")
        self._stop = self._stack.enter_context(saving_on_interrupt(h.save, h.console))
        self._stack.enter_context(self.progress)
        self._entered = time.perf_counter()
        self._command_start = robot_rl.take_command_start()
        self._since = (self.done, h.elapsed)
        self._bar = self.progress.add_task(self._label, total=self._total,
                                           completed=self.done, **self._fields,
                                           **dataclasses.asdict(self.limit()))
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stack.__exit__(exc_type, exc, tb)
        h = self.host
        if exc_type is not None:
            h.writer.close()
            return
        ended = time.perf_counter()
        if not h.history or h.history[-1][self.count] != self.done:
            h.evaluate_now()
        h.save()
        h.writer.close()
        self._overhead = (None if self._command_start is None
                          else self._entered - self._command_start, time.perf_counter() - ended)
        self.report()

    def summary(self, last: dict[str, float] | None) -> str:
        """What the stop line says of the last evaluation ("" where it measured no
        success)."""
        if last is None or math.isnan(last["success_rate"]):
            return ""
        return f"; last eval success {last['success_rate']:.0%}, episode cost " \
               f"{last['episode_cost']:.2f}"

    def report(self) -> None:
        """Why it stopped, where the checkpoint is, and how to train on where the last
        evaluation is short of the target."""
        h = self.host
        last = h.history[-1] if h.history else None
        h.console.print(f"stopped: {self.stop_reason}. {self.done:,} {self.unit} in "
                        f"{h.elapsed:.0f} s{self.summary(last)}.", highlight=False)
        if h.cfg.time_budget is not None and self._overhead is not None:
            # the budget counts training; say what else the command's wall time holds
            start, end = self._overhead
            before = "" if start is None else f"{start:.0f} s of start-up before it, "
            h.console.print(f"the time budget counts training: {before}{end:.0f} s for the "
                            f"last evaluation and saving after it", highlight=False)
        # a line of its own, never wrapped: it is copied into the next command
        h.console.print(f"checkpoint: {h.run_dir / CHECKPOINT}", soft_wrap=True,
                        highlight=False)
        if last is None or self.resume_command is None:
            return
        if (short := self.rules.short_of_target(last["success_rate"])) is not None:
            cfg = h.cfg
            more = "" if cfg.time_budget is None else f" --time-budget {2 * cfg.time_budget:g}"
            h.console.print(f"[bold red]{short}[/]: the policy is not yet as good as asked. "
                            f"Train on from here with:")
            h.console.print(f"  {self.resume_command} --resume {h.run_dir}{more} "
                            f"--target-success {cfg.target_success:g}", soft_wrap=True,
                            highlight=False)

    def check_interrupt(self) -> None:
        """Raise KeyboardInterrupt if Ctrl-C was pressed (the checkpoint is then written)."""
        if self._stop.requested:
            raise KeyboardInterrupt

    def clock(self) -> float:
        """The host's training seconds, brought up to now."""
        self.host.elapsed = time.perf_counter() - self._start
        return self.host.elapsed

    def rate(self) -> float | None:
        """Counts per training second since this process's loop began (None: none yet)."""
        done, elapsed = self.done, self.host.elapsed
        if self._since is not None and elapsed - self._since[1] > 0 and done > self._since[0]:
            return (done - self._since[0]) / (elapsed - self._since[1])
        return None

    def limit(self) -> Limit:
        """Where the run stands against its step count and its time budget
        (``run_progress``), the rate measured since this process's loop began."""
        return Limit.of(self.done, self._total, self.host.elapsed, self._budget, self.rate())

    def show(self, **fields: Any) -> None:
        """The bar at the host's count, with new values of its own columns."""
        self.progress.update(self._bar, completed=self.done, **fields,
                             **dataclasses.asdict(self.limit()))

    def stop_at(self, result: EvalResult | None) -> bool:
        """After a step and its evaluation (None: none): True where the target is reached
        or the time budget spent (``stop_reason`` says which); else the checkpoint where
        one is due."""
        if result is not None and (reason := self.rules.target_reached(result.success_rate)):
            self.stop_reason = reason
            return True
        if reason := self.rules.out_of_time(self.host.elapsed):
            self.stop_reason = reason
            return True
        if self.rules.checkpoint_due():
            self.host.save()
        return False
