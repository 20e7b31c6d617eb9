"""Polling with a deadline, the one way tests wait for something that happens in another
thread or process (never a fixed sleep, never a first frame).

    assert wait_for(lambda: robot.steps > 10, timeout=20)
    wait_until(lambda: run_dir.exists(), 60, "the run directory")   # raises on timeout
    frame = poll(camera.poll, 20)                                   # the first non-None
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def poll(fn: Callable[[], T | None], timeout: float, every: float = 0.01) -> T | None:
    """The first value of ``fn()`` that is not None, or None once ``timeout`` seconds have
    passed (``fn`` is asked once more at the deadline)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if (value := fn()) is not None:
            return value
        time.sleep(every)
    return fn()


def wait_for(cond: Callable[[], bool], timeout: float, every: float = 0.01) -> bool:
    """Whether ``cond()`` came true within ``timeout`` seconds."""
    return poll(lambda: True if cond() else None, timeout, every) is not None


def wait_until(cond: Callable[[], bool], timeout: float, what: str, every: float = 0.05) -> None:
    """Wait for ``cond()``; AssertionError naming ``what`` if it is not true within
    ``timeout`` seconds."""
    if not wait_for(cond, timeout, every):
        raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
