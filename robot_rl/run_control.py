"""What the training loops share (the SAC runner and behaviour cloning): when to stop and
checkpoint, Ctrl-C as a request read between two steps, torch's thread count, the TensorBoard
writer."""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch
from rich.console import Console


class StopRules:
    """When a training loop stops, and when it checkpoints (both runners' rules)."""

    def __init__(self, target_success: float | None, time_budget: float | None,
                 checkpoint_every: float, target_evals: int = 1):
        if target_evals < 1:
            raise ValueError(f"target_evals must be >= 1, got {target_evals}")
        self.target_success, self.time_budget = target_success, time_budget
        self.checkpoint_every = checkpoint_every
        self.target_evals = target_evals
        self._streak = 0
        self._last_checkpoint = time.perf_counter()

    def target_reached(self, success_rate: float) -> str | None:
        """The stop reason once ``target_evals`` evaluations in a row (this one the last)
        reach the target, else None."""
        if self.target_success is None:
            return None
        self._streak = self._streak + 1 if success_rate >= self.target_success else 0
        if self._streak < self.target_evals:
            return None
        if self.target_evals == 1:
            return f"target success {self.target_success:.0%} reached"
        return f"target success {self.target_success:.0%} reached in {self.target_evals} " \
               f"evaluations in a row"

    def short_of_target(self, success_rate: float) -> str | None:
        """What is missing when training stops with the last evaluation below the target,
        else None (also without a target)."""
        if self.target_success is None or success_rate >= self.target_success:
            return None
        return f"target success {self.target_success:.0%} not reached (last evaluation " \
               f"{success_rate:.0%})"

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


@contextlib.contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """torch's intra-op thread count set to ``n`` for the block, then restored (None: leave
    torch's own, one per core). Small networks gain little from a second thread on an idle
    machine and lose several times over when another process holds a core: the threads of
    one matrix product wait for each other at every operation (docs/performance/training.md)."""
    if n is None:
        yield
        return
    if n < 1:
        raise ValueError(f"threads must be >= 1, got {n}")
    previous = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def summary_writer(path: Path) -> Any:
    from torch.utils.tensorboard import SummaryWriter

    return SummaryWriter(str(path))
