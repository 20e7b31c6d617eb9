"""A real arm's logs as episodes of one of our tasks: joint states and position commands in,
the task's observations, action space, reward, cost and success out.

    n = import_streams(out, "reach", sources, goal=(0.5, -0.15, 0.3))

``sources(robot)`` yields one ``(source, ArmStreams)`` per episode, joints in the order of
the task's arm (a RobotSpec: its joint names and ranges): ``rosbag_import`` reads them from
bags, ``lerobot_import`` from a LeRobot dataset. The joint states are sampled at the task's
control rate (the newest sample at each tick); the action of a step is the newest command
before the next tick, converted into the task's action space (joint_delta: (target - q) /
scale, clipped to [-1, 1]).
Observations, reward, cost and success come from the task's own terms (``TaskObserver``),
so only tasks whose observation the joint state and the goal determine can be imported
(reach, not push: no joint state says where the puck is). Imported episodes have no reset
seed: they cannot be replayed in simulation.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np

from robot_rl.data.format import DatasetError
from robot_rl.data.writer import DatasetWriter
from robot_rl.robots import RobotSpec

TIME_TOL = 1e-6
"""Seconds by which a sample may miss its tick (floating-point rounding of the times)."""


@dataclasses.dataclass
class ArmStreams:
    """What a log holds of one arm: times [s] from its first sample."""

    js_t: np.ndarray  # (M,)
    q: np.ndarray  # (M, n) joint positions [rad]
    qd: np.ndarray  # (M, n) joint velocities [rad/s]
    cmd_t: np.ndarray  # (K,)
    cmd: np.ndarray  # (K, n) joint position targets [rad]
    effort: np.ndarray | None = None  # (M, n) measured joint efforts [Nm], where logged


Sources = Callable[[RobotSpec], Iterator[tuple[str, ArmStreams]]]
"""the task's arm -> (source label, streams) per episode."""


def import_streams(out: Path, task: str, sources: Sources, goal: Sequence[float] | None = None,
                   resume: bool = False, robot: str | None = None) -> int:
    """Write each episode ``sources`` yields into the dataset at ``out``; returns how many.
    ``robot``: the arm that was logged (default: the task's own, arm7)."""
    from robot_rl.hardware.observation import TaskObserver
    from robot_rl.recording.record import dataset_spec
    from robot_rl.sim import make_task_config

    observer = TaskObserver(make_task_config(task, robot=robot))
    env = observer.env
    space = env.cfg.action
    if space.type != "joint_delta" or env.pipeline.action_space.has_gripper:
        raise DatasetError(f"importing position commands needs a joint_delta action space "
                           f"without a gripper; task {task!r} uses {space.type!r}")
    if goal is not None:
        observer.set_goal(goal)
    scale = float(space.scale)
    # no cameras; of the env's making only its arm: the episodes are not replayable
    spec = dataset_spec(env, making={"robot": env.cfg.robot} if robot is not None else None)
    dt = env.control_dt
    added = 0
    with DatasetWriter(out, spec, resume=resume) as writer:
        for source, s in sources(env.robot):
            ticks = np.arange(s.js_t[0], s.js_t[-1] + TIME_TOL, dt)
            if len(ticks) < 2:
                raise DatasetError(f"{source} spans {s.js_t[-1] - s.js_t[0]:.3f} s: shorter "
                                   f"than two control steps ({dt:g} s)")
            ji = np.searchsorted(s.js_t, ticks + TIME_TOL, side="right") - 1
            ci = np.searchsorted(s.cmd_t, ticks + dt - TIME_TOL, side="left") - 1
            steps = [k for k in range(len(ticks) - 1) if ci[k] >= 0]  # before the next tick
            if not steps:
                raise DatasetError(f"{source}: no command before the joint states end")
            writer.begin_episode(source=source)
            prev = action = np.zeros(env.act_dim)
            obs = observer(s.q[ji[steps[0]]], s.qd[ji[steps[0]]], action, prev)
            for n, k in enumerate(steps):
                q, qd = s.q[ji[k]], s.qd[ji[k]]
                new = np.clip((s.cmd[ci[k]] - q) / scale, -1.0, 1.0)
                prev, action = action, new
                next_obs = observer(s.q[ji[k + 1]], s.qd[ji[k + 1]], action, prev)
                reward, cost = observer.reward_cost()
                writer.add_frame(obs=obs, joint_pos=q, joint_vel=qd, action=action,
                                 next_obs=next_obs, reward=reward, cost=cost, terminated=False,
                                 truncated=n == len(steps) - 1, success=observer.success())
                obs = next_obs
            writer.save_episode()
            added += 1
    return added
