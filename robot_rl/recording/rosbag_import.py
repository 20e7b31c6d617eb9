"""Import rosbag2 / MCAP recordings of a real arm into a dataset (one bag = one episode).

    robot-rl data import run1/ run2/ --task reach --goal 0.5 -0.15 0.3 --out data/real

Read with ``rosbags`` (sqlite3 and MCAP storage, no ROS installation): sensor_msgs/JointState on
``--joint-states`` and the commands on ``--commands`` (std_msgs/Float64MultiArray of joint
position targets, as forward_position_controller takes them). The joint states are sampled at
the task's control rate (the newest message at each tick, reordered by joint name); the
action of a step is the newest command published before the next tick, converted into the
task's action space (joint_delta: (target - q) / scale, clipped to [-1, 1]). Observations,
reward, cost and success come from the task's own terms (``TaskObserver``), so only tasks
whose observation the joint state and the goal determine can be imported (reach, not push:
the puck is not in /joint_states). The bag's episode has no reset seed: it cannot be replayed
in simulation.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from robot_rl.data.format import DatasetError
from robot_rl.data.writer import DatasetWriter


@dataclasses.dataclass
class BagStreams:
    """What a bag holds of one arm: times [s] from the bag's first message."""

    js_t: np.ndarray  # (M,)
    q: np.ndarray  # (M, n)
    qd: np.ndarray  # (M, n)
    cmd_t: np.ndarray  # (K,)
    cmd: np.ndarray  # (K, n)


def read_bag(path: Path, joint_names: Sequence[str], joint_states: str = "/joint_states",
             commands: str = "/forward_position_controller/commands") -> BagStreams:
    """The joint states and commands of a bag, joints in ``joint_names`` order."""
    from rosbags.highlevel import AnyReader
    from rosbags.typesys import Stores, get_typestore

    names = list(joint_names)
    js: list[tuple[int, np.ndarray, np.ndarray]] = []
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
                q = np.asarray(msg.position, dtype=np.float64)[order]
                qd = np.asarray(msg.velocity, dtype=np.float64)[order] if len(
                    msg.velocity) == len(msg.name) else np.zeros(len(names))
                js.append((stamp, q, qd))
            else:
                data = np.asarray(msg.data, dtype=np.float64)
                if data.shape != (len(names),):
                    raise DatasetError(f"bag {path}: a command has {data.size} values, the "
                                       f"arm has {len(names)} joints")
                cmds.append((stamp, data))
    finally:
        reader.close()
    if len(js) < 2 or not cmds:
        raise DatasetError(f"bag {path} holds {len(js)} joint states and {len(cmds)} commands:"
                           f" too few to make an episode")
    t0 = min(js[0][0], cmds[0][0])
    return BagStreams(np.array([s - t0 for s, _, _ in js]) * 1e-9, np.stack([q for _, q, _ in js]),
                      np.stack([v for _, _, v in js]), np.array([s - t0 for s, _ in cmds]) * 1e-9,
                      np.stack([c for _, c in cmds]))


def import_bags(bags: Sequence[Path], out: Path, task: str, goal: Sequence[float] | None = None,
                joint_states: str = "/joint_states",
                commands: str = "/forward_position_controller/commands",
                resume: bool = False) -> int:
    """Import each bag as an episode of the dataset at ``out``; returns the episodes added."""
    from robot_rl.hardware.observation import TaskObserver
    from robot_rl.recording.record import dataset_spec
    from robot_rl.sim import make_task_config

    observer = TaskObserver(make_task_config(task))
    env = observer.env
    kind = getattr(env.cfg.action, "type", "")
    if kind != "joint_delta" or env.pipeline.action_space.has_gripper:
        raise DatasetError(f"importing position commands needs a joint_delta action space "
                           f"without a gripper; task {task!r} uses {kind!r}")
    if goal is not None:
        observer.set_goal(goal)
    scale = float(env.cfg.action.scale)  # type: ignore[attr-defined]
    spec = dataset_spec(env)  # no cameras, no env making: the episodes are not replayable
    dt = env.control_dt
    added = 0
    with DatasetWriter(out, spec, resume=resume) as writer:
        for bag in bags:
            s = read_bag(bag, env.robot.joint_names, joint_states, commands)
            ticks = np.arange(s.js_t[0], s.js_t[-1], dt)
            if len(ticks) < 2:
                raise DatasetError(f"bag {bag} spans {s.js_t[-1] - s.js_t[0]:.3f} s: shorter "
                                   f"than two control steps ({dt:g} s)")
            ji = np.searchsorted(s.js_t, ticks, side="right") - 1
            ci = np.searchsorted(s.cmd_t, ticks + dt, side="left") - 1  # before the next tick
            steps = [k for k in range(len(ticks) - 1) if ci[k] >= 0]
            if not steps:
                raise DatasetError(f"bag {bag}: no command before the joint states end")
            writer.begin_episode(source=f"rosbag:{Path(bag).name}")
            prev = action = np.zeros(env.act_dim)
            obs = observer(s.q[ji[steps[0]]], s.qd[ji[steps[0]]], action, prev)
            for n, k in enumerate(steps):
                q, qd = s.q[ji[k]], s.qd[ji[k]]
                new = np.clip((s.cmd[ci[k]] - q) / scale, -1.0, 1.0)
                prev, action = action, new
                nq, nqd = s.q[ji[k + 1]], s.qd[ji[k + 1]]
                next_obs = observer(nq, nqd, action, prev)
                reward, cost = observer.reward_cost()
                writer.add_frame(obs=obs, joint_pos=q, joint_vel=qd, action=action,
                                 next_obs=next_obs, reward=reward, cost=cost, terminated=False,
                                 truncated=n == len(steps) - 1, success=observer.success())
                obs = next_obs
            writer.save_episode()
            added += 1
    return added
