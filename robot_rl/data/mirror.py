"""Mirror images of demonstrations, for a task and an arm symmetric about the base's x-z plane.

    signs = dataset_mirror_signs(ds)               # what changes sign under y -> -y
    frames = with_mirror_images(frames, signs)     # every episode twice: as recorded, mirrored
    batch = mirror_half(batch, signs, gen)         # replay: each transition mirrored or not

Where a task's scene, reset distribution, rewards and success are symmetric under y -> -y
(``TaskDef.mirror``) and so is its arm (``RobotSpec.mirror``), the mirror image of a recorded
episode is an episode of the same task: the observation and the action with the signs
below. Doubling a few demonstrations this way is the symmetry augmentation rsl_rl's PPO
offers its legged tasks (``symmetry_cfg``'s data augmentation), here for behaviour cloning
(``robot-rl bc --mirror``), and for off-policy RL, whose replay transitions are mirrored at
random as they are sampled (``robot-rl residual --mirror``).

The action's signs follow from its space: joint spaces take the arm's joint signs;
end-effector spaces flip a position's y and an axis-angle rotation's x and z (an axial
vector: S w -> -S w for S = diag(1, -1, 1)); a gripper keeps its sign. An end-effector
target box must be centred on y = 0.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import torch

from robot_rl.data.format import DatasetSpec
from robot_rl.data.reader import Dataset
from robot_rl.errors import ConfigError
from robot_rl.replay import Batch
from robot_rl.robots import RobotSpec, get_robot
from robot_rl.sim.tasks import get_task
from robot_rl.sim.tasks.base import AXIAL_MIRROR, Y_MIRROR

_JOINT_SPACES = ("joint_delta", "joint_velocity", "joint_torque")
_EE_SPACES = ("ee_delta", "ee_pose")

EPISODE_OFFSET = 1_000_000
"""A mirrored episode's index: the recorded one's plus this."""


@dataclasses.dataclass(frozen=True)
class MirrorSigns:
    """Signs of ``observation.state`` (O,) and ``action`` (A,) in the mirror image."""

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


def mirror_signs(spec: DatasetSpec) -> MirrorSigns:
    """The signs of a dataset of one of our tasks, from its task's and its arm's symmetry
    (the observation terms by name, ``term.i``); a clear error where either has none."""
    task = get_task(spec.task)
    if task.mirror is None:
        raise ConfigError(f"task {spec.task!r} declares no mirror symmetry (TaskDef.mirror): "
                          f"its demonstrations cannot be mirrored")
    robot = get_robot(spec.robot_type)
    action = action_signs(spec.action_space, robot)
    terms: dict[str, int] = {}
    for name in spec.obs_names:
        term = name.rsplit(".", 1)[0]
        terms[term] = terms.get(term, 0) + 1
    obs: list[float] = []
    for term, width in terms.items():
        if term not in task.mirror:
            raise ConfigError(f"task {spec.task!r} gives no mirror image of its observation "
                              f"term {term!r}")
        rule = task.mirror[term]
        signs = (_joint_signs(robot, f"observation {term!r}") if rule == "joints"
                 else tuple(action) if rule == "action" else rule)
        if len(signs) != width:
            raise ConfigError(f"task {spec.task!r}: the mirror of {term!r} has {len(signs)} "
                              f"signs, the dataset {width} elements")
        obs.extend(signs)
    return MirrorSigns(np.asarray(obs, dtype=np.float32), action)


def dataset_mirror_signs(ds: Dataset) -> MirrorSigns:
    """``mirror_signs`` of a dataset; a clear error for one of no task of ours."""
    if ds.spec is None:
        raise ConfigError(f"--mirror: {ds.root} is a dataset of no task of ours, whose mirror "
                          f"image would be known")
    return mirror_signs(ds.spec)


def _joint_signs(robot: RobotSpec, what: str) -> tuple[float, ...]:
    if robot.mirror is None:
        raise ConfigError(f"robot {robot.name!r} declares no mirror symmetry "
                          f"(RobotSpec.mirror): no mirror image of {what}")
    return robot.mirror


def mirrored(frames: dict[str, np.ndarray], signs: MirrorSigns) -> dict[str, np.ndarray]:
    """The frames' mirror images: ``observation.state`` and ``action`` with their signs
    flipped, episode indices offset by ``EPISODE_OFFSET``; other features (the joint
    readings of the arm, camera frames) are left out, as nothing learns from them here."""
    return {"observation.state": frames["observation.state"] * signs.obs,
            "action": frames["action"] * signs.action,
            "episode_index": frames["episode_index"] + EPISODE_OFFSET}


def with_mirror_images(frames: dict[str, np.ndarray], signs: MirrorSigns
                       ) -> dict[str, np.ndarray]:
    """The frames, then their mirror images: every episode twice (the features of
    ``mirrored``)."""
    mirror = mirrored(frames, signs)
    return {k: np.concatenate([frames[k], v]) for k, v in mirror.items()}


def mirror_half(batch: Batch, signs: MirrorSigns, gen: torch.Generator) -> Batch:
    """The batch with each transition replaced by its mirror image with probability 1/2:
    its observation, next observation and action times their signs; the reward, cost and
    end are the mirror image's own (the task is symmetric). Other tensors (``extra``) are
    kept as they are."""
    dev = batch.obs.device
    flip = torch.rand(batch.obs.shape[0], 1, generator=gen, device=gen.device).to(dev) < 0.5
    obs = torch.as_tensor(signs.obs, device=dev)
    act = torch.as_tensor(signs.action, device=dev)
    if batch.obs.shape[1] != obs.shape[0] or batch.action.shape[1] != act.shape[0]:
        raise ConfigError(f"mirror signs of {obs.shape[0]} observation and {act.shape[0]} "
                          f"action elements, transitions of {batch.obs.shape[1]} and "
                          f"{batch.action.shape[1]}")
    return dataclasses.replace(batch, obs=torch.where(flip, batch.obs * obs, batch.obs),
                               next_obs=torch.where(flip, batch.next_obs * obs,
                                                    batch.next_obs),
                               action=torch.where(flip, batch.action * act, batch.action))
