"""Feature statistics as LeRobot keeps them: min, max, mean, std and count per element.

Each episode row carries its own (``stats/<feature>/<stat>`` columns); meta/stats.json is
their exact merge (Chan et al.'s pairwise update of mean and variance), so adding an episode
never re-reads the ones before it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

STATS = ("min", "max", "mean", "std", "count")


def feature_stats(x: np.ndarray) -> dict[str, np.ndarray]:
    """Statistics of frames ``x`` (T, D) or (T,) over time; each (D,) or (1,)."""
    x = np.asarray(x, dtype=np.float64)
    x = x.reshape(len(x), -1)
    return {"min": x.min(0), "max": x.max(0), "mean": x.mean(0), "std": x.std(0),
            "count": np.array([len(x)])}


def merge_stats(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """The statistics of the union of the frames behind ``parts``."""
    if not parts:
        raise ValueError("no statistics to merge")
    n = np.asarray(parts[0]["count"], dtype=np.float64)[0]
    mean = np.asarray(parts[0]["mean"], dtype=np.float64)
    m2 = np.asarray(parts[0]["std"], dtype=np.float64) ** 2 * n
    lo, hi = np.asarray(parts[0]["min"]), np.asarray(parts[0]["max"])
    for p in parts[1:]:
        nb = np.asarray(p["count"], dtype=np.float64)[0]
        mb = np.asarray(p["mean"], dtype=np.float64)
        delta = mb - mean
        total = n + nb
        mean = mean + delta * nb / total
        m2 = m2 + np.asarray(p["std"], dtype=np.float64) ** 2 * nb + delta ** 2 * n * nb / total
        n = total
        lo, hi = np.minimum(lo, p["min"]), np.maximum(hi, p["max"])
    return {"min": lo, "max": hi, "mean": mean, "std": np.sqrt(m2 / n),
            "count": np.array([int(n)])}


def to_json(stats: dict[str, dict[str, np.ndarray]]) -> dict[str, dict[str, Any]]:
    return {k: {s: np.asarray(v).tolist() for s, v in d.items()} for k, d in stats.items()}
