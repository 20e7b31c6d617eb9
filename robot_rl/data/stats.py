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
    """q01..q99 of the count-weighted mixture of the parts' piecewise-linear CDFs."""
    if len(parts) == 1:
        return {name: np.asarray(parts[0][name], dtype=np.float64) for name in QUANTILES}
    probs = np.array([0.0, *QUANTILES.values(), 1.0])
    # knots (P, K, D): each part's min, quantiles, max; sorted guards rounding
    knots = np.sort(np.stack([np.stack([np.asarray(p[s], dtype=np.float64).reshape(-1) for s in
                                        ("min", *QUANTILES, "max")]) for p in parts]), axis=1)
    weights = np.array([float(np.asarray(p["count"]).reshape(-1)[0]) for p in parts])
    weights = weights / weights.sum()
    out = np.empty((len(QUANTILES), knots.shape[2]))
    for d in range(knots.shape[2]):
        # the mixture's CDF is linear between the parts' knots and may jump at them (a
        # constant part, or knots that coincide): its curve through (x, F(x-)), (x, F(x))
        xs = np.unique(knots[:, :, d])
        left = sum(w * _cdf(xs, knots[i, :, d], probs, "left") for i, w in enumerate(weights))
        right = sum(w * _cdf(xs, knots[i, :, d], probs, "right") for i, w in enumerate(weights))
        curve_x, curve_f = np.repeat(xs, 2), np.stack([left, right], axis=1).reshape(-1)
        for k, q in enumerate(QUANTILES.values()):
            out[k, d] = _inverse(q, curve_x, curve_f)
    return {name: out[k] for k, name in enumerate(QUANTILES)}


def _cdf(x: np.ndarray, knots: np.ndarray, probs: np.ndarray, side: str) -> np.ndarray:
    """A part's CDF, linear through (knots, probs), at ``x``: its value (side "right") or
    its limit from the left (side "left"), which differ where knots coincide."""
    n = len(knots)
    if side == "right":  # between the last knot <= x and the first one > x
        j = np.searchsorted(knots, x, side="right")
    else:  # between the last knot < x and the first one >= x
        j = np.searchsorted(knots, x, side="left")
    i = j - 1
    ii, jj = np.clip(i, 0, n - 1), np.clip(j, 0, n - 1)
    span = knots[jj] - knots[ii]
    frac = np.where(span > 0, (x - knots[ii]) / np.where(span > 0, span, 1.0), 1.0)
    f = probs[ii] + frac * (probs[jj] - probs[ii])
    return np.where(i < 0, 0.0, np.where(j >= n, 1.0, f))


def _inverse(q: float, xs: np.ndarray, cdf: np.ndarray) -> float:
    """The smallest x at which the curve through (xs, cdf) reaches q."""
    j = int(np.searchsorted(cdf, q - 1e-12))
    if j == 0:
        return float(xs[0])
    if j >= len(xs):
        return float(xs[-1])
    c0, c1 = cdf[j - 1], cdf[j]
    return float(xs[j - 1] + (q - c0) / (c1 - c0) * (xs[j] - xs[j - 1])) if c1 > c0 else \
        float(xs[j])


def to_json(stats: dict[str, dict[str, np.ndarray]]) -> dict[str, dict[str, Any]]:
    return {k: {s: np.asarray(v).tolist() for s, v in d.items()} for k, d in stats.items()}
