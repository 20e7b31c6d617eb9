"""Feature statistics as LeRobot keeps them: min, max, mean, std, count and the quantiles
q01, q10, q50, q90, q99 per element.

Each episode row carries its own (``stats/<feature>/<stat>`` columns), its quantiles exact;
meta/stats.json merges them without re-reading the frames: min, max, mean and std exactly
(Chan et al.'s pairwise update of mean and variance), the quantiles from the mixture of the
episodes' distributions, each episode's CDF taken piecewise linear through its knots
(min, q01, ..., q99, max). One episode's merge is its own quantiles; LeRobot itself averages
the episodes' quantiles weighted by their frame counts, which misplaces the tails (the mean of
the episodes' 1% points is not the data's 1% point).
"""

from __future__ import annotations

from typing import Any

import numpy as np

QUANTILES = {"q01": 0.01, "q10": 0.10, "q50": 0.50, "q90": 0.90, "q99": 0.99}
"""LeRobot's quantile statistics (its QUANTILES normalization reads q01 and q99)."""
STATS = ("min", "max", "mean", "std", "count", *QUANTILES)


def feature_stats(x: np.ndarray) -> dict[str, np.ndarray]:
    """Statistics of frames ``x`` (T, D) or (T,) over time; each (D,) or (1,)."""
    x = np.asarray(x, dtype=np.float64)
    x = x.reshape(len(x), -1)
    out = {"min": x.min(0), "max": x.max(0), "mean": x.mean(0), "std": x.std(0),
           "count": np.array([len(x)])}
    qs = np.quantile(x, list(QUANTILES.values()), axis=0)  # (Q, D)
    out.update({name: qs[k] for k, name in enumerate(QUANTILES)})
    return out


def merge_stats(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """The statistics of the union of the frames behind ``parts``. Quantiles are merged
    when every part has them (see module docstring); a part without them (a dataset
    written before they were recorded) drops them from the merge."""
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
    out = {"min": lo, "max": hi, "mean": mean, "std": np.sqrt(m2 / n),
           "count": np.array([int(n)])}
    if all(q in p for p in parts for q in QUANTILES):
        out.update(merge_quantiles(parts))
    return out


def merge_quantiles(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """q01..q99 of the count-weighted mixture of the parts' piecewise-linear CDFs.

    Each part's CDF rises linearly between its knots (min, q01, ..., q99, max) and jumps
    where knots coincide (a constant part, a discrete feature). The mixture's CDF is traced
    in one sorted pass over all parts' knots: at each knot its slope changes and it may
    jump, so sorting the knots and summing those changes gives it everywhere, in
    O(P log P) per element for P parts (a save rewrites stats.json from every episode)."""
    if len(parts) == 1:
        return {name: np.asarray(parts[0][name], dtype=np.float64) for name in QUANTILES}
    probs = np.array([0.0, *QUANTILES.values(), 1.0])  # (K,)
    # knots (P, K, D): each part's min, quantiles, max; sorted guards rounding
    knots = np.sort(np.stack([np.stack([np.asarray(p[s], dtype=np.float64).reshape(-1) for s in
                                        ("min", *QUANTILES, "max")]) for p in parts]), axis=1)
    w = np.array([float(np.asarray(p["count"]).reshape(-1)[0]) for p in parts])
    w = (w / w.sum())[:, None, None]
    # per part and knot k: the jump there (a segment of zero width starting at it) and the
    # slope of the segment that starts there (0 after the last knot)
    width = np.diff(knots, axis=1)  # (P, K-1, D)
    rise = np.diff(probs)[None, :, None] * w
    slope = np.where(width > 0, rise / np.where(width > 0, width, 1.0), 0.0)
    slope = np.concatenate([slope, np.zeros_like(slope[:, :1])], axis=1)  # (P, K, D)
    jump = np.concatenate([np.where(width > 0, 0.0, rise), np.zeros_like(slope[:, :1])],
                          axis=1)
    change = np.diff(slope, axis=1, prepend=0.0)  # the slope's change at each knot
    # all knots in order, per element: the mixture's CDF before and after each
    D = knots.shape[2]
    x, change, jump = (a.reshape(-1, D) for a in (knots, change, jump))
    order = np.argsort(x, axis=0, kind="stable")
    x, change, jump = (np.take_along_axis(a, order, axis=0) for a in (x, change, jump))
    slope_after = np.cumsum(change, axis=0)
    linear = np.zeros_like(x)
    linear[1:] = slope_after[:-1] * np.diff(x, axis=0)
    after = np.cumsum(linear + jump, axis=0)
    before = after - jump
    curve_x = np.repeat(x, 2, axis=0)  # (2 P K, D): (x, F(x-)), (x, F(x)) per knot
    curve_f = np.stack([before, after], axis=1).reshape(-1, D)
    return {name: _inverse(q, curve_x, curve_f) for name, q in QUANTILES.items()}


def _inverse(q: float, xs: np.ndarray, cdf: np.ndarray) -> np.ndarray:
    """Per column: the smallest x at which the curve through (xs, cdf) reaches q."""
    j = np.argmax(cdf >= q - 1e-12, axis=0)  # the first point reaching q (D,)
    reached = (cdf >= q - 1e-12).any(axis=0)
    j = np.where(reached, j, len(xs) - 1)
    cols = np.arange(xs.shape[1])
    i = np.maximum(j - 1, 0)
    x0, x1, c0, c1 = xs[i, cols], xs[j, cols], cdf[i, cols], cdf[j, cols]
    rising = (j > 0) & (c1 > c0)
    frac = np.where(rising, (q - c0) / np.where(rising, c1 - c0, 1.0), 1.0)
    return np.where(j == 0, x1, x0 + np.clip(frac, 0.0, 1.0) * (x1 - x0))


def to_json(stats: dict[str, dict[str, np.ndarray]]) -> dict[str, dict[str, Any]]:
    return {k: {s: np.asarray(v).tolist() for s, v in d.items()} for k, d in stats.items()}
