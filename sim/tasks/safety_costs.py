"""The thresholds of the safety cost terms every task shares (``terms.SAFETY_COSTS``), and of
the limits the simulator state derives from them."""

from __future__ import annotations

import dataclasses

Vec3 = tuple[float, float, float]


@dataclasses.dataclass(kw_only=True)
class SafetyCostConfig:
    """Thresholds of the safety cost terms (each term is 1 while its condition holds, else 0)."""

    joint_limit_margin: float = 0.05
    """A joint closer than this to either limit is a joint-limit violation [rad]."""
    velocity_fraction: float = 1.0
    """A joint faster than this fraction of its velocity limit is a velocity violation."""
    workspace_lo: Vec3 = (0.1, -0.6, -0.01)
    """Lower corner of the end-effector workspace box, world frame [m]."""
    workspace_hi: Vec3 = (0.9, 0.6, 0.8)
    """Upper corner of the end-effector workspace box, world frame [m]."""
    table_force_limit: float = 30.0
    """Net arm-table contact force above which contact is a violation [N]."""
