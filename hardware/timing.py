"""Fixed-rate loops on a general-purpose OS: deadline sleeping and latency statistics.

``Rate`` sleeps to absolute deadlines (start + k * period), so one late tick does not shift
the ones after it; when a tick overruns by more than a whole period the schedule restarts
from now (``skipped`` counts the lost ticks) instead of bursting to catch up. On Linux the
thread's timer slack is cut from 50 µs to 1 µs, which is most of the wake-up error of
``time.sleep`` at kilohertz rates.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import time
from collections.abc import Callable, Iterator

import numpy as np

from robot_rl.errors import ConfigError

_PR_SET_TIMERSLACK = 29


def tighten_timer_slack(ns: int = 1000) -> bool:
    """Set this thread's timer slack (Linux); True if it was set."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return ctypes.CDLL(None).prctl(_PR_SET_TIMERSLACK, ns, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


@contextlib.contextmanager
def loop_thread_settings(period: float, priority: int = 0) -> Iterator[str | None]:
    """Settings for a fixed-rate loop thread, undone on exit; yields why the real-time
    priority was refused (None if granted or not asked for).

    * Python's GIL switch interval drops to a twentieth of the period (default 5 ms): a loop
      thread waking while another thread runs Python code gets the GIL within it.
    * ``priority`` > 0: SCHED_FIFO at that priority for this thread (Linux), so the kernel
      wakes it ahead of everything else; needs root or an rtprio limit
      (/etc/security/limits.conf)."""
    old_switch = sys.getswitchinterval()
    sys.setswitchinterval(min(old_switch, max(period / 20, 1e-5)))
    refused: str | None = None
    old_sched: tuple[int, os.sched_param] | None = None
    if priority > 0:
        if not hasattr(os, "sched_setscheduler"):
            refused = "SCHED_FIFO is not available on this platform"
        else:
            try:
                old_sched = (os.sched_getscheduler(0), os.sched_getparam(0))
                os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
            except (PermissionError, OSError) as e:
                refused = f"SCHED_FIFO priority {priority} refused ({e}); set an rtprio limit"
                old_sched = None
    try:
        yield refused
    finally:
        sys.setswitchinterval(old_switch)
        if old_sched is not None:
            with contextlib.suppress(OSError):
                os.sched_setscheduler(0, *old_sched)


class Rate:
    """Deadline-based fixed-rate sleeping (see module docstring)."""

    def __init__(self, hz: float, spin: float = 0.0):
        if not hz > 0:
            raise ConfigError(f"rate must be positive, got {hz} Hz")
        self.period = 1.0 / hz
        self.spin = spin
        """Busy-wait this long before each deadline [s] (0: sleep only)."""
        self.next = time.monotonic()
        self.skipped = 0
        """Ticks dropped because a tick ran over by more than a period."""
        tighten_timer_slack()

    def sleep(self) -> float:
        """Wait for the next deadline; returns how late the wake-up was [s]."""
        self.next += self.period
        now = time.monotonic()
        if now > self.next + self.period:  # far behind: restart the schedule from now
            missed = int((now - self.next) / self.period)
            self.skipped += missed
            self.next += missed * self.period
        delay = self.next - now - self.spin
        if delay > 0:
            time.sleep(delay)
        while time.monotonic() < self.next:
            pass
        return time.monotonic() - self.next


class Samples:
    """A growing float64 record (preallocated, doubling), summarised in percentiles."""

    def __init__(self, capacity: int = 4096):
        self._a = np.empty(capacity)
        self.n = 0

    def add(self, x: float) -> None:
        if self.n == self._a.size:
            self._a = np.concatenate([self._a, np.empty(self._a.size)])
        self._a[self.n] = x
        self.n += 1

    @property
    def values(self) -> np.ndarray:
        return self._a[:self.n]

    def percentiles(self, scale: float = 1.0) -> tuple[float, float, float]:
        """(p50, p99, max) times ``scale``; NaNs when empty."""
        return percentiles(self.values, scale)


def percentiles(values: np.ndarray, scale: float = 1.0) -> tuple[float, float, float]:
    """(p50, p99, max) of ``values`` times ``scale``; NaNs when empty."""
    if values.size == 0:
        return (float("nan"),) * 3
    v = values * scale
    p50, p99 = np.percentile(v, [50, 99])
    return float(p50), float(p99), float(v.max())


class Throttle:
    """At most one message per ``interval`` seconds; the ones in between are counted and
    reported with the next one that passes (for log lines about repeated bad input)."""

    def __init__(self, emit: Callable[[str], object], interval: float = 1.0):
        self.emit = emit
        self.interval = interval
        self._last = -float("inf")
        self._suppressed = 0

    def __call__(self, msg: str) -> None:
        now = time.monotonic()
        if now - self._last < self.interval:
            self._suppressed += 1
            return
        if self._suppressed:
            msg = f"{msg} ({self._suppressed} similar messages suppressed)"
        self._suppressed = 0
        self._last = now
        self.emit(msg)
