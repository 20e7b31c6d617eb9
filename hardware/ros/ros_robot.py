"""RosRobot: an arm behind ros2_control topics, as a ``Robot`` for the deploy runtime.

Readings come from the node's ``/joint_states`` subscription (``offer``); commands go out on
the controller's topic as Float64MultiArray or JointTrajectory. The node owns the
subscription and the executor; this class only holds the newest reading and publishes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory

from robot_rl.errors import ConfigError
from robot_rl.hardware.configs import Interface
from robot_rl.hardware.robot import HardLimits, JointCommand, JointReading, Robot
from robot_rl.hardware.ros.convert import COMMAND_TYPES, command_message
from robot_rl.hardware.ros.wire import WireFormat


class RosRobot(Robot):
    """Publishes commands to ``command_topic``; ``offer`` feeds it readings. ``joint_names``
    are the arm's (the artifact's, the runtime's); ``wire`` the same joints' names and units
    in messages (default: the same names, radians)."""

    def __init__(self, node: Node, joint_names: Sequence[str], interface: Interface,
                 limits: HardLimits, command_topic: str, command_type: str, period: float,
                 wire: WireFormat | None = None):
        super().__init__()
        if command_type not in COMMAND_TYPES:
            raise ConfigError(f"command_type must be one of {COMMAND_TYPES}, got "
                              f"{command_type!r}")
        self.joint_names = tuple(joint_names)
        self.wire = wire or WireFormat.of((), self.joint_names, "the arm")
        self.interface = interface
        self.limits = limits
        self.command_type = command_type
        self.period = period
        msg_type = Float64MultiArray if command_type == "float64_multi_array" else \
            JointTrajectory
        qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE)
        self.publisher = node.create_publisher(msg_type, command_topic, qos)
        self._latest: JointReading | None = None
        self.published = 0

    def offer(self, reading: JointReading) -> None:
        """A validated reading from the subscription."""
        self._latest = reading
        self._last_q = np.asarray(reading.q)

    def connect(self) -> None:  # the node's subscription is the connection
        pass

    def close(self) -> None:
        pass

    def _read(self) -> JointReading | None:
        return self._latest

    def _write(self, cmd: JointCommand) -> None:
        if self.wire.unit != "rad":
            cmd = dataclasses.replace(cmd, values=self.wire.command_out(cmd.values,
                                                                        cmd.interface))
        self.publisher.publish(command_message(cmd, self.command_type, self.wire.names,
                                               self.period))
        self.published += 1
