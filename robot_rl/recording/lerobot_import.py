"""A LeRobot dataset of a real arm as episodes of one of our tasks.

    robot-rl data import ~/lerobot/my_arm --task reach --goal 0.5 -0.15 0.3 --out data/my_arm

Any LeRobotDataset v3.0 (several episodes per file, list columns: ``Dataset`` reads them):
joint positions come from the state feature (``--state-key``, default observation.state) and
joint position targets from the action feature (``--action-key``, default action). Each of
the task robot's joints is found by name in the feature's names, as ``j`` or as LeRobot
names motors, ``j.pos``; velocities from ``j.vel`` where the state has them, else
differentiated over the frames' times. LeRobot's arms often log degrees
(``--angle-unit deg``, its motors' ``use_degrees``; 0 is taken to be the joint's 0) or its
normalized range (``--angle-unit normalized``: -100 .. 100 across each joint's calibrated
range, LeRobot's default for SO-100/SO-101 arm joints, taken to be the arm's joint range:
-100 its lower limit, 0 the middle, 100 its upper limit). A gripper column (``gripper.pos``,
0 .. 100) is not a joint of the arm: import writes tasks whose actions are the arm's joints
(reach), so it is left out. The frames' times are ``frame_index / fps`` (how LeRobot stamps
them), and ``arm_import`` samples them at the task's control rate.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from robot_rl.data.format import DatasetError
from robot_rl.data.reader import Dataset
from robot_rl.data.recover import feature_names
from robot_rl.recording.arm_import import ArmStreams, Sources, import_streams
from robot_rl.robots import RobotSpec
from robot_rl.robots.units import AngleUnit, JointUnits


def is_dataset(path: Path) -> bool:
    """Whether ``path`` is a dataset folder (LeRobot's or ours) rather than a bag."""
    return (Path(path) / "meta" / "info.json").is_file()


def joint_columns(names: Sequence[str], joints: Sequence[str], suffixes: tuple[str, ...]
                  ) -> list[int] | None:
    """Index in ``names`` of each joint (as ``joint + suffix``); None if a joint is missing."""
    where = {n: i for i, n in enumerate(names)}
    out = []
    for j in joints:
        found = [where[j + s] for s in suffixes if j + s in where]
        if not found:
            return None
        out.append(found[0])
    return out


def read_lerobot(root: Path, state_key: str = "observation.state", action_key: str = "action",
                 angle_unit: AngleUnit = "rad") -> Sources:
    """The episodes of the LeRobot dataset at ``root`` as arm streams (see module
    docstring); DatasetError naming what is missing."""
    ds = Dataset(root)
    feats = ds.features
    for key in (state_key, action_key):
        if key not in feats:
            raise DatasetError(f"{root} has no feature {key!r} (it has {sorted(feats)})")
    if not ds.fps > 0:
        raise DatasetError(f"{root}: info.json has no positive fps")
    state_names, action_names = feature_names(feats, state_key), feature_names(feats, action_key)

    def sources(robot: RobotSpec) -> Iterator[tuple[str, ArmStreams]]:
        joints = robot.joint_names
        units = JointUnits.of(angle_unit, robot.num_joints, robot.q_min, robot.q_max,
                              robot.name)
        pos = joint_columns(state_names, joints, ("", ".pos", "_pos"))
        cmd = joint_columns(action_names, joints, ("", ".pos", "_pos"))
        for key, cols, names in ((state_key, pos, state_names), (action_key, cmd, action_names)):
            if cols is None:
                raise DatasetError(f"{root}: {key} names {list(names)}; the task's robot has "
                                   f"joints {list(joints)} (looked for each as j or j.pos)")
        assert pos is not None and cmd is not None
        vel = joint_columns(state_names, joints, (".vel", "_vel"))
        for r in ds.episodes:
            i = int(r["episode_index"])
            f = ds.episode(i)
            t = f["frame_index"].astype(np.float64) / ds.fps
            if len(t) < 2:
                continue
            state = f[state_key].astype(np.float64)
            q = units.q_in(state[:, pos])
            qd = units.qd_in(state[:, vel]) if vel is not None else np.gradient(q, t, axis=0)
            target = units.q_in(f[action_key].astype(np.float64)[:, cmd])
            yield f"lerobot:{Path(root).name}/{i}", ArmStreams(t, q, qd, t, target)

    return sources


def import_lerobot(roots: Sequence[Path], out: Path, task: str,
                   goal: Sequence[float] | None = None, state_key: str = "observation.state",
                   action_key: str = "action", angle_unit: AngleUnit = "rad",
                   resume: bool = False, robot: str | None = None) -> int:
    """Import every episode of each LeRobot dataset into ``out`` as ``task`` on ``robot``
    (default: the task's own arm); returns the episodes added."""
    readers = [read_lerobot(Path(r), state_key, action_key, angle_unit) for r in roots]

    def sources(arm: RobotSpec) -> Iterator[tuple[str, ArmStreams]]:
        for read in readers:
            yield from read(arm)

    return import_streams(out, task, sources, goal, resume, robot)
