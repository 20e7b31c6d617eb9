"""Message conversion with validation: JointState in, joint commands out.

``JointStateParser`` maps a JointState onto the arm's joint order by name (extra joints such
as gripper fingers are ignored; the message may list joints in any order; names and units as
the driver's, ``hardware.ros.wire``) and rejects, with a reason, messages that lack an arm
joint, repeat a name, have mismatched array lengths, lack velocities, or carry NaN/inf.
Rejected messages never reach the runtime.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from builtin_interfaces.msg import Duration
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robot_rl.hardware.robot import JointCommand, JointReading
from robot_rl.hardware.ros.wire import WireFormat

COMMAND_TYPES = ("float64_multi_array", "joint_trajectory")


class JointStateParser:
    """JointState -> JointReading in the arm's order and in radians (``wire``: the joints'
    names and unit in the message), or a rejection reason."""

    def __init__(self, wire: WireFormat):
        self.wire = wire
        self.joint_names = wire.names
        self._cache: tuple[tuple[str, ...], np.ndarray] | None = None

    def __call__(self, msg: JointState, stamp: float) -> JointReading | str:
        names = tuple(msg.name)
        if self._cache is None or self._cache[0] != names:
            if len(set(names)) != len(names):
                return f"JointState repeats joint names {sorted(names)}"
            missing = [j for j in self.joint_names if j not in names]
            if missing:
                return (f"JointState lacks joints {missing} (got {list(names)}; expected "
                        f"{list(self.joint_names)})")
            self._cache = (names, np.array([names.index(j) for j in self.joint_names]))
        index = self._cache[1]
        n = len(names)
        if len(msg.position) != n or len(msg.velocity) != n:
            return (f"JointState has {n} names, {len(msg.position)} positions and "
                    f"{len(msg.velocity)} velocities (positions and velocities are required)")
        q = np.asarray(msg.position, dtype=np.float64)[index]
        qd = np.asarray(msg.velocity, dtype=np.float64)[index]
        if not (np.isfinite(q).all() and np.isfinite(qd).all()):
            return "JointState carries NaN or inf"
        effort = None
        if len(msg.effort) == n:
            effort = np.asarray(msg.effort, dtype=np.float64)[index]
        if self.wire.unit != "rad":
            q, qd = self.wire.units.q_in(q), self.wire.units.qd_in(qd)
        return JointReading(q, qd, stamp, effort=effort)


MAX_STAMP_AGE = 1.0
"""A JointState header stamp older than this on arrival [s] is taken for another host's
clock, not for the reading's age."""


def sample_time(msg: JointState, arrival: float, now_ns: int) -> float:
    """When the reading in ``msg`` was sampled, on the clock of ``arrival`` (the monotonic
    time it arrived): ``arrival`` less its age by the header stamp (``now_ns``: the ROS
    clock at arrival). Without a stamp, or with one from the future or more than
    ``MAX_STAMP_AGE`` old (a driver on another host's clock), the arrival time itself."""
    stamp_ns = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
    age = (now_ns - stamp_ns) * 1e-9
    return arrival - age if stamp_ns > 0 and 0.0 <= age <= MAX_STAMP_AGE else arrival


def joint_state(reading: JointReading, joint_names: Sequence[str], now_ns: int) -> JointState:
    """A JointState message of a reading, stamped ``now_ns`` (ROS time)."""
    msg = JointState()
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(now_ns, 1_000_000_000)
    msg.name = list(joint_names)
    msg.position = reading.q.tolist()
    msg.velocity = reading.qd.tolist()
    if reading.effort is not None:
        msg.effort = reading.effort.tolist()
    return msg


def command_message(cmd: JointCommand, command_type: str, joint_names: Sequence[str],
                    period: float) -> Float64MultiArray | JointTrajectory:
    """The command as a forward_command_controller array or a one-point trajectory that
    reaches the values after one period."""
    if command_type == "float64_multi_array":
        return Float64MultiArray(data=cmd.values.tolist())
    point = JointTrajectoryPoint()
    setattr(point, {"position": "positions", "velocity": "velocities",
                    "effort": "effort"}[cmd.interface], cmd.values.tolist())
    point.time_from_start = Duration(sec=0, nanosec=int(period * 1e9))
    return JointTrajectory(joint_names=list(joint_names), points=[point])


def parse_command(msg: Float64MultiArray | JointTrajectory, interface: str,
                  joint_names: Sequence[str]) -> JointCommand | str:
    """A received command in ``joint_names`` order, or a rejection reason."""
    n = len(joint_names)
    if isinstance(msg, JointTrajectory):
        if not msg.points:
            return "JointTrajectory has no points"
        field = {"position": "positions", "velocity": "velocities", "effort": "effort"}[interface]
        values = list(getattr(msg.points[0], field))
        names = list(msg.joint_names)
        if sorted(names) != sorted(joint_names) or len(values) != n:
            return f"JointTrajectory joints {names} / {len(values)} {field} do not match " \
                   f"{list(joint_names)}"
        values = [values[names.index(j)] for j in joint_names]
    else:
        values = list(msg.data)
        if len(values) != n:
            return f"command has {len(values)} values, the arm has {n} joints"
    v = np.asarray(values, dtype=np.float64)
    if not np.isfinite(v).all():
        return "command carries NaN or inf"
    return JointCommand(interface, v)  # type: ignore[arg-type]
