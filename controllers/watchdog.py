"""Watchdog and emergency stop for the deploy loop (and any loop that must fail safe).

``Watchdog``: each fresh observation is fed with its timestamp; ``stale(now)`` is true once the
newest one is older than ``max_missed`` control periods. The loop then commands hold.

``EStop``: ``trigger(reason)`` latches; the stop stays active, whatever the inputs, until an
explicit ``reset()``. The loop commands hold while it is active.

Times are seconds from any monotonic clock (``time.monotonic`` by default).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from robot_rl.errors import ConfigError


class Watchdog:
    """Detects stale observations (see module docstring)."""

    def __init__(self, period: float, max_missed: int = 3,
                 clock: Callable[[], float] = time.monotonic):
        if period <= 0 or max_missed < 1:
            raise ConfigError(f"watchdog needs period > 0 and max_missed >= 1, got {period}, "
                              f"{max_missed}")
        self.timeout = period * max_missed
        """Observations older than this are stale [s]."""
        self.clock = clock
        self.last: float | None = None
        """Timestamp of the newest observation fed, or None before the first."""
        self.trips = 0
        """How many times the watchdog went from fresh to stale."""
        self._was_stale = True

    def feed(self, stamp: float | None = None) -> None:
        """Record a fresh observation taken at ``stamp`` (default: now)."""
        stamp = self.clock() if stamp is None else stamp
        if self.last is None or stamp > self.last:
            self.last = stamp

    def stale(self, now: float | None = None) -> bool:
        """True when no observation is newer than ``timeout`` (also before the first one)."""
        now = self.clock() if now is None else now
        stale = self.last is None or now - self.last > self.timeout
        if stale and not self._was_stale:
            self.trips += 1
        self._was_stale = stale
        return stale


class EStop:
    """A latching emergency stop (see module docstring)."""

    def __init__(self) -> None:
        self.reason: str | None = None
        """Why the stop was triggered, or None while released."""
        self.count = 0
        """How many times it was triggered."""

    @property
    def active(self) -> bool:
        return self.reason is not None

    def trigger(self, reason: str = "e-stop") -> None:
        """Latch the stop (a second trigger keeps the first reason)."""
        if self.reason is None:
            self.reason = reason
            self.count += 1

    def reset(self) -> None:
        """Release the stop; only an explicit call does."""
        self.reason = None
