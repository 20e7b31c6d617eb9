"""sim_robot_node: the simulated arm behind the topics a ros2_control arm exposes.

    robot-rl-sim-robot-node --ros-args --params-file launch/config/arm7.yaml

Publishes sensor_msgs/JointState on ``joint_states_topic`` at ``publish_rate_hz`` (from the
physics thread, right after the step that measured it) and takes commands on
``command_topic`` (Float64MultiArray of a forward_command_controller, or JointTrajectory),
so the whole stack runs with no hardware. Commands with the wrong length or NaN are
rejected and logged (rate-limited); the arm keeps its last command. ``~/reset``
(std_srvs/Trigger) puts the arm back at home.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Sequence
from typing import Any

from robot_rl.hardware.ros import require_rclpy

require_rclpy()

from rclpy.node import Node  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402
from trajectory_msgs.msg import JointTrajectory  # noqa: E402

from robot_rl.errors import RobotRLError  # noqa: E402
from robot_rl.hardware.robot import JointReading  # noqa: E402
from robot_rl.hardware.ros.convert import COMMAND_TYPES, joint_state, parse_command  # noqa: E402
from robot_rl.hardware.ros.params import declare  # noqa: E402
from robot_rl.hardware.ros.spin import SENSOR_QOS, spin_node  # noqa: E402
from robot_rl.hardware.sim_robot import SimRobot, SimRobotConfig  # noqa: E402
from robot_rl.hardware.timing import Throttle  # noqa: E402


@dataclasses.dataclass
class SimRobotNodeParams:
    """Parameters of sim_robot_node (names as in the params YAML)."""

    robot: str = "arm7"
    interface: str = "position"
    """Command interface: position, velocity or effort."""
    physics_dt: float = 0.002
    publish_rate_hz: float = 500.0
    """JointState rate; physics_dt * publish_rate_hz must divide 1."""
    joint_states_topic: str = "/joint_states"
    command_topic: str = "/forward_position_controller/commands"
    command_type: str = "float64_multi_array"
    sensing_latency: float = 0.0
    actuation_delay: float = 0.0
    q_noise_std: float = 0.0
    qd_noise_std: float = 0.0
    mass_scale: float = 1.0
    damping_scale: float = 1.0
    frictionloss: float = 0.0
    seed: int = 0


class SimRobotNode(Node):
    def __init__(self, **kwargs: Any):
        super().__init__("sim_robot_node", **kwargs)
        p = self.params = declare(self, SimRobotNodeParams)
        if p.command_type not in COMMAND_TYPES:
            raise RobotRLError(f"command_type must be one of {COMMAND_TYPES}")
        every = round(1.0 / (p.physics_dt * p.publish_rate_hz))
        if every < 1 or abs(every * p.physics_dt * p.publish_rate_hz - 1.0) > 1e-6:
            raise RobotRLError(f"publish_rate_hz {p.publish_rate_hz:g} must divide the "
                               f"physics rate {1 / p.physics_dt:g} Hz")
        cfg = SimRobotConfig(robot=p.robot, interface=p.interface,  # type: ignore[arg-type]
                             physics_dt=p.physics_dt, sensing_latency=p.sensing_latency,
                             actuation_delay=p.actuation_delay, q_noise_std=p.q_noise_std,
                             qd_noise_std=p.qd_noise_std, mass_scale=p.mass_scale,
                             damping_scale=p.damping_scale, frictionloss=p.frictionloss,
                             seed=p.seed)
        self.pub = self.create_publisher(JointState, p.joint_states_topic, SENSOR_QOS)
        self.robot = SimRobot(cfg, on_sample=self._publish, sample_every=every)
        self.names = self.robot.joint_names
        self._bad = Throttle(self.get_logger().warning)
        self.rejected = 0
        msg_type = Float64MultiArray if p.command_type == "float64_multi_array" else \
            JointTrajectory
        self.create_subscription(msg_type, p.command_topic, self._on_command,
                                 QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE))
        self.create_service(Trigger, "~/reset", self._reset)
        self.robot.connect()
        self.get_logger().info(
            f"simulated {p.robot} ({p.interface}): {p.joint_states_topic} at "
            f"{p.publish_rate_hz:g} Hz, commands on {p.command_topic}")

    def _publish(self, reading: JointReading) -> None:
        if self.robot.cfg.sensing_latency > 0:
            delayed = self.robot.observe()  # the newest sample old enough
            if delayed is None:
                return
            reading = delayed
        # stamped when measured, as a driver stamps its readings
        age_ns = int((time.monotonic() - reading.stamp) * 1e9)
        self.pub.publish(joint_state(reading, self.names,
                                     self.get_clock().now().nanoseconds - age_ns))

    def _on_command(self, msg: Float64MultiArray | JointTrajectory) -> None:
        cmd = parse_command(msg, self.robot.interface, self.names)
        if isinstance(cmd, str):
            self.rejected += 1
            self._bad(f"rejected command: {cmd}")
            return
        self.robot.send_action(cmd)

    def _reset(self, _req: Trigger.Request, res: Trigger.Response) -> Trigger.Response:
        self.robot.reset()
        res.success, res.message = True, "arm at home"
        return res

    def shutdown(self) -> None:
        self.robot.close()


def main(args: Sequence[str] | None = None) -> None:
    sys.exit(spin_node(SimRobotNode, args))


if __name__ == "__main__":
    main()
