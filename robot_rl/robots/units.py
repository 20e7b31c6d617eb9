"""Units of joint angles outside robot_rl: radians, degrees, or LeRobot's normalized range.

Inside, joint positions are radians and velocities rad/s. A LeRobot dataset, or a driver
that bridges LeRobot's motor bus to ROS 2, gives them in one of three units:

    unit          value w -> radians q                            velocities
    rad           q = w                                           the same
    deg           q = w * pi / 180 (0 is the joint's 0)           deg/s
    normalized    q = mid + w * (hi - lo) / 200                   (range / 200) per s
                  (LeRobot's -100 .. 100 across the joint's range [lo, hi], mid its middle:
                  its default for SO-100/SO-101 arm joints)

``normalized`` takes LeRobot's calibrated range to be the arm's joint range (so5's are the
SO-101's). ``deg`` is the plain unit: LeRobot's ``use_degrees`` centres 0 on the calibrated
range's middle, which is the joint's 0 where the range is centred on it (so5's are, within
0.05 rad: wrist_roll's). Efforts are Nm in every unit.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Literal

import numpy as np

from robot_rl.errors import ConfigError

AngleUnit = Literal["rad", "deg", "normalized"]
ANGLE_UNITS: tuple[AngleUnit, ...] = ("rad", "deg", "normalized")


def wire_joint_names(given: Sequence[str], joints: Sequence[str], owner: str
                     ) -> tuple[str, ...]:
    """The joints as a driver or a log names them: ``given``, one per joint of ``joints``
    in their order (franka_ros2's ``fr3_joint1`` ... for arm7's ``joint1`` ...), or
    ``joints`` themselves where empty. The arm's own names in another order are refused:
    each joint would get another's commands."""
    if not given:
        return tuple(joints)
    names = tuple(given)
    if len(names) != len(joints) or len(set(names)) != len(names):
        raise ConfigError(f"joint names {list(names)} must name {owner}'s {len(joints)} "
                          f"joints {list(joints)} once each, in that order")
    if set(names) == set(joints) and names != tuple(joints):
        raise ConfigError(f"joint names {list(names)} are {owner}'s joints in another order; "
                          f"give them in its order {list(joints)}")
    return names


@dataclasses.dataclass(frozen=True)
class JointUnits:
    """One unit for n joints: ``scale`` (n,) radians per unit, ``offset`` (n,) the radians
    at 0. Arrays of any leading shape (..., n) convert."""

    unit: AngleUnit
    scale: np.ndarray
    offset: np.ndarray

    @classmethod
    def of(cls, unit: str, n: int, q_min: Sequence[float] = (), q_max: Sequence[float] = (),
           owner: str = "the arm") -> JointUnits:
        """``unit`` for ``n`` joints of range [``q_min``, ``q_max``] (``normalized`` needs
        it; ``owner`` names the arm in the error)."""
        if unit == "rad":
            return cls("rad", np.ones(n), np.zeros(n))
        if unit == "deg":
            return cls("deg", np.full(n, math.pi / 180.0), np.zeros(n))
        if unit == "normalized":
            lo, hi = np.asarray(q_min, dtype=np.float64), np.asarray(q_max, dtype=np.float64)
            if lo.shape != (n,) or hi.shape != (n,) or not np.all(hi > lo):
                raise ConfigError(f"angle unit normalized needs {owner}'s joint range")
            return cls("normalized", (hi - lo) / 200.0, (hi + lo) / 2.0)
        raise ConfigError(f"angle unit must be one of {', '.join(ANGLE_UNITS)}, got {unit!r}")

    def q_in(self, w: np.ndarray) -> np.ndarray:
        """Radians of positions ``w`` in this unit."""
        return self.offset + self.scale * w

    def qd_in(self, w: np.ndarray) -> np.ndarray:
        """rad/s of velocities ``w`` in this unit per second."""
        return self.scale * w

    def q_out(self, q: np.ndarray) -> np.ndarray:
        """Positions ``q`` [rad] in this unit."""
        return (q - self.offset) / self.scale

    def qd_out(self, qd: np.ndarray) -> np.ndarray:
        """Velocities ``qd`` [rad/s] in this unit per second."""
        return qd / self.scale
