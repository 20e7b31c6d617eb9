"""ActionGate: reject candidate actions whose estimated safety cost is too high.

A safety critic (``robot_rl`` SAC, issue 4) scores K candidate actions per robot with a cost
estimate Q_c(s, a) and optionally a value Q(s, a). The gate keeps the candidates with
Q_c <= ``threshold`` and takes the best by value among them (the first one without values:
put the policy's own action first). When none passes it falls back to the least-cost
candidate (``fallback="least_cost"``) or asks the robot to hold (``fallback="hold"``: keep the
current joint positions with zero velocity; the env and the deploy loop take a hold mask).

Array-agnostic (torch or numpy), batch first: candidates (E, K, A), costs and values (E, K).
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from robot_rl.controllers.xp import Array, namespace
from robot_rl.errors import ConfigError


@dataclasses.dataclass
class GateResult:
    action: Array
    """(E, A) the chosen candidate of each robot."""
    index: Array
    """(E,) index of the chosen candidate."""
    rejected: Array
    """(E,) every candidate was above the threshold."""
    hold: Array
    """(E,) the robot should hold instead of acting (fallback "hold" and all rejected)."""


class ActionGate:
    """Chooses among candidate actions by estimated cost (see module docstring)."""

    def __init__(self, threshold: float, fallback: Literal["least_cost", "hold"] = "least_cost"):
        if fallback not in ("least_cost", "hold"):
            raise ConfigError(f"gate fallback must be 'least_cost' or 'hold', got {fallback!r}")
        self.threshold = float(threshold)
        self.fallback = fallback

    def __call__(self, candidates: Array, cost: Array, value: Array | None = None) -> GateResult:
        xp = namespace(candidates)
        if candidates.ndim != 3 or cost.shape != candidates.shape[:2]:
            raise ConfigError(f"gate wants candidates (E, K, A) and costs (E, K), got "
                              f"{tuple(candidates.shape)} and {tuple(cost.shape)}")
        safe = cost <= self.threshold  # NaN costs are never safe
        k = candidates.shape[1]
        # Score: value where safe (first candidate wins ties/without values), -inf otherwise.
        order = -xp.arange(k) * 1e-9 if xp.__name__ == "numpy" else \
            -xp.arange(k, device=cost.device, dtype=cost.dtype) * 1e-9
        base = order + (value if value is not None else cost * 0.0)
        score = xp.where(safe, base, -float("inf"))
        best_safe = score.argmax(-1)
        least_cost = xp.where(xp.isnan(cost), float("inf"), cost).argmin(-1)
        rejected = ~safe.any(-1)
        index = xp.where(rejected, least_cost, best_safe)
        rows = xp.arange(candidates.shape[0])
        if xp.__name__ != "numpy":
            rows = rows.to(candidates.device)
        action = candidates[rows, index]
        hold = rejected & (self.fallback == "hold")
        return GateResult(action=action, index=index, rejected=rejected, hold=hold)
