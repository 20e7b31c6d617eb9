"""sysid_node: record an excitation on a ROS 2 arm (``robot-rl sysid record --robot ros``).

    robot-rl-sysid-node --ros-args --params-file launch/config/arm7.yaml \
        -p out:=data/arm_sysid -p duration:=20.0

The arm behind ros2_control topics, as policy_node and teleop_node see it: JointStates in on
``joint_states_topic`` (validated, in the arm's joint order, efforts kept where the driver
publishes them), position commands out on ``command_topic``. On ``~/start`` (std_srvs/
Trigger), or by itself with ``autostart`` once JointStates arrive steadily, a worker thread
plays ``sysid.record``'s excitation through the safety shield's joint-target layers: the
move home, the settle, the multisine and the steps, at ``rate_hz``. The episode is appended
to the dataset in ``out`` and the node exits. ``~/stop`` or SIGINT ends the excitation early:
the arm holds where it is and nothing is saved. The mode (idle, recording, done, failed) is
published on ``~/state`` (latched).

Each reading's time is its JointState header stamp mapped onto this host's monotonic clock
(``convert.sample_time``): the recording then holds the driver's sensing latency, which the
fit reports. A driver on another host's clock has its readings timed at arrival instead.
"""

from __future__ import annotations

import dataclasses
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from robot_rl.hardware.ros import require_rclpy

require_rclpy()

from rclpy.node import Node  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import String  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

from robot_rl.errors import RobotRLError  # noqa: E402
from robot_rl.hardware.robot import HardLimits, RobotError  # noqa: E402
from robot_rl.hardware.ros.convert import JointStateParser, sample_time  # noqa: E402
from robot_rl.hardware.ros.params import declare  # noqa: E402
from robot_rl.hardware.ros.ros_robot import RosRobot  # noqa: E402
from robot_rl.hardware.ros.spin import SENSOR_QOS, spin_node  # noqa: E402
from robot_rl.hardware.ros.wire import WireFormat  # noqa: E402
from robot_rl.hardware.timing import Throttle  # noqa: E402
from robot_rl.nodes.policy_node import STATE_QOS  # noqa: E402
from robot_rl.robots import get_robot  # noqa: E402
from robot_rl.sysid.configs import ExcitationConfig, RecordConfig  # noqa: E402
from robot_rl.sysid.record import record_steady  # noqa: E402

STEADY = 0.5
"""Seconds of JointStates without a gap of ``RecordConfig.stale_after`` before ``autostart``
starts the excitation."""


@dataclasses.dataclass
class SysidNodeParams:
    """Parameters of sysid_node (names as in the params YAML)."""

    robot: str = "arm7"
    """Registry name of the arm (its joints, limits, home pose and shield model)."""
    joint_names: list[str] = dataclasses.field(default_factory=list)
    """The arm's joints as the driver names them, in the robot's order (default: the
    robot's names)."""
    joint_states_topic: str = "/joint_states"
    command_topic: str = "/forward_position_controller/commands"
    command_type: str = "float64_multi_array"
    """float64_multi_array (forward_command_controller) or joint_trajectory."""
    interface: str = "position"
    """The controller's command interface (the excitation needs position)."""
    position_unit: str = "rad"
    """Unit of joint positions on the wire: rad, deg or normalized (LeRobot's -100 .. 100
    across each joint's range; hardware/ros/wire.py)."""
    out: str = "data/sysid"
    """Dataset folder (created, or appended to)."""
    rate_hz: float = ExcitationConfig.rate
    """Command rate of the excitation [Hz]."""
    duration: float = ExcitationConfig.duration
    """Length of the multisine part [s] (the steps come after it)."""
    amplitude: float = ExcitationConfig.amplitude
    """Largest excursion of each joint from home [rad]."""
    speed: float = ExcitationConfig.speed
    """Largest speed as a fraction of each joint's velocity limit."""
    step_size: float = ExcitationConfig.step_size
    """Height of the position steps [rad] (0: no steps)."""
    seed: int = 0
    """Seed of the excitation's frequency jitter."""
    autostart: bool = False
    """Start once JointStates arrive steadily (else wait for ~/start)."""


class SysidNode(Node):
    """The excitation recorder as a node (module docstring)."""

    finished = False
    exit_code = 0

    def __init__(self, **kwargs: Any):
        super().__init__("sysid_node", **kwargs)
        p = self.params = declare(self, SysidNodeParams)
        spec = get_robot(p.robot)
        wire = WireFormat.of(p.joint_names, spec.joint_names, p.robot, p.position_unit,
                             spec.q_min, spec.q_max)
        if p.interface != "position":
            raise RobotRLError(f"sysid_node plays position targets; interface is "
                               f"{p.interface!r}")
        self.cfg = RecordConfig(excitation=ExcitationConfig(
            rate=p.rate_hz, duration=p.duration, amplitude=p.amplitude, speed=p.speed,
            step_size=p.step_size, seed=p.seed))
        self.cfg.validate()
        self.robot = RosRobot(self, spec.joint_names, "position", HardLimits.of(spec),
                              p.command_topic, p.command_type, 1.0 / p.rate_hz, wire=wire)
        self.parser = JointStateParser(wire)
        self._bad = Throttle(self.get_logger().warning)
        self.rejected = 0
        self._stop = threading.Event()
        self._worker: threading.Thread | None = None
        self._steady_since: float | None = None
        self._last_arrival = -float("inf")
        self._mode = ""
        self.state_pub = self.create_publisher(String, "~/state", STATE_QOS)
        self.create_subscription(JointState, p.joint_states_topic, self._on_joint_state,
                                 SENSOR_QOS)
        self.create_service(Trigger, "~/start", self._start_srv)
        self.create_service(Trigger, "~/stop", self._stop_srv)
        self._set_mode("idle")
        self.get_logger().info(
            f"sysid on {p.robot} {list(wire.names)}: {p.joint_states_topic} in, "
            f"{p.command_topic} ({p.command_type}"
            f"{'' if wire.unit == 'rad' else ', positions in ' + wire.unit}) out; "
            f"excitation {p.duration:g} s at {p.rate_hz:g} Hz into {p.out}; "
            + ("starts once JointStates are steady" if p.autostart
               else "call ~/start to play it"))

    # -- callbacks -------------------------------------------------------------------------

    def _on_joint_state(self, msg: JointState) -> None:
        arrival = time.monotonic()
        reading = self.parser(msg, sample_time(msg, arrival, self.get_clock().now().nanoseconds))
        if isinstance(reading, str):
            self.rejected += 1
            self._bad(f"rejected JointState: {reading}")
            return
        self.robot.offer(reading)
        gap = arrival - self._last_arrival
        self._last_arrival = arrival
        if not self.params.autostart or self._worker is not None:
            return
        if gap > self.cfg.stale_after or self._steady_since is None:
            self._steady_since = arrival
        elif arrival - self._steady_since >= STEADY:
            self._begin()

    def _start_srv(self, _req: Trigger.Request, res: Trigger.Response) -> Trigger.Response:
        if self._worker is not None:
            res.success, res.message = False, f"already {self._mode}"
        elif self.robot.observe() is None:
            res.success, res.message = False, "no JointState from the arm yet"
        else:
            self._begin()
            res.success, res.message = True, "recording"
        return res

    def _stop_srv(self, _req: Trigger.Request, res: Trigger.Response) -> Trigger.Response:
        self._stop.set()
        res.success, res.message = True, "stopping: the arm holds, nothing is saved"
        return res

    # -- the recording ---------------------------------------------------------------------

    def _begin(self) -> None:
        self._set_mode("recording")
        self._worker = threading.Thread(target=self._record, name="sysid-record", daemon=True)
        self._worker.start()

    def _record(self) -> None:
        from robot_rl.sysid.dataset import save_recording

        logger = self.get_logger()

        def log(m: str) -> None:
            logger.info(m)

        try:
            rec = record_steady(self.robot, self.cfg, log=log, stop=self._stop)
            index = save_recording(rec, Path(self.params.out))
        except (RobotError, RobotRLError) as e:
            self.get_logger().error(f"recording failed: {e}")
            self.exit_code = 1
            self._set_mode("failed")
        else:
            s = rec.streams
            log(f"recorded episode {index} into {self.params.out}: {len(s.js_t)} joint readings"
                f" and {len(s.cmd_t)} commands over {rec.seconds:.1f} s; reading age "
                f"{1e3 * rec.sensing_latency:.2f} ms (median); the shield changed "
                f"{rec.shield_moved} commands; {rec.late_ticks} late ticks; {rec.gaps} late "
                f"readings; "
                f"{self.rejected} JointStates rejected")
            self._set_mode("done")
        self.finished = True

    def _set_mode(self, mode: str) -> None:
        if mode != self._mode:
            self._mode = mode
            self.state_pub.publish(String(data=mode))

    def shutdown(self) -> None:
        """Stop a recording in progress (its worker sends the hold) and wait for it."""
        self._stop.set()
        if self._worker is not None:
            self._worker.join(timeout=5.0)


def main(args: Sequence[str] | None = None) -> None:
    sys.exit(spin_node(SysidNode, args))


if __name__ == "__main__":
    main()
