"""What the training loops share (the SAC runner and behaviour cloning): when to stop and
checkpoint, Ctrl-C as a request read between two steps, the TensorBoard writer."""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rich.console import Console


class StopRules:
    """When a training loop stops, and when it checkpoints (both runners' rules)."""

    def __init__(self, target_success: float | None, time_budget: float | None,
                 checkpoint_every: float):
        self.target_success, self.time_budget = target_success, time_budget
        self.checkpoint_every = checkpoint_every
        self._last_checkpoint = time.perf_counter()

    def target_reached(self, success_rate: float) -> str | None:
        """The stop reason if an evaluation's success reaches the target, else None."""
        if self.target_success is not None and success_rate >= self.target_success:
            return f"target success {self.target_success:.0%} reached"
        return None

    def out_of_time(self, elapsed: float) -> str | None:
        """The stop reason once ``elapsed`` seconds spend the time budget, else None."""
        if self.time_budget is not None and elapsed >= self.time_budget:
            return f"time budget {self.time_budget:g} s spent"
        return None

    def checkpoint_due(self) -> bool:
        """True every ``checkpoint_every`` seconds (the clock restarts when it says so)."""
        if time.perf_counter() - self._last_checkpoint < self.checkpoint_every:
            return False
        self._last_checkpoint = time.perf_counter()
        return True


@contextlib.contextmanager
def saving_on_interrupt(save: Callable[[], object], console: Console
                        ) -> Iterator[StopRequest]:
    """``stop_requests`` for a training loop, which raises KeyboardInterrupt when it sees a
    request: the checkpoint is written (``save``) before the interrupt goes on."""
    try:
        with stop_requests() as stop:
            yield stop
    except KeyboardInterrupt:
        console.print("interrupted: writing a checkpoint (Ctrl-C again to abandon it; the "
                      "previous one stays intact)")
        save()
        raise


class StopRequest:
    requested = False


@contextlib.contextmanager
def stop_requests() -> Iterator[StopRequest]:
    """SIGINT as a request the training loop reads between two steps, where stopping leaves
    nothing half done (an exception raised by Python's default handler can land inside a
    checkpoint write, a logger's lock or a library's thread pool, and hung a loaded CI run).
    A second SIGINT raises at once, to abandon the checkpoint. Outside the main thread (no
    signal handlers there) nothing is installed."""
    stop = StopRequest()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return

    def request(signum: int, frame: object) -> None:
        stop.requested = True
        signal.signal(signal.SIGINT, signal.default_int_handler)

    previous = signal.signal(signal.SIGINT, request)
    try:
        yield stop
    finally:
        signal.signal(signal.SIGINT, previous)


def summary_writer(path: Path) -> Any:
    from torch.utils.tensorboard import SummaryWriter

    return SummaryWriter(str(path))
