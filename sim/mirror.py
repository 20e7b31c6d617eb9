"""The signs of an observation and an action in the mirror image about the arm base's x-z
plane (y -> -y), for a task and an arm that declare that symmetry.

    signs = env_mirror_signs(env)                        # a BatchedEnv's (O,) and (A,) signs
    signs = term_mirror_signs("push", "arm7", space, [("joint_pos", 7), ...])

Where a task's scene, reset distribution, rewards and success are symmetric under y -> -y
(``TaskDef.mirror``) and so is its arm (``RobotSpec.mirror``), the mirror image of a
transition is a transition of the same task: its observations and action times these signs,
its reward, cost and end unchanged. Behaviour cloning doubles its demonstrations with them
(``robot_rl.data.mirror``); the off-policy learners mirror replayed transitions at random
(``robot_rl.replay.mirror_half``, ``--mirror``).

An action's signs follow from its space: joint spaces take the arm's joint signs;
end-effector spaces flip a position's y and an axis-angle rotation's x and z (an axial
vector: S w -> -S w for S = diag(1, -1, 1)); a gripper keeps its sign. An end-effector
target box must be centred on y = 0.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

import numpy as np

from robot_rl.config_io import to_dict
from robot_rl.errors import ConfigError
from robot_rl.robots import RobotSpec, get_robot
from robot_rl.sim.env import BatchedEnv
from robot_rl.sim.tasks import get_task
from robot_rl.sim.tasks.base import AXIAL_MIRROR, Y_MIRROR, Mirror

_JOINT_SPACES = ("joint_delta", "joint_velocity", "joint_torque")
_EE_SPACES = ("ee_delta", "ee_pose")


@dataclasses.dataclass(frozen=True)
class MirrorSigns:
    """Signs of an observation (O,) and an action (A,) in the mirror image."""

    obs: np.ndarray
    action: np.ndarray

    def with_action_in_obs(self) -> MirrorSigns:
        """The signs of an observation completed with an action (O + A,): the residual's,
        whose observation ends with the base's action."""
        return MirrorSigns(np.concatenate([self.obs, self.action]), self.action)


def action_signs(space: dict[str, Any], robot: RobotSpec) -> np.ndarray:
    """(A,) signs of an action of ``space`` (a dataset's ``action_space``, an
    ``ActionConfig`` as a dict) on ``robot`` in the mirror image."""
    kind = space.get("type")
    if kind in _JOINT_SPACES:
        signs = list(_joint_signs(robot, f"{kind} actions"))
    elif kind in _EE_SPACES:
        lo, hi = (space.get("box_lo"), space.get("box_hi")) if kind == "ee_delta" else (
            space.get("lo"), space.get("hi"))
        if lo is not None and hi is not None and not np.isclose(lo[1], -hi[1]):
            raise ConfigError(f"{kind} actions in a box from y = {lo[1]:g} to {hi[1]:g} m: "
                              f"their mirror image needs a box centred on y = 0")
        signs = [*Y_MIRROR, *(AXIAL_MIRROR if space.get("rotation", True) else ())]
    else:
        raise ConfigError(f"no mirror image for {kind!r} actions (mirrored: "
                          f"{', '.join(_JOINT_SPACES + _EE_SPACES)})")
    if space.get("gripper", False) and robot.gripper is not None:
        signs.append(1.0)
    return np.asarray(signs, dtype=np.float32)


CONFIG_TERMS: dict[str, Mirror] = {"prev_action": "action"}
"""The mirror images of the observation terms a task config adds (``observe_prev_action``)."""


def term_mirror_signs(task_name: str, robot_name: str, action_space: dict[str, Any],
                      terms: Iterable[tuple[str, int]]) -> MirrorSigns:
    """The signs of an observation made of ``terms`` ((name, width), in order) and of an
    action of ``action_space``, for ``task_name`` on ``robot_name``; a one-line error where
    the task, the arm, a term or the action space has no declared mirror image."""
    task = get_task(task_name)
    if task.mirror is None:
        raise ConfigError(f"task {task_name!r} declares no mirror symmetry (TaskDef.mirror): "
                          f"its transitions cannot be mirrored")
    robot = get_robot(robot_name)
    action = action_signs(action_space, robot)
    obs: list[float] = []
    mirror: dict[str, Mirror] = {**CONFIG_TERMS, **task.mirror}
    for term, width in terms:
        if term not in mirror:
            raise ConfigError(f"task {task_name!r} gives no mirror image of its observation "
                              f"term {term!r}")
        signs = _term_signs(mirror[term], width, robot, action, term)
        if len(signs) != width:
            raise ConfigError(f"task {task_name!r}: the mirror of {term!r} has {len(signs)} "
                              f"signs, the observation {width} elements")
        obs.extend(signs)
    return MirrorSigns(np.asarray(obs, dtype=np.float32), action)


def env_mirror_signs(env: BatchedEnv) -> MirrorSigns:
    """The signs of the policy observation (``obs_layout``) and the action of ``env``."""
    return term_mirror_signs(env.cfg.name, env.cfg.robot, to_dict(env.cfg.action),
                             env.obs_layout)


def _term_signs(rule: Mirror, width: int, robot: RobotSpec, action: np.ndarray,
                term: str) -> tuple[float, ...]:
    """The signs one observation term of ``width`` elements takes under ``rule``."""
    if rule == "joints":
        return _joint_signs(robot, f"observation {term!r}")
    if rule == "action":
        return tuple(float(a) for a in action)
    if rule == "kept":
        return (1.0,) * width
    return rule


def _joint_signs(robot: RobotSpec, what: str) -> tuple[float, ...]:
    if robot.mirror is None:
        raise ConfigError(f"robot {robot.name!r} declares no mirror symmetry "
                          f"(RobotSpec.mirror): no mirror image of {what}")
    return robot.mirror
