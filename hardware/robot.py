"""The Robot interface (docs/deploy.md): what the deploy runtime talks to.

    with SimRobot(SimRobotConfig()) as robot:        # or a ROS 2 arm (robot_rl.hardware.ros)
        obs = robot.observe()                         # JointReading or None (nothing yet)
        sent = robot.send_action(JointCommand.position(q_target))

A ``JointCommand`` is what a ros2_control arm takes: joint positions, velocities or efforts
(one value per arm joint, in ``joint_names`` order) plus an optional gripper position. The
base class is the last gate before the wire: ``send_action`` refuses non-finite values (they
become a hold at the last measured position, or zero effort), clips every value to the
robot's hard limits, and returns exactly what it sent.
"""

from __future__ import annotations

import abc
import dataclasses
from typing import TYPE_CHECKING

import numpy as np

from robot_rl.errors import RobotRLError
from robot_rl.hardware.configs import Interface

if TYPE_CHECKING:
    from robot_rl.robots import RobotSpec


class RobotError(RobotRLError):
    """A robot cannot be connected to, or was used in a way its state does not allow."""


@dataclasses.dataclass(frozen=True)
class JointReading:
    """One measurement of the arm (n joints)."""

    q: np.ndarray
    """(n,) joint positions [rad]."""
    qd: np.ndarray
    """(n,) joint velocities [rad/s]."""
    stamp: float
    """When it was measured, seconds on the ``time.monotonic`` clock."""
    effort: np.ndarray | None = None
    """(n,) measured joint efforts [Nm], if the robot reports them."""
    gripper: float | None = None
    """Gripper opening, if the robot has one."""


@dataclasses.dataclass(frozen=True)
class JointCommand:
    """A command for the arm's joint interface (n values) and, optionally, its gripper."""

    interface: Interface
    values: np.ndarray
    """(n,) positions [rad], velocities [rad/s] or efforts [Nm], in joint order."""
    gripper: float | None = None
    """Gripper actuator control (the robot's own units), or None to leave it."""
    hold: bool = False
    """True when this command holds the arm (stale data, e-stop, not started, bad action)."""

    @staticmethod
    def position(q: np.ndarray, hold: bool = False) -> JointCommand:
        return JointCommand("position", np.asarray(q, dtype=np.float64), hold=hold)


@dataclasses.dataclass(frozen=True)
class HardLimits:
    """The robot's own limits, which no command may exceed (from its RobotSpec)."""

    q_min: np.ndarray
    q_max: np.ndarray
    qd_max: np.ndarray
    tau_max: np.ndarray

    @staticmethod
    def of(spec: RobotSpec) -> HardLimits:
        """The limits of a robot description."""
        return HardLimits(np.asarray(spec.q_min), np.asarray(spec.q_max),
                          np.asarray(spec.qd_max), np.asarray(spec.tau_max))

    def clip(self, cmd: JointCommand, last_q: np.ndarray | None) -> JointCommand:
        """``cmd`` within the limits; non-finite values make a hold (see module docstring)."""
        v = np.asarray(cmd.values, dtype=np.float64)
        if v.shape != self.q_min.shape:
            raise RobotError(f"command has {v.size} values, the robot has {self.q_min.size} "
                             f"joints")
        hold = cmd.hold
        if not np.isfinite(v).all():
            hold = True
            if cmd.interface != "position":  # velocity or effort: stop pushing
                v = np.zeros_like(v)
            elif last_q is None:
                raise RobotError("non-finite position command before any measurement")
            else:
                v = np.array(last_q, dtype=np.float64)
        if cmd.interface == "position":
            v = np.clip(v, self.q_min, self.q_max)
        elif cmd.interface == "velocity":
            v = np.clip(v, -self.qd_max, self.qd_max)
        else:
            v = np.clip(v, -self.tau_max, self.tau_max)
        g = cmd.gripper if cmd.gripper is None or np.isfinite(cmd.gripper) else None
        return JointCommand(cmd.interface, v, g, hold)


class Robot(abc.ABC):
    """An arm the deploy runtime can drive (see module docstring)."""

    joint_names: tuple[str, ...]
    interface: Interface
    """The command interface this robot accepts."""
    limits: HardLimits

    def __init__(self) -> None:
        self._last_q: np.ndarray | None = None

    @abc.abstractmethod
    def connect(self) -> None:
        """Open the connection (start the simulation, subscribe to topics)."""

    @abc.abstractmethod
    def close(self) -> None:
        """Close the connection; idempotent."""

    @abc.abstractmethod
    def _read(self) -> JointReading | None:
        """The newest measurement, or None if there has been none."""

    @abc.abstractmethod
    def _write(self, cmd: JointCommand) -> None:
        """Put a command (already within the hard limits) on the wire."""

    def observe(self) -> JointReading | None:
        """The newest measurement (None before the first one). Callers compare ``stamp``
        with earlier readings to tell fresh data from a repeat."""
        reading = self._read()
        if reading is not None:
            self._last_q = reading.q
        return reading

    def send_action(self, cmd: JointCommand) -> JointCommand:
        """Send ``cmd`` after the hard-limit gate; returns what was really sent."""
        if cmd.interface != self.interface:
            raise RobotError(f"this robot takes {self.interface} commands, got "
                             f"{cmd.interface}")
        sent = self.limits.clip(cmd, self._last_q)
        self._write(sent)
        return sent

    def __enter__(self) -> Robot:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
