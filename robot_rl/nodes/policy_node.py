"""policy_node: the deploy runtime between ``/joint_states`` and an arm's controller.

    robot-rl-policy-node --ros-args --params-file launch/config/arm7.yaml -p artifact:=DIR

Each valid JointState runs one runtime tick at once (at most ``rate_hz``), so a command
leaves within the tick's compute time of the measurement; a timer at ``rate_hz`` ticks
when no data comes, which is how the watchdog's hold goes out. Bad JointStates are dropped
and logged (rate-limited). Services (std_srvs/Trigger): ``~/start``, ``~/stop``,
``~/estop``, ``~/reset``. The mode (idle, running, estop) is published on ``~/state``
(std_msgs/String) whenever it changes. SIGINT/SIGTERM publish a final hold, then exit.

A policy that sees cameras (a pixel student) reads each camera's images from the RealSense
ROS wrapper's topics under ``camera_namespaces`` (``hardware/ros/images.py``; default
``/camera/<name>``); a camera whose newest image is older than ``max_frame_age`` holds the
arm, as a stale JointState does.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
import time
from collections.abc import Sequence
from typing import Any

from robot_rl.hardware.ros import require_rclpy

require_rclpy()

import numpy as np  # noqa: E402
from geometry_msgs.msg import PoseStamped  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.qos import (  # noqa: E402
    DurabilityPolicy,
    HistoryPolicy,
    QoSProfile,
    ReliabilityPolicy,
)
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import String  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

from robot_rl.errors import RobotRLError  # noqa: E402
from robot_rl.export import load_policy  # noqa: E402
from robot_rl.hardware.configs import DeployConfig  # noqa: E402
from robot_rl.hardware.robot import HardLimits  # noqa: E402
from robot_rl.hardware.ros.convert import JointStateParser  # noqa: E402
from robot_rl.hardware.ros.images import RosImageCamera  # noqa: E402
from robot_rl.hardware.ros.params import declare  # noqa: E402
from robot_rl.hardware.ros.ros_robot import RosRobot  # noqa: E402
from robot_rl.hardware.ros.spin import SENSOR_QOS, spin_node  # noqa: E402
from robot_rl.hardware.ros.wire import WireFormat  # noqa: E402
from robot_rl.hardware.runtime import DeployRuntime  # noqa: E402
from robot_rl.hardware.telemetry import rerun_telemetry  # noqa: E402
from robot_rl.hardware.timing import Samples, Throttle  # noqa: E402
from robot_rl.robots import get_robot  # noqa: E402

STATE_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                       reliability=ReliabilityPolicy.RELIABLE,
                       durability=DurabilityPolicy.TRANSIENT_LOCAL)


@dataclasses.dataclass
class PolicyNodeParams:
    """Parameters of policy_node (names as in the params YAML)."""

    artifact: str = ""
    """Exported artifact folder (required)."""
    joint_names: list[str] = dataclasses.field(default_factory=list)
    """The arm's joints as the driver names them in /joint_states and trajectories, one per
    artifact joint in the artifact's order (default: the artifact's names)."""
    rate_hz: float = 200.0
    """Command rate; a whole multiple of the policy's control rate [Hz]."""
    joint_states_topic: str = "/joint_states"
    command_topic: str = "/forward_position_controller/commands"
    """The controller's command topic."""
    command_type: str = "float64_multi_array"
    """float64_multi_array (forward_command_controller) or joint_trajectory."""
    interface: str = "position"
    """Command interface of the controller: position, velocity or effort."""
    position_unit: str = "rad"
    """Unit of joint positions on the wire: rad, deg or normalized (LeRobot's -100 .. 100
    across each joint's range; hardware/ros/wire.py)."""
    goal_topic: str = "/goal_pose"
    """geometry_msgs/PoseStamped goals (its position is the task's goal point)."""
    goal: list[float] = dataclasses.field(default_factory=list)
    """Initial goal point [x, y, z] (default: drawn from the task's resets)."""
    gate: str = "auto"
    """Safety-critic gate: auto (when the artifact has a cost critic), on or off."""
    watchdog_periods: int = 3
    """Hold after this many periods without a fresh JointState."""
    autostart: bool = False
    """Start once JointStates have arrived without a watchdog gap for AUTOSTART_SETTLE
    seconds (else wait for ~/start)."""
    camera_namespaces: list[str] = dataclasses.field(default_factory=list)
    """ROS namespaces of the cameras a policy that sees cameras reads, in the order of
    policy.json's cameras (default: /camera/<name> each)."""
    max_frame_age: float = 0.1
    """Hold when a camera's newest image is older than this [s]."""
    backend: str = "onnx"
    seed: int = 0
    stats_file: str = ""
    """Write timing statistics (JSON) here at exit."""
    telemetry: str = ""
    """rerun: stream telemetry (joints and commands, actions, shield layers, timing, holds)
    to Rerun from a thread outside the ticks; empty: none."""
    telemetry_out: str = ""
    """With telemetry rerun: save the recording as this .rrd file (else Rerun's viewer, or
    its web viewer without a display)."""


AUTOSTART_SETTLE = 0.25
"""Seconds of JointStates without a watchdog gap before ``autostart`` starts the policy."""


class PolicyNode(Node):
    """The deploy runtime as a node (see module docstring). Subclasses (teleop_node) change
    ``node_name``, ``params_class``, ``make_policy`` and ``before_tick``."""

    node_name = "policy_node"
    params_class: type[PolicyNodeParams] = PolicyNodeParams
    finished = False
    """Set to end the node's spin (policy_node runs until a signal)."""
    allow_autostart = True
    """Whether the ``autostart`` parameter applies."""

    def __init__(self, **kwargs: Any):
        super().__init__(self.node_name, **kwargs)
        p = self.params = declare(self, self.params_class)
        if p.gate not in ("auto", "on", "off"):
            raise RobotRLError(f"gate must be auto, on or off, got {p.gate!r}")
        policy = self.make_policy(p)
        spec = get_robot(policy.meta["robot"]["name"])
        wire = WireFormat.of(p.joint_names, policy.joint_names, f"the artifact {p.artifact}",
                             p.position_unit, spec.q_min, spec.q_max)
        if p.interface not in ("position", "velocity", "effort"):
            raise RobotRLError(f"interface must be position, velocity or effort, got "
                               f"{p.interface!r}")
        period = 1.0 / p.rate_hz
        self.robot = RosRobot(self, policy.joint_names, p.interface,  # type: ignore[arg-type]
                              HardLimits.of(spec), p.command_topic, p.command_type, period,
                              wire=wire)
        cfg = DeployConfig(rate_hz=p.rate_hz, gate={"auto": None, "on": True, "off": False}[
            p.gate], watchdog_periods=p.watchdog_periods,
            goal=tuple(p.goal) if p.goal else None,  # type: ignore[arg-type]
            autostart=False, seed=p.seed, max_frame_age=p.max_frame_age)
        self._bad = Throttle(self.get_logger().warning)
        self.cameras = self._cameras(policy, p)
        self.runtime = DeployRuntime(policy, self.robot, cfg, log=self.get_logger().warning,
                                     cameras=self.cameras or None)
        if p.telemetry not in ("", "rerun"):
            raise RobotRLError(f"telemetry must be empty or rerun, got {p.telemetry!r}")
        self.telemetry = None if not p.telemetry else rerun_telemetry(
            self.runtime, p.telemetry_out or None, self.get_logger().info)
        self.period = period
        self.parser = JointStateParser(wire)
        self.rejected = 0
        self.latency = Samples()
        """JointState receipt to command published [s]."""
        self.stamp_latency = Samples()
        """JointState header stamp to command published [s] (same host clocks only)."""
        self._last_tick = -float("inf")
        self._next_due = -float("inf")
        self._first_tick: float | None = None
        """When the next tick is due: ticks keep to a schedule of whole periods, so arriving
        JointStates drive them at ``rate_hz`` on average whatever the publisher's rate."""
        self._autostart = p.autostart and self.allow_autostart
        self._steady_since: float | None = None
        self._mode = ""
        self.state_pub = self.create_publisher(String, "~/state", STATE_QOS)
        self.create_subscription(JointState, p.joint_states_topic, self._on_joint_state,
                                 SENSOR_QOS)
        self.create_subscription(PoseStamped, p.goal_topic, self._on_goal, 10)
        for name, fn in (("start", self._start), ("stop", self._stop),
                         ("estop", self._estop), ("reset", self._reset)):
            self.create_service(Trigger, f"~/{name}", fn)
        self.create_timer(period, self._on_timer)
        self._publish_mode()
        goal = self.runtime.goal
        self.get_logger().info(
            f"{policy.meta['task']} policy on {list(wire.names)}: {p.rate_hz:g} Hz -> "
            f"{p.command_topic} ({p.command_type}, {p.interface}"
            f"{'' if wire.unit == 'rad' else ', positions in ' + wire.unit}), gate "
            f"{'on' if self.runtime.use_gate else 'off'}, goal "
            f"{None if goal is None else np.round(goal, 3).tolist()}"
            + "".join(f", camera {c.name} on {' + '.join(c.topics)}"
                      for c in self.cameras.values()) + "; "
            f"{'autostart' if self._autostart else 'call ~/start to run'}")

    def make_policy(self, p: Any) -> Any:
        """The policy the runtime runs (an exported artifact)."""
        if not p.artifact:
            raise RobotRLError(f"{self.node_name} needs the 'artifact' parameter "
                               "(-p artifact:=/path/to/artifact)")
        return load_policy(p.artifact, backend=p.backend, seed=p.seed)  # type: ignore[arg-type]

    def _cameras(self, policy: Any, p: Any) -> dict[str, RosImageCamera]:
        """The image subscriptions of a policy that sees cameras (none otherwise)."""
        names = list(getattr(policy, "cameras", []))
        if not names:
            return {}
        spaces = p.camera_namespaces or [f"/camera/{n}" for n in names]
        if len(spaces) != len(names):
            raise RobotRLError(f"camera_namespaces has {len(spaces)} entries; the policy sees "
                               f"{len(names)} cameras ({', '.join(names)})")
        depth = {k.rsplit(".", 1)[0] for k, _, _ in policy.images if k.endswith(".depth")}
        return {n: RosImageCamera(self, n, ns, n in depth, self._bad)
                for n, ns in zip(names, spaces, strict=True)}

    def before_tick(self) -> None:
        """Called at the start of every tick (teleop_node reads its device here)."""

    # -- callbacks -------------------------------------------------------------------------

    def _on_joint_state(self, msg: JointState) -> None:
        t = time.monotonic()
        reading = self.parser(msg, t)
        if isinstance(reading, str):
            self.rejected += 1
            self._bad(f"rejected JointState: {reading}")
            return
        self.robot.offer(reading)
        if t >= self._next_due:
            self._tick(reading, t)
            done = time.monotonic()
            self.latency.add(done - t)
            sent_ns = self.get_clock().now().nanoseconds
            stamp_ns = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
            if stamp_ns > 0:
                self.stamp_latency.add((sent_ns - stamp_ns) * 1e-9)

    def _on_timer(self) -> None:
        now = time.monotonic()
        if now - self._last_tick >= 1.5 * self.period:  # no data drove a tick: watchdog path
            self._tick(None, now)

    def _tick(self, reading: Any, now: float) -> None:
        if self._first_tick is None:
            self._first_tick = now
        self._last_tick = now
        self.before_tick()
        # the next deadline one period after this one's, or after now when far behind
        due = self._next_due + self.period
        self._next_due = due if now - due < self.period else now + self.period
        self.runtime.tick(reading, now)
        if self._autostart:
            self._maybe_autostart(now)
        self._publish_mode()
        # The policy step's stages run in the time before the next tick is due.
        self.runtime.idle(self._next_due - 0.2 * self.period)

    def _maybe_autostart(self, now: float) -> None:
        """Start once the JointState stream has been steady for AUTOSTART_SETTLE seconds: a
        stream that stutters while DDS matches the publisher would otherwise trip the
        watchdog right after the start and leave the node waiting for ~/start."""
        if self.runtime.watchdog.stale(now):
            self._steady_since = None
            return
        if self._steady_since is None:
            self._steady_since = now
        if now - self._steady_since >= AUTOSTART_SETTLE and self.runtime.start(now)[0]:
            self._autostart = False

    def _on_goal(self, msg: PoseStamped) -> None:
        pos = (msg.pose.position.x, msg.pose.position.y, msg.pose.position.z)
        old = self.runtime.goal
        try:
            self.runtime.set_goal(pos)
        except RobotRLError as e:
            self._bad(f"rejected goal: {e}")
            return
        if old is None or not np.allclose(old, pos):  # a republished goal is not news
            self.get_logger().info(f"goal {np.round(pos, 3).tolist()}")

    def _publish_mode(self) -> None:
        mode = self.runtime.mode
        if mode != self._mode:
            self._mode = mode
            self.state_pub.publish(String(data=mode))

    def _start(self, _req: Trigger.Request, res: Trigger.Response) -> Trigger.Response:
        res.success, res.message = self.runtime.start()
        self._autostart &= not res.success
        self._publish_mode()
        return res

    def _stop(self, _req: Trigger.Request, res: Trigger.Response) -> Trigger.Response:
        self._autostart = False  # a pending autostart is cancelled, as are all later ones
        self.runtime.stop("~/stop called")
        self._publish_mode()
        res.success, res.message = True, "holding"
        return res

    def _estop(self, _req: Trigger.Request, res: Trigger.Response) -> Trigger.Response:
        self._autostart = False
        self.runtime.estop("~/estop called")
        self._publish_mode()
        res.success, res.message = True, "e-stop latched; ~/reset releases it"
        return res

    def _reset(self, _req: Trigger.Request, res: Trigger.Response) -> Trigger.Response:
        self.runtime.reset()
        self._publish_mode()
        goal = self.runtime.goal
        res.success = True
        res.message = "reset; holding until ~/start" + (
            "" if goal is None else f" (goal {np.round(goal, 3).tolist()})")
        return res

    # -- shutdown --------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Publish the final hold, write the statistics, end the telemetry."""
        self.runtime.close()
        if self.telemetry is not None:
            self.telemetry.close()
        s = self.stats()
        if self.params.stats_file:
            with open(self.params.stats_file, "w") as f:
                json.dump(s, f, indent=2, default=float)
        p50, p99, _ = s["receipt_to_publish_us"]
        latency = (f"receipt->publish p50/p99 {p50:.0f}/{p99:.0f} µs" if math.isfinite(p50)
                   else "no command published from a reading")
        self.get_logger().info(f"final hold sent; {s['ticks']} ticks, {latency}, "
                               f"{s['rejected_joint_states']} JointStates rejected")

    def stats(self) -> dict[str, Any]:
        s = self.runtime.summary()
        s.update(receipt_to_publish_us=self.latency.percentiles(1e6),
                 stamp_to_publish_us=self.stamp_latency.percentiles(1e6),
                 rejected_joint_states=self.rejected, published=self.robot.published)
        span = self._last_tick - (self._first_tick or self._last_tick)
        s["tick_rate_hz"] = (s["ticks"] - 1) / span if span > 0 else 0.0
        return s


def main(args: Sequence[str] | None = None) -> None:
    sys.exit(spin_node(PolicyNode, args))


if __name__ == "__main__":
    main()
