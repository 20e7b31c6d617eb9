"""What the deploy runtime hands to code that records through it (``robot_recorder.py``):
the ``override`` of a person acting instead of the policy, and each ``PolicyStep``."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from robot_rl.hardware.robot import JointReading


@dataclasses.dataclass(frozen=True)
class PolicyStep:
    """One policy step of the runtime, as ``DeployRuntime.on_step`` receives it."""

    reading: JointReading
    """The measurement it acted on."""
    obs: np.ndarray
    """(O,) the observation built from it."""
    action: np.ndarray
    """(A,) the action chosen (policy, gate or person), before the shield's action layers."""
    intervention: bool
    """The action came from ``override`` (a person), not the policy."""
    applied: np.ndarray
    """(A,) the action after the shield's action layers: what the arm executes."""
    reward: float
    """The task's reward at ``obs``'s state (the outcome of the previous step's action)."""
    cost: float
    """The task's constraint cost at ``obs``'s state."""
    success: bool
    """The task's success test at ``obs``'s state."""


Override = Callable[[np.ndarray, JointReading, Any], "np.ndarray | None"]
"""(obs (O,), reading, ArmState) -> an action (A,) in [-1, 1] to use instead of the policy's,
or None to let the policy act."""
