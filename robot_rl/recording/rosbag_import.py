"""Import rosbag2 / MCAP recordings of a real arm into a dataset (one bag = one episode).

    robot-rl data import run1/ run2/ --task reach --goal 0.5 -0.15 0.3 --out data/real

Read with ``rosbags`` (sqlite3 and MCAP storage, no ROS installation): sensor_msgs/JointState on
``--joint-states`` (reordered by joint name) and the commands on ``--commands``
(std_msgs/Float64MultiArray of joint position targets, as forward_position_controller takes
them); ``arm_import`` turns them into the task's steps. A driver that names the joints its
own way (``--joint-names``, one per arm joint in the arm's order) or logs LeRobot's units
(``--angle-unit``) is read as the nodes' ``joint_names`` and ``position_unit`` describe it
(``robot_rl.robots.units``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from robot_rl.data.format import DatasetError
from robot_rl.recording.arm_import import ArmStreams, import_streams
from robot_rl.robots import RobotSpec
from robot_rl.robots.units import JointUnits, wire_joint_names


def read_bag(path: Path, robot: RobotSpec, joint_states: str = "/joint_states",
             commands: str = "/forward_position_controller/commands",
             wire_names: Sequence[str] = (), angle_unit: str = "rad") -> ArmStreams:
    """The joint states (with efforts, where every message has them) and commands of a bag,
    in ``robot``'s joint order and in radians; the bag names the joints ``wire_names``
    (default: the robot's names) and gives angles in ``angle_unit``."""
    from rosbags.highlevel import AnyReader
    from rosbags.typesys import Stores, get_typestore

    names = list(wire_joint_names(wire_names, robot.joint_names, robot.name))
    units = JointUnits.of(angle_unit, robot.num_joints, robot.q_min, robot.q_max, robot.name)
    js: list[tuple[int, np.ndarray, np.ndarray, np.ndarray | None]] = []
    cmds: list[tuple[int, np.ndarray]] = []
    try:
        reader = AnyReader([Path(path)], default_typestore=get_typestore(Stores.ROS2_KILTED))
        reader.open()
    except Exception as e:  # noqa: BLE001 - rosbags raises several kinds for a bad bag
        raise DatasetError(f"cannot open bag {path}: {e}") from None
    try:
        conns = {c.topic: c for c in reader.connections}
        for topic in (joint_states, commands):
            if topic not in conns:
                raise DatasetError(f"bag {path} has no topic {topic} (it has "
                                   f"{sorted(conns)})")
        for conn, stamp, raw in reader.messages([conns[joint_states], conns[commands]]):
            msg: Any = reader.deserialize(raw, conn.msgtype)
            if conn.topic == joint_states:
                try:
                    order = [list(msg.name).index(j) for j in names]
                except ValueError:
                    raise DatasetError(f"bag {path}: a JointState names {list(msg.name)}, "
                                       f"the task's robot has {names}") from None
                q = units.q_in(np.asarray(msg.position, dtype=np.float64)[order])
                qd = units.qd_in(np.asarray(msg.velocity, dtype=np.float64)[order]) if len(
                    msg.velocity) == len(msg.name) else np.zeros(len(names))
                effort = np.asarray(msg.effort, dtype=np.float64)[order] if len(
                    msg.effort) == len(msg.name) else None
                js.append((stamp, q, qd, effort))
            else:
                data = np.asarray(msg.data, dtype=np.float64)
                if data.shape != (len(names),):
                    raise DatasetError(f"bag {path}: a command has {data.size} values, the "
                                       f"arm has {len(names)} joints")
                cmds.append((stamp, units.q_in(data)))
    finally:
        reader.close()
    if len(js) < 2 or not cmds:
        raise DatasetError(f"bag {path} holds {len(js)} joint states and {len(cmds)} commands:"
                           f" too few to make an episode")
    t0 = min(js[0][0], cmds[0][0])
    efforts = [e for *_, e in js if e is not None]
    return ArmStreams(np.array([s - t0 for s, *_ in js]) * 1e-9,
                      np.stack([q for _, q, *_ in js]), np.stack([v for _, _, v, _ in js]),
                      np.array([s - t0 for s, _ in cmds]) * 1e-9, np.stack([c for _, c in cmds]),
                      effort=np.stack(efforts) if len(efforts) == len(js) else None)


def import_bags(bags: Sequence[Path], out: Path, task: str, goal: Sequence[float] | None = None,
                joint_states: str = "/joint_states",
                commands: str = "/forward_position_controller/commands",
                resume: bool = False, robot: str | None = None,
                wire_names: Sequence[str] = (), angle_unit: str = "rad") -> int:
    """Import each bag as an episode of the dataset at ``out`` (``robot``: the arm that was
    logged; default: the task's own; ``wire_names``, ``angle_unit``: ``read_bag``'s);
    returns the episodes added."""
    def sources(arm: RobotSpec) -> Iterator[tuple[str, ArmStreams]]:
        for bag in bags:
            yield f"rosbag:{Path(bag).name}", read_bag(bag, arm, joint_states, commands,
                                                       wire_names, angle_unit)

    return import_streams(out, task, sources, goal, resume, robot)
