"""What a task is: a config dataclass plus pure functions, bundled in a ``TaskDef``.

    observations  name -> fn(state, cfg) -> (E, k)      concatenated in order into obs
    privileged    name -> fn(state, cfg) -> (E, k)      appended to the noise-free obs in the
                                                        ``critic`` group (state no robot
                                                        measures: object velocities, ...)
    rewards       name -> fn(state, cfg) -> (E,)        weighted by cfg.reward_weights[name]
    costs         name -> fn(state, cfg) -> (E,)        bool or float >= 0, summed into the cost
    success       fn(state, cfg) -> (E,) bool
    terminated    fn(state, cfg) -> (E,) bool           (object dropped, ...)
    reset         fn(state, env_ids, cfg, gen)          writes the reset state of env_ids
    expert        fn(state, cfg) -> (E, A) in [-1, 1]   scripted policy for demos and tests
    modal_expert  ModalExpert                           the expert with several ways to do the
                                                        task (one drawn per episode), for
                                                        multimodal demonstrations
    build_scene   fn(robot, cfg, action_space) -> MjSpec

Costs are kept apart from rewards: the safety critic learns them.

**Success** is one definition everywhere: an episode succeeds when ``success`` holds at its
last step (reach and lift: the hand or the object held at the goal when the time is up; push:
the puck at the goal at the end; with ``terminate_on_success``, the step that ends it). The
training and ``robot-rl eval`` evaluations, the deploy harness on the simulated arm and the
datasets' episode flags (``robot-rl record --success-only`` keeps these episodes) all judge
it so; touching the goal on the way is not success.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Literal

import mujoco
import torch

from robot_rl.sim.state import SimState
from robot_rl.sim.tasks.config import TaskConfig
from robot_rl.sim.tasks.safety_costs import Vec3

Term = Callable[[SimState, Any], torch.Tensor]
ResetFn = Callable[[SimState, torch.Tensor, Any, torch.Generator], None]
Mirror = tuple[float, ...] | Literal["joints", "action", "kept"]
"""How an observation term looks in the mirror image about the robot base's x-z plane
(y -> -y): the sign of each of its elements, or "joints" (the robot's ``RobotSpec.mirror``
signs, one per joint), "action" (the action space's signs: ``robot_rl.sim.mirror``) or
"kept" (every element unchanged, whatever the width: a parallel gripper's fingers, a
symmetric pair)."""
Y_MIRROR: tuple[float, float, float] = (1.0, -1.0, 1.0)
"""A world-frame position or velocity in the mirror image: y changes sign."""
AXIAL_MIRROR: tuple[float, float, float] = (-1.0, 1.0, -1.0)
"""An axial vector (angular velocity, axis-angle rotation) in the mirror image: S w -> -S w
for S = diag(1, -1, 1), so x and z change sign."""
QUAT_MIRROR: tuple[float, float, float, float] = (1.0, *AXIAL_MIRROR)
"""A world-frame orientation as a quaternion (w, x, y, z) in the mirror image: the rotation
S R S turns about the mirrored axial vector by the same angle."""


@dataclasses.dataclass(frozen=True)
class ModalExpert:
    """A scripted expert with ``modes`` distinct ways of doing the task.

    ``act(state, cfg, mode (E,) long, memory (E, memory)) -> (action (E, A), memory)``: the
    mode is drawn per episode and fixed for it; ``memory`` is the expert's own per-env state
    (zeros at an episode's start; e.g. the phase, advanced as waypoints are reached).
    """

    modes: int
    act: Callable[[SimState, Any, torch.Tensor, torch.Tensor],
                  tuple[torch.Tensor, torch.Tensor]]
    memory: int = 1


@dataclasses.dataclass(frozen=True, kw_only=True)
class TaskDef:
    """A task's functions; ``make_config`` returns a fresh config each call."""

    name: str
    description: str
    make_config: Callable[[], TaskConfig]
    build_scene: Callable[..., mujoco.MjSpec]
    buffers: dict[str, int]
    """Per-env task tensors the env allocates in ``state.buffers`` (name -> width)."""
    reset: ResetFn
    observations: dict[str, Term]
    rewards: dict[str, Term]
    costs: dict[str, Term]
    success: Term
    """The task's test at one step; an episode succeeds when it holds at its last step (see
    module docstring)."""
    terminated: Term | None
    expert: Term | None
    """Scripted policy, or None if the task has none."""
    privileged: dict[str, Term] = dataclasses.field(default_factory=dict)
    """Terms of the ``critic`` observation group beyond the policy's (see module docstring)."""
    modal_expert: ModalExpert | None = None
    """The expert's multimodal variant (``robot-rl record --expert-style multimodal``)."""
    ee_box: tuple[Vec3, Vec3] | None = None
    """(lo, hi) world-frame box of the end-effector site for the end-effector action spaces'
    target box (``EEDeltaConfig.box_lo/hi``; ``robot-rl record --target-box``): where the
    task's work is, with the hand at rest above the table; None: the task has none."""
    needs_gripper: bool = False
    """Whether the task grasps (lift): an arm without a gripper is refused."""
    mirror: dict[str, Mirror] | None = None
    """The task's mirror symmetry about the robot base's x-z plane, if its scene, reset
    distribution, rewards and success are symmetric under y -> -y: each observation term's
    signs there (``Mirror``). Demonstrations of such a task on a mirror-symmetric arm can be
    doubled with their mirror images (``robot-rl bc --mirror``). None: not symmetric."""
