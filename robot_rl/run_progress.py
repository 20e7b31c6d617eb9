"""The training bar's progress, toward whichever limit will end the run.

A run ends at ``total`` counts (env steps, gradient steps, rounds) or at its time budget,
whichever comes first. At a constant rate the limit that ends it first is the one with the
larger fraction done, so the bar shows that fraction and its time left:

    steps   done / total          left = (total - done) / (the count's rate since the start)
    time    elapsed / budget      left = budget - elapsed

(a target success ends a run too, but when cannot be foreseen). ``LimitBar`` and
``TimeLeft`` draw ``Limit.fraction`` and ``Limit.left`` from the task's fields; ``Count``
writes the total short (``2M``). With a narrow bar and no elapsed-time column (the stop line
and the evaluation lines give it) the line fits an 80-column terminal.
"""

from __future__ import annotations

import dataclasses
import math

from rich.progress import BarColumn, ProgressColumn, Task
from rich.progress_bar import ProgressBar
from rich.text import Text


@dataclasses.dataclass(frozen=True)
class Limit:
    """Where a run stands against its two limits (see the module docstring)."""

    fraction: float
    """Of the binding limit, 0 .. 1."""
    left: float | None
    """Seconds left at the binding limit (None: no rate measured yet)."""
    binding: str
    """``steps`` or ``time``."""

    @staticmethod
    def of(done: int, total: int, elapsed: float, budget: float | None,
           rate: float | None) -> Limit:
        """``done`` of ``total`` counts after ``elapsed`` seconds of a ``budget`` (None: no
        budget), counting at ``rate`` per second (None: not measured yet)."""
        steps = min(1.0, done / total) if total > 0 else 1.0
        steps_left = None if not rate or rate <= 0 else max(0.0, (total - done) / rate)
        if budget is None or budget <= 0:
            return Limit(steps, steps_left, "steps")
        time_frac = min(1.0, elapsed / budget)
        if time_frac >= steps:
            return Limit(time_frac, max(0.0, budget - elapsed), "time")
        return Limit(steps, steps_left, "steps")


def short_count(n: float) -> str:
    """``n`` in at most five characters: 400k, 2M, 1.5M, 12.3k, 999."""
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= size:
            v = n / size
            return f"{v:.0f}{suffix}" if v == round(v) or v >= 100 else f"{v:.3g}{suffix}"
    return f"{n:,.0f}"


def clock(seconds: float | None) -> str:
    """M:SS under an hour, else H:MM:SS; -:-- where unknown."""
    if seconds is None or not math.isfinite(seconds):
        return "-:--"
    s = int(round(seconds))
    if s < 3600:
        return f"{s // 60}:{s % 60:02d}"
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


class LimitBar(BarColumn):
    """The bar at ``task.fields["fraction"]`` (the binding limit's)."""

    def render(self, task: Task) -> ProgressBar:
        return ProgressBar(total=1.0, completed=float(task.fields.get("fraction", 0.0)),
                           width=None if self.bar_width is None else max(1, self.bar_width),
                           pulse=False, animation_time=task.get_time(), style=self.style,
                           complete_style=self.complete_style,
                           finished_style=self.finished_style, pulse_style=self.pulse_style)


class Count(ProgressColumn):
    """``done/total unit``, both short: 20k/2M steps, 1.99M/2M steps."""

    def __init__(self, unit: str):
        super().__init__()
        self.unit = unit

    def render(self, task: Task) -> Text:
        total = short_count(task.total) if task.total is not None else "?"
        return Text(f"{short_count(task.completed)}/{total} {self.unit}",
                    style="progress.download")


class TimeLeft(ProgressColumn):
    """``task.fields["left"]`` as H:MM:SS left (at the binding limit)."""

    def render(self, task: Task) -> Text:
        return Text(f"{clock(task.fields.get('left'))} left", style="progress.remaining")
