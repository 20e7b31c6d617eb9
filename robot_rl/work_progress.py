"""Progress of a long command that is not a training run (``robot-rl bench sim``, ``bench
controllers``, ``eval``): a bar in a terminal, lines in a log.

    with WorkProgress(console, "bench sim", total=23, unit="figures") as work:
        work.start("pusher, 16 envs: ours")     # what runs now; done = items finished
        ...
        work.advance()

In a terminal a transient bar shows ``label [bar] done/total unit  M:SS  what``; where the
output is a file or a CI log, each ``start`` prints one line (``label [3/23, 0:42] what``)
and ``update`` prints one at most every ``log_every`` seconds, so a log shows where a long
command is without a line per episode.
"""

from __future__ import annotations

import time
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from robot_rl.run_progress import clock


class WorkProgress:
    """Items of a long command done out of ``total`` (see the module docstring)."""

    def __init__(self, console: Console, label: str, total: int, unit: str = "",
                 log_every: float = 10.0):
        self.console, self.label, self.total, self.unit = console, label, total, unit
        self.log_every = log_every
        self.done = 0
        self.what = ""
        self._start = time.perf_counter()
        self._logged = -float("inf")
        self._bar: Progress | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> WorkProgress:
        self._start = time.perf_counter()
        if self.console.is_terminal:
            self._bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(bar_width=12),
                                 TextColumn("{task.completed}/{task.total} " + self.unit),
                                 TimeElapsedColumn(), TextColumn("{task.fields[what]}"),
                                 console=self.console, transient=True)
            self._bar.start()
            self._task = self._bar.add_task(self.label, total=self.total, what="")
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.stop()

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self._start

    def line(self) -> str:
        """The log line of where the work stands now."""
        count = f"{self.done}/{self.total}" + (f" {self.unit}" if self.unit else "")
        return f"{self.label} [{count}, {clock(self.elapsed)}] {self.what}".rstrip()

    def start(self, what: str) -> None:
        """``what`` runs now (a log gets a line)."""
        self.what = what
        self._show(log=True)

    def advance(self, n: int = 1) -> None:
        """``n`` more items finished (a log gets a line when all are: ``start`` announces
        the next)."""
        self._set(self.done + n)
        self._show(log=self.done == self.total)

    def update(self, done: int, what: str | None = None) -> None:
        """``done`` items finished (a log gets a line every ``log_every`` seconds, and one
        when all are done)."""
        self._set(done, what)
        due = time.perf_counter() - self._logged >= self.log_every
        self._show(log=due or self.done == self.total)

    def _set(self, done: int, what: str | None = None) -> None:
        self.done = min(done, self.total)
        if what is not None:
            self.what = what
        if self.done == self.total:
            self.what = "done"

    def _show(self, log: bool) -> None:
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, completed=self.done, what=self.what)
        elif log:
            self._logged = time.perf_counter()
            self.console.print(self.line(), markup=False, highlight=False, soft_wrap=True)
