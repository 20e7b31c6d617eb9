"""Excitation recordings in the dataset layout (``robot_rl.data``), one episode each.

A recording is a dataset of task ``sysid`` (no env replays it; ``robot-rl data info`` and
LeRobot's tools read it like any other). One frame per command tick:

    observation.state       reading.q.{joint}, reading.qd.{joint}, reading.effort.{joint}
                            (NaN where the arm reports none), reading.stamp,
                            reading.arrived, command.sent: times [s] from the episode's
                            first reading
    observation.joint_pos   the newest reading's positions (and joint_vel, its velocities)
    action                  the excitation's target [rad]
    action.applied          the command sent after the shield and the hard limits [rad]

A tick without a new reading repeats the last one (same stamp); loading keeps each reading
once. ``load_recordings`` refuses data whose joints or rate do not fit the robot.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from robot_rl.data.format import DatasetError, DatasetSpec
from robot_rl.data.reader import Dataset
from robot_rl.data.writer import DatasetWriter
from robot_rl.recording.arm_import import ArmStreams
from robot_rl.robots import RobotSpec
from robot_rl.sysid.record import Recording

TASK = "sysid"
ACTION_SPACE = {"type": "joint_position_command", "interface": "position", "units": "rad"}
MIN_READING_RATE = 50.0
"""Joint readings slower than this [Hz] are too coarse for the servo's dynamics."""


def dataset_spec(robot: str, joint_names: tuple[str, ...], rate: float) -> DatasetSpec:
    names = [f"reading.{k}.{j}" for k in ("q", "qd", "effort") for j in joint_names]
    return DatasetSpec(
        fps=rate, robot_type=robot, task=TASK,
        task_text="system identification: an excitation trajectory on the arm",
        obs_names=(*names, "reading.stamp", "reading.arrived", "command.sent"),
        action_names=tuple(f"target.{j}" for j in joint_names),
        joint_names=tuple(joint_names), action_space=dict(ACTION_SPACE))


def save_recording(rec: Recording, out: str | Path, targets: np.ndarray | None = None,
                   resume: bool = False) -> int:
    """Append ``rec`` to the dataset at ``out`` as one episode (``targets`` (K, n): what
    the excitation asked at each tick; default: the commands sent); returns its index."""
    s = rec.streams
    spec = dataset_spec(rec.robot, rec.joint_names, rec.rate)
    targets = s.cmd if targets is None else np.asarray(targets)
    if targets.shape != s.cmd.shape:
        raise DatasetError(f"targets {targets.shape} do not match the commands {s.cmd.shape}")
    arrived = s.js_t + rec.reading_age
    effort = np.full_like(s.q, np.nan) if s.effort is None else s.effort
    # the newest reading that had arrived at each command's send
    ri = np.searchsorted(arrived, s.cmd_t, side="right") - 1
    with DatasetWriter(out, spec, resume=resume or Path(out, "meta").exists()) as w:
        w.begin_episode(source=f"sysid record, {rec.robot}")
        for k in range(len(s.cmd_t)):
            i = max(int(ri[k]), 0)
            obs = np.concatenate([s.q[i], s.qd[i], effort[i],
                                  [s.js_t[i], arrived[i], s.cmd_t[k]]])
            w.add_frame(obs=obs, joint_pos=s.q[i], joint_vel=s.qd[i], action=targets[k],
                        applied_action=s.cmd[k], next_obs=obs, reward=0.0, cost=0.0,
                        terminated=False, truncated=k == len(s.cmd_t) - 1, success=False)
        w.save_episode()
        return w.num_episodes - 1


def load_recordings(path: str | Path, robot: RobotSpec,
                    episodes: list[int] | None = None) -> tuple[list[ArmStreams], float]:
    """The recordings (one ``ArmStreams`` per episode) of the dataset at ``path``, checked
    against ``robot``; and the readings' median age on arrival (the sensing latency) [s]."""
    ds = Dataset(path)
    spec = ds.require_spec("sysid")
    if spec.task != TASK:
        raise DatasetError(f"{path} holds task {spec.task!r} episodes, not an excitation "
                           f"recording (robot-rl sysid record)")
    if tuple(spec.joint_names) != tuple(robot.joint_names) or spec.robot_type != robot.name:
        raise DatasetError(f"{path} was recorded on robot {spec.robot_type!r} with joints "
                           f"{list(spec.joint_names)}; robot {robot.name!r} has "
                           f"{list(robot.joint_names)}")
    n = robot.num_joints
    out, ages = [], []
    for e in episodes if episodes is not None else range(ds.num_episodes):
        if not 0 <= e < ds.num_episodes:
            raise DatasetError(f"{path} has episodes 0..{ds.num_episodes - 1}, not {e}")
        f = ds.episode(e)
        obs = f["observation.state"].astype(np.float64)
        stamp, arrived, sent = obs[:, 3 * n], obs[:, 3 * n + 1], obs[:, 3 * n + 2]
        _, first = np.unique(stamp, return_index=True)
        keep = np.sort(first)
        effort = obs[keep, 2 * n:3 * n]
        js_t = stamp[keep]
        if len(js_t) < 2:
            raise DatasetError(f"{path} episode {e} holds fewer than two joint readings")
        rate = (len(js_t) - 1) / (js_t[-1] - js_t[0])
        if rate < MIN_READING_RATE:
            raise DatasetError(f"{path} episode {e}: joint readings at {rate:.1f} Hz, slower "
                               f"than the {MIN_READING_RATE:g} Hz an arm's servo dynamics need")
        cmd_rate = (len(sent) - 1) / max(sent[-1] - sent[0], 1e-9)
        if abs(cmd_rate / spec.fps - 1) > 0.2:
            raise DatasetError(f"{path} episode {e}: commands at {cmd_rate:.1f} Hz, but the "
                               f"dataset says {spec.fps:g} Hz")
        out.append(ArmStreams(js_t=js_t, q=obs[keep, :n], qd=obs[keep, n:2 * n],
                              cmd_t=sent, cmd=f["action.applied"].astype(np.float64),
                              effort=None if np.isnan(effort).any() else effort))
        ages.append(arrived[keep] - js_t)
    age = float(np.median(np.concatenate(ages))) if ages else 0.0
    return out, age
