"""The timing loop the throughput benchmarks share."""

from __future__ import annotations

import time
from collections.abc import Callable


def best_rate(step: Callable[[], None], batch: int, seconds: float, repeats: int) -> float:
    """Best env-steps/s of ``step`` (advancing ``batch`` envs) over ``repeats`` timed runs."""
    for _ in range(3):
        step()
    best = 0.0
    for _ in range(repeats):
        n, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < seconds or n < 3:
            step()
            n += 1
        best = max(best, n * batch / elapsed)
    return best
