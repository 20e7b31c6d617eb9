"""How a driver writes the arm's joints on the wire: their names and the unit of positions.

ros2_control's interfaces take radians under the URDF's joint names, and so do the nodes by
default. A driver may name the joints its own way (franka_ros2's ``fr3_joint1`` ... for
arm7's ``joint1`` ...), and a bridge to LeRobot's motor bus speaks LeRobot's units. A node's
``joint_names`` (one per arm joint, in the arm's order) and ``position_unit`` (rad, deg or
normalized: ``robot_rl.robots.units``) describe that; ``WireFormat`` maps readings in and
commands out. Positions and velocities convert; efforts are Nm in every unit.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from robot_rl.errors import ConfigError
from robot_rl.robots.units import JointUnits, wire_joint_names


@dataclasses.dataclass(frozen=True)
class WireFormat:
    """The names and the unit of the arm's joints on the wire."""

    names: tuple[str, ...]
    units: JointUnits

    @property
    def unit(self) -> str:
        return self.units.unit

    @classmethod
    def of(cls, given: Sequence[str], joints: Sequence[str], owner: str,
           unit: str = "rad", q_min: Sequence[float] = (), q_max: Sequence[float] = ()
           ) -> WireFormat:
        """The format of a node's ``joint_names`` parameter ``given`` (empty: ``joints``
        themselves) and ``position_unit`` ``unit`` for the arm ``owner`` with ``joints`` and
        the range [``q_min``, ``q_max``] (needed by ``normalized``)."""
        try:
            names = wire_joint_names(given, joints, owner)
        except ConfigError as e:
            raise ConfigError(f"joint_names: {e}") from None
        try:
            units = JointUnits.of(unit, len(names), q_min, q_max, owner)
        except ConfigError as e:
            raise ConfigError(f"position_unit: {e}") from None
        return cls(names, units)

    def command_out(self, values: np.ndarray, interface: str) -> np.ndarray:
        """(n,) wire values of a command (or a reading) in radians, rad/s or Nm."""
        if interface == "position":
            return self.units.q_out(values)
        return self.units.qd_out(values) if interface == "velocity" else values

    def command_in(self, w: np.ndarray, interface: str) -> np.ndarray:
        """(n,) radians, rad/s or Nm of a command's (or a reading's) wire values."""
        if interface == "position":
            return self.units.q_in(w)
        return self.units.qd_in(w) if interface == "velocity" else w
