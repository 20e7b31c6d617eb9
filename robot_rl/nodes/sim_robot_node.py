"""sim_robot_node: the simulated arm behind the topics a ros2_control arm exposes.

    robot-rl-sim-robot-node --ros-args --params-file launch/config/arm7.yaml

Publishes sensor_msgs/JointState on ``joint_states_topic`` at ``publish_rate_hz`` (from the
physics thread, right after the step that measured it) and takes commands on
``command_topic`` (Float64MultiArray of a forward_command_controller, or JointTrajectory),
so the whole stack runs with no hardware. Commands with the wrong length or NaN are
rejected and logged (rate-limited); the arm keeps its last command. ``~/reset``
(std_srvs/Trigger) puts the arm back at home.

With ``task`` (push, lift, ...) the arm stands in that task's scene, drawn as the task's
resets draw it (``hardware/sim_task.py``; ``~/reset`` draws the next episode), and the
episode's goal is published on ``goal_topic`` (PoseStamped, once a second, as a goal source
would). With ``cameras`` the scene's cameras are published as the RealSense ROS wrapper
publishes a camera's images (``hardware/ros/images.py``) under ``{camera_namespace}/{name}``:
color rgb8, depth 16UC1 millimetres aligned to color, and camera_info, at ``camera_fps``
with ``camera_latency`` and ``camera_drop_prob`` (``hardware/cameras/sim_camera.py``).
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from robot_rl.hardware.ros import require_rclpy

require_rclpy()

from geometry_msgs.msg import PoseStamped  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import CameraInfo, Image, JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402
from trajectory_msgs.msg import JointTrajectory  # noqa: E402

from robot_rl.errors import ConfigError, RobotRLError  # noqa: E402
from robot_rl.hardware.cameras.base import CameraFrame  # noqa: E402
from robot_rl.hardware.cameras.sim_camera import SimArmCameras  # noqa: E402
from robot_rl.hardware.configs import SimCameraConfig, SimRobotConfig  # noqa: E402
from robot_rl.hardware.robot import JointReading  # noqa: E402
from robot_rl.hardware.ros.convert import COMMAND_TYPES, joint_state, parse_command  # noqa: E402
from robot_rl.hardware.ros.images import (  # noqa: E402
    IMAGE_QOS,
    camera_info_msg,
    color_topic,
    depth_topic,
    image_msg,
    info_topic,
)
from robot_rl.hardware.ros.params import declare  # noqa: E402
from robot_rl.hardware.ros.spin import SENSOR_QOS, spin_node  # noqa: E402
from robot_rl.hardware.ros.wire import WireFormat  # noqa: E402
from robot_rl.hardware.sim_robot import SimRobot  # noqa: E402
from robot_rl.hardware.sim_task import SimTaskEpisodes  # noqa: E402
from robot_rl.hardware.timing import Throttle  # noqa: E402
from robot_rl.sim import make_task_config  # noqa: E402
from robot_rl.sim.configs import CameraConfig  # noqa: E402
from robot_rl.sim.tasks.config import decimation_for  # noqa: E402


@dataclasses.dataclass
class SimRobotNodeParams:
    """Parameters of sim_robot_node (names as in the params YAML)."""

    robot: str = "arm7"
    joint_names: list[str] = dataclasses.field(default_factory=list)
    """The arm's joints as a driver would name them on the wire, in the arm's order
    (default: the arm's own names)."""
    interface: str = "position"
    """Command interface: position, velocity or effort."""
    position_unit: str = "rad"
    """Unit of joint positions on the wire: rad, deg or normalized (LeRobot's -100 .. 100
    across each joint's range; hardware/ros/wire.py)."""
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
    kp: list[float] = dataclasses.field(default_factory=list)
    """Servo stiffness per joint (empty: the robot's) [Nm/rad]."""
    kd: list[float] = dataclasses.field(default_factory=list)
    """Servo damping per joint (empty: the robot's) [Nm s/rad]."""
    seed: int = 0
    task: str = ""
    """Stand the arm in this task's scene (its objects; empty: the arm on its table)."""
    goal_topic: str = "/goal_pose"
    """Where the scene's goal is published (with ``task``)."""
    cameras: list[str] = dataclasses.field(default_factory=list)
    """Scene cameras to publish (e.g. [front, wrist])."""
    camera_namespace: str = "/camera"
    """Each camera's topics are under {camera_namespace}/{name}."""
    camera_width: int = 96
    camera_height: int = 96
    camera_depth: bool = True
    """Also publish aligned depth."""
    camera_fps: float = 30.0
    camera_latency: float = 0.0
    """Capture to publication [s]."""
    camera_drop_prob: float = 0.0


class SimRobotNode(Node):
    def __init__(self, **kwargs: Any):
        super().__init__("sim_robot_node", **kwargs)
        p = self.params = declare(self, SimRobotNodeParams)
        if p.command_type not in COMMAND_TYPES:
            raise RobotRLError(f"command_type must be one of {COMMAND_TYPES}")
        try:
            every = decimation_for(p.publish_rate_hz, p.physics_dt)
        except ConfigError as e:
            raise ConfigError(f"publish_rate_hz: {e}") from None
        cfg = SimRobotConfig(robot=p.robot, interface=p.interface,  # type: ignore[arg-type]
                             physics_dt=p.physics_dt, sensing_latency=p.sensing_latency,
                             actuation_delay=p.actuation_delay, q_noise_std=p.q_noise_std,
                             qd_noise_std=p.qd_noise_std, mass_scale=p.mass_scale,
                             damping_scale=p.damping_scale, frictionloss=p.frictionloss,
                             kp=tuple(p.kp) if p.kp else None,
                             kd=tuple(p.kd) if p.kd else None, seed=p.seed)
        self.pub = self.create_publisher(JointState, p.joint_states_topic, SENSOR_QOS)
        scene = None
        if p.task:
            scene = make_task_config(p.task, robot=p.robot)
        elif p.cameras:
            raise RobotRLError("cameras need a task's scene to see (the task parameter)")
        self.robot = SimRobot(cfg, on_sample=self._publish, sample_every=every, scene=scene)
        self.episodes = None if scene is None else SimTaskEpisodes(scene, seed=p.seed)
        self.episode = 0
        self.goal: np.ndarray | None = None
        self.goal_pub = self.create_publisher(PoseStamped, p.goal_topic, 10)
        self._new_episode()
        spec = self.robot.spec
        self.wire = WireFormat.of(p.joint_names, spec.joint_names, p.robot, p.position_unit,
                                  spec.q_min, spec.q_max)
        self._bad = Throttle(self.get_logger().warning)
        self.rejected = 0
        msg_type = Float64MultiArray if p.command_type == "float64_multi_array" else \
            JointTrajectory
        self.create_subscription(msg_type, p.command_topic, self._on_command,
                                 QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE))
        self.create_service(Trigger, "~/reset", self._reset)
        self.robot.connect()
        self.sim_cameras: SimArmCameras | None = None
        if p.cameras:
            self._start_cameras(p)
        if self.episodes is not None:
            self.create_timer(1.0, self._publish_goal)
        self.get_logger().info(
            f"simulated {p.robot} ({p.interface}): {p.joint_states_topic} at "
            f"{p.publish_rate_hz:g} Hz, commands on {p.command_topic}"
            + (f"; {p.task} scene, goal on {p.goal_topic}" if p.task else "")
            + "".join(f"; camera {c} at {p.camera_width}x{p.camera_height} {p.camera_fps:g} "
                      f"fps on {color_topic(self._ns(c))}" for c in p.cameras))

    # -- the task's scene and cameras ------------------------------------------------------

    def _ns(self, camera: str) -> str:
        return f"{self.params.camera_namespace.rstrip('/')}/{camera}"

    def _new_episode(self) -> None:
        """Place the next episode's scene (with a task) and publish its goal."""
        if self.episodes is None:
            self.robot.reset()
            return
        scene, self.goal = self.episodes.draw(self.params.seed + self.episode)
        self.episode += 1
        self.robot.reset(None, scene)
        self._publish_goal()

    def _publish_goal(self) -> None:
        if self.goal is None:
            return
        msg = PoseStamped()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.header.frame_id = "world"
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = (
            float(v) for v in self.goal)
        msg.pose.orientation.w = 1.0
        self.goal_pub.publish(msg)

    def _start_cameras(self, p: SimRobotNodeParams) -> None:
        cams = CameraConfig(names=tuple(p.cameras), height=p.camera_height,
                            width=p.camera_width, depth=p.camera_depth)
        self._image_pubs = {
            name: (self.create_publisher(Image, color_topic(self._ns(name)), IMAGE_QOS),
                   self.create_publisher(Image, depth_topic(self._ns(name)), IMAGE_QOS)
                   if p.camera_depth else None,
                   self.create_publisher(CameraInfo, info_topic(self._ns(name)), IMAGE_QOS))
            for name in p.cameras}
        self.sim_cameras = SimArmCameras(self.robot, cams, SimCameraConfig(
            fps=p.camera_fps, latency=p.camera_latency, drop_prob=p.camera_drop_prob,
            seed=p.seed), on_frame=self._publish_frame)
        self.sim_cameras.connect()

    def _publish_frame(self, name: str, frame: CameraFrame) -> None:
        """Publish one camera's frame as it comes due (on that camera's delivery thread)."""
        if frame.color is None:
            return
        color_pub, depth_pub, info_pub = self._image_pubs[name]
        frame_id = f"{name}_color_optical_frame"
        # stamped at capture, on the ROS clock, as the wrapper stamps its images
        age_ns = int((time.monotonic() - frame.timestamp_ms * 1e-3) * 1e9)
        stamp = self.get_clock().now().nanoseconds - age_ns
        color_pub.publish(image_msg(frame.color, stamp, frame_id))
        if depth_pub is not None and frame.depth is not None:
            depth_pub.publish(image_msg(frame.depth, stamp, frame_id))
        info_pub.publish(camera_info_msg(frame.intrinsics, stamp, frame_id))

    def _publish(self, reading: JointReading) -> None:
        if self.robot.cfg.sensing_latency > 0:
            delayed = self.robot.observe()  # the newest sample old enough
            if delayed is None:
                return
            reading = delayed
        # stamped when measured, as a driver stamps its readings
        age_ns = int((time.monotonic() - reading.stamp) * 1e9)
        w = self.wire
        if w.unit != "rad":
            reading = dataclasses.replace(reading, q=w.command_out(reading.q, "position"),
                                          qd=w.command_out(reading.qd, "velocity"))
        self.pub.publish(joint_state(reading, w.names,
                                     self.get_clock().now().nanoseconds - age_ns))

    def _on_command(self, msg: Float64MultiArray | JointTrajectory) -> None:
        cmd = parse_command(msg, self.robot.interface, self.wire.names)
        if isinstance(cmd, str):
            self.rejected += 1
            self._bad(f"rejected command: {cmd}")
            return
        if self.wire.unit != "rad":
            cmd = dataclasses.replace(cmd, values=self.wire.command_in(cmd.values,
                                                                       cmd.interface))
        self.robot.send_action(cmd)

    def _reset(self, _req: Trigger.Request, res: Trigger.Response) -> Trigger.Response:
        self._new_episode()
        res.success, res.message = True, "arm at home" + (
            "" if self.goal is None else
            f"; episode {self.episode}, goal {np.round(self.goal, 3).tolist()}")
        return res

    def shutdown(self) -> None:
        if self.sim_cameras is not None:
            self.sim_cameras.close()
        self.robot.close()


def main(args: Sequence[str] | None = None) -> None:
    sys.exit(spin_node(SimRobotNode, args))


if __name__ == "__main__":
    main()
