"""The policy's observation on the robot, built by the task's own observation terms.

The env computes observations with the task's term functions on a ``SimState``; on the
robot, ``TaskObserver`` keeps a one-env simulation of the task whose arm it sets to each
measurement (positions, velocities, then kinematics and sensors) and calls the very same
terms, so sim and hardware cannot drift apart. The task's goal (its ``target`` buffer) is
sampled by the task's reset, or set from outside (a goal topic).

Only tasks whose observation depends on the arm, the goal and the last actions can run here:
at construction every term is probed by moving everything the robot does not measure
(objects, other joints, markers); a term that changes is refused by name. A policy that sees
cameras (its task config names them) observes only the terms the robot measures, as the env
gives it in training (``sim.measurable``); the objects are in its images, which the deploy
runtime feeds (``hardware.camera_feed``).

    observer = TaskObserver(task_config_from_meta(policy.meta), layout=policy layout)
    obs = observer(q, qd, action, prev_action)        # (obs_dim,) float32
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import mujoco
import numpy as np
import torch

from robot_rl.config_io import from_dict, to_dict
from robot_rl.controllers.pipeline import ActionPipeline
from robot_rl.errors import ConfigError
from robot_rl.sim import BatchedEnv, RobotSpec, make_task_config
from robot_rl.sim.configs import dr_preset
from robot_rl.sim.measurable import unmeasured_terms
from robot_rl.sim.tasks.config import TaskConfig
from robot_rl.sim.vec_env import layout_columns

GOAL_BUFFERS = ("target", "goal")
"""The task buffers a goal sets, the first the task has (reach's target point, push's goal)."""


def goal_buffer(buffers: Mapping[str, Any]) -> str | None:
    """The name of the task buffer that holds its goal point (None: the task has none)."""
    return next((b for b in GOAL_BUFFERS if b in buffers), None)


def task_config_from_meta(meta: dict[str, Any]) -> TaskConfig:
    """The task config an artifact was trained with, from its ``policy.json`` (its whole
    ``env`` config; artifacts exported before it was recorded: robot, rates, action space,
    controller, shield and safety thresholds); randomization off."""
    if "env" in meta:
        try:
            cfg = from_dict(TaskConfig, meta["env"])
        except (KeyError, TypeError) as e:
            raise ConfigError(f"policy.json's env config is malformed: {e}") from None
        return dataclasses.replace(cfg, dr=dr_preset("off"))
    try:
        base = make_task_config(meta["task"])
        ctl = meta["control"]
        fields = to_dict(base)
        fields.update(robot=meta["robot"]["name"], physics_dt=ctl["physics_dt"],
                      decimation=ctl["decimation"], action=meta["action"]["space"],
                      controller=ctl["controller"], shield=meta["shield"],
                      safety=meta["safety_costs"], dr=to_dict(dr_preset("off")))
    except (KeyError, TypeError) as e:
        raise ConfigError(f"policy.json lacks a field of the task config: {e}") from None
    return from_dict(type(base), fields)


class TaskObserver:
    """Builds observations from measurements with the task's terms (see module docstring)."""

    def __init__(self, cfg: TaskConfig, layout: Sequence[tuple[str, int]] | None = None,
                 seed: int = 0):
        sees_cameras = cfg.cameras is not None
        # the images come from the robot's cameras: the observer renders nothing
        cfg = dataclasses.replace(cfg, dr=dr_preset("off"), cameras=None)
        self.env = BatchedEnv(cfg, 1, seed=seed, nthread=1)
        self.cfg = cfg
        self.state = self.env.state
        s = self.state
        self._qpos, self._qvel = s.qpos[0].numpy(), s.qvel[0].numpy()
        self._action, self._prev_action = s.action[0].numpy(), s.prev_action[0].numpy()
        self._qadr = np.array([s.model.joint(j).qposadr[0] for j in s.robot.joint_names])
        self._dofs = np.asarray(s.joint_dofs)
        self._ids = torch.zeros(1, dtype=torch.long)
        full = list(self.env.obs_layout)
        # which terms depend on state the robot does not measure, probed away from symmetric
        # poses, where a probe could miss a dependence
        zeros = np.zeros(self.env.act_dim, dtype=np.float32)
        q = self.state.limits.home.numpy() + 0.1
        self._set(q, np.zeros(len(q)), zeros, zeros)
        hidden = unmeasured_terms(self.env)
        wanted = None if layout is None else [(str(n), int(w)) for n, w in layout]

        def refuse_unmeasured(names: set[str]) -> None:
            changed = [n for n in hidden if n in names]
            if changed:
                raise ConfigError(
                    f"task {cfg.name!r} observes {changed}, which depend on state the robot "
                    f"does not measure (objects, fingers, markers); deploy runs tasks whose "
                    f"observation is the arm's joint state, the goal and the last actions "
                    f"(reach), or a pixel student that sees the objects through cameras: "
                    f"robot-rl distill-pixels --task {cfg.name} (--teacher RUN to distil "
                    f"your policy), robot-rl export runs/pixel_student.pt, then robot-rl "
                    f"deploy runs/pixel_student")

        self.layout = full
        if sees_cameras:  # the measured terms, or those of them the artifact's layout names
            self.layout = [t for t in full if t[0] not in hidden]
            if wanted is not None:
                refuse_unmeasured({n for n, _ in wanted})
                if set(wanted) <= set(self.layout):
                    self.layout = [t for t in self.layout if t in wanted]
        if wanted is not None and wanted != self.layout:
            raise ConfigError(f"the artifact's observation layout {wanted} is not what "
                              f"task {cfg.name!r} builds here {self.layout} (different "
                              f"robot_rl version or task definition?)")
        refuse_unmeasured({n for n, _ in self.layout})
        self._cols: list[int] | None = \
            layout_columns(full, [n for n, _ in self.layout]) if sees_cameras else None
        """Columns of the task's observation the policy sees (None: all of them)."""
        self.obs_dim = sum(w for _, w in self.layout)
        self._goal = goal_buffer(s.buffers)

    # -- what the deploy side shares with the env ------------------------------------------

    @property
    def pipeline(self) -> ActionPipeline:
        """The task's action pipeline (action space, controller, shield), bound to the task's
        model: the deploy runtime acts through it, as the env does."""
        return self.env.pipeline

    @property
    def model(self) -> mujoco.MjModel:
        """The task's compiled model (the arm's kinematics and dynamics on the robot)."""
        return self.env.model

    @property
    def robot(self) -> RobotSpec:
        """The robot the task is built for."""
        return self.env.robot

    # -- goal ------------------------------------------------------------------------------

    @property
    def goal(self) -> np.ndarray | None:
        """(3,) the task's goal point, or None if the task has none."""
        if self._goal is None:
            return None
        return self.state.buffers[self._goal][0].numpy().copy()

    def set_goal(self, pos: Sequence[float] | np.ndarray) -> None:
        """Set the goal point (world frame, metres)."""
        if self._goal is None:
            raise ConfigError(f"task {self.cfg.name!r} has no goal point to set")
        p = np.asarray(pos, dtype=np.float64)
        if p.shape != (3,) or not np.isfinite(p).all():
            raise ConfigError(f"a goal is 3 finite numbers, got {pos!r}")
        self.state.buffers[self._goal][0] = torch.from_numpy(p)

    def sample_goal(self, seed: int | None = None) -> np.ndarray | None:
        """Draw the task's reset distribution (goal and other task state); returns the goal."""
        self.env.reset(seed=seed)
        return self.goal

    # -- observations ----------------------------------------------------------------------

    def __call__(self, q: np.ndarray, qd: np.ndarray, action: np.ndarray,
                 prev_action: np.ndarray) -> np.ndarray:
        """(obs_dim,) float32 observation at joint state (q, qd) after ``action`` (A,)."""
        self._set(q, qd, action, prev_action)
        obs = self.env.observe(noise=False)[0].numpy()
        return obs if self._cols is None else obs[self._cols]

    def note_shield(self, acted: bool) -> None:
        """Whether a layer of ``MOTION_LAYERS`` reshaped the action whose reward is read next
        (the ``shield`` reward term reads it; False until told, as for recordings made
        without the shield's flags)."""
        self.state.shield_active[0] = acted

    def reward_cost(self) -> tuple[float, float]:
        """The task's reward and constraint cost at the last observed state (the env's own
        terms and weights)."""
        rewards, costs = self.env.reward_and_cost_terms()
        return float(rewards.sum(dtype=torch.float32)), float(costs.sum())

    def success(self) -> bool:
        """The task's success test at the last observed state."""
        return bool(self.env.task.success(self.state, self.cfg)[0])

    def _set(self, q: np.ndarray, qd: np.ndarray, action: np.ndarray,
             prev_action: np.ndarray) -> None:
        # numpy views of the CPU backend's buffers: a few µs, against ~80 for torch indexing
        self._qpos[self._qadr] = q
        self._qvel[self._dofs] = qd
        self.env.backend.forward(self._ids)
        self._action[:] = action
        self._prev_action[:] = prev_action
