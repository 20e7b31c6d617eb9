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
from pathlib import Path
from typing import Annotated, Any, Literal

import mujoco
import torch
from tyro.conf import Suppress, subcommand

from robot_rl.controllers import (
    DiffIKConfig,
    EEDeltaConfig,
    EEPoseConfig,
    JointDeltaConfig,
    JointImpedanceConfig,
    JointPDConfig,
    JointTorqueConfig,
    JointVelocityConfig,
    OSCConfig,
    ShieldConfig,
)
from robot_rl.controllers.motion import MotionConfig
from robot_rl.errors import ConfigError, unknown_name
from robot_rl.sim.cameras import CameraConfig
from robot_rl.sim.randomization import DRConfig
from robot_rl.sim.state import SimState
from robot_rl.sim.tasks.safety_costs import SafetyCostConfig, Vec3

# The action-space and controller configs as the CLI names them: ``--env.action ee-delta``
# (or tyro's own ``env.action:ee-delta``) selects one, ``--env.action.pos-scale`` sets its
# fields after it.
ActionChoice = (Annotated[JointDeltaConfig, subcommand("joint-delta")]
                | Annotated[JointVelocityConfig, subcommand("joint-velocity")]
                | Annotated[EEDeltaConfig, subcommand("ee-delta")]
                | Annotated[EEPoseConfig, subcommand("ee-pose")]
                | Annotated[JointTorqueConfig, subcommand("joint-torque")])
ControllerChoice = (Annotated[JointPDConfig, subcommand("joint-pd")]
                    | Annotated[JointImpedanceConfig, subcommand("joint-impedance")]
                    | Annotated[DiffIKConfig, subcommand("diff-ik")]
                    | Annotated[OSCConfig, subcommand("osc")]
                    | Annotated[None, subcommand("none")])


CONFIG_CLASSES: dict[str, type[TaskConfig]] = {}
"""Each registered task's config class, by task name (``register_task`` adds them)."""


@dataclasses.dataclass(kw_only=True)
class TaskConfig:
    """Settings shared by every task; each task subclasses it with its own fields."""

    name: Annotated[str, Suppress]
    """Registry name of the task (set by the task's factory; the CLI's ``--task``)."""
    robot: str = "arm7"
    """Registry name of the robot."""
    physics_dt: float = 0.002
    """Physics time step [s]."""
    decimation: int = 10
    """Physics steps per control step (control rate = 1 / (physics_dt * decimation))."""
    episode_length: int = 150
    """Control steps per episode before truncation."""
    discount_horizon: float = 10.0 / 3.0
    """Effective horizon of the reward discount [s]: a learner whose discount is not set
    discounts each control step by gamma = 1 - control_dt / discount_horizon, so a task
    run at 50 Hz and one at 10 Hz look as far ahead. The default, 3.3 s, is HIL-SERL's
    gamma 0.97 at 10 Hz (0.994 at 50 Hz)."""
    action: ActionChoice = dataclasses.field(default_factory=JointDeltaConfig)
    """Action space: joint_delta, joint_velocity, ee_delta, ee_pose or joint_torque."""
    controller: ControllerChoice = None
    """Controller tracking the action space's targets: joint_pd, joint_impedance, diff_ik
    or osc; None picks joint_pd for joint targets and diff_ik for pose targets."""
    shield: ShieldConfig = dataclasses.field(default_factory=ShieldConfig)
    """Safety shield margins (its workspace box is ``safety.workspace_lo/hi``)."""
    motion: MotionConfig = dataclasses.field(default_factory=MotionConfig)
    """Motion profile of joint targets before the shield (``controllers.motion``): the
    commands accelerate and brake within what the shield passes."""
    dr: DRConfig = dataclasses.field(default_factory=DRConfig)
    """Domain randomization ranges (see ``dr_preset``)."""
    safety: SafetyCostConfig = dataclasses.field(default_factory=SafetyCostConfig)
    """Thresholds of the safety cost terms."""
    identified: str | None = None
    """Identified-dynamics file (``robot-rl sysid fit``): the arm's nominal masses, damping,
    armature, friction and actuator gains become the identified ones, and domain
    randomization's scales multiply them (see ``identified_dr``)."""
    identified_dr: float | None = 2.0
    """With ``identified``: the DR ranges of the fitted parameters (link masses, joint
    damping, armature, actuator gains) become 1 +- this many of their largest relative
    standard deviation, no wider than ``dr``'s own (None: keep ``dr``'s ranges, centred on
    the identified values)."""
    reward_weights: dict[str, float] = dataclasses.field(default_factory=dict)
    """Weight of each reward term, by term name."""
    init_joint_noise: float = 0.05
    """Half-width of the uniform noise added to the home pose at reset [rad]."""
    terminate_on_success: bool = False
    """End the episode (terminated) as soon as the task succeeds."""
    guard_max_qvel: float = 100.0
    """Divergence guard: any |qvel| above this marks the env unstable and resets it [rad/s]."""
    # not on the command line until a learner reads the images (``robot-rl train`` would
    # render them for nothing)
    cameras: Annotated[CameraConfig | None, Suppress] = None
    """Camera observations (``sim.cameras``): none by default; with cameras, every step's
    ``info["images"]`` holds their images, the policy's pixels next to its proprioception."""
    sensor_stage: Literal["current", "last_substep"] = "current"
    """When sensors are evaluated after a control step: ``current`` recomputes them at the new
    state (one extra position/velocity pass); ``last_substep`` keeps MuJoCo's mj_step values,
    from the start of the last physics substep (what gymnasium and EnvPool report)."""

    def __post_init__(self) -> None:
        # a run (and its artifact) is loaded from other working directories than the one it
        # was started in: its identified-dynamics file is kept by its absolute path
        if self.identified is not None:
            self.identified = str(Path(self.identified).expanduser().resolve())

    @property
    def control_dt(self) -> float:
        return self.physics_dt * self.decimation

    def discount(self, control_dt: float | None = None) -> float:
        """gamma per control step of ``control_dt`` (default: this task's) for
        ``discount_horizon``."""
        return discount_for(self.discount_horizon, control_dt or self.control_dt)

    @classmethod
    def config_class(cls, data: dict[str, Any]) -> type[TaskConfig]:
        """The config class of a saved task config (``to_dict`` output): its task's own."""
        if "name" not in data:
            raise ConfigError("a saved task config lacks its task's name")
        name = str(data["name"])
        if name not in CONFIG_CLASSES:
            raise unknown_name("task", name, list(CONFIG_CLASSES))
        return CONFIG_CLASSES[name]

    def validate(self) -> None:
        if self.physics_dt <= 0 or self.decimation < 1 or self.episode_length < 1:
            raise ConfigError("physics_dt must be > 0, decimation and episode_length >= 1")
        if self.discount_horizon <= self.control_dt:
            raise ConfigError(f"discount_horizon must be longer than a control step "
                              f"({self.control_dt:g} s), got {self.discount_horizon:g} s")
        if self.cameras is not None:
            self.cameras.validate()
        if self.identified_dr is not None and self.identified_dr < 0:
            raise ConfigError(f"identified_dr must be >= 0 (or None), got {self.identified_dr}")


def discount_for(horizon: float, control_dt: float) -> float:
    """The discount per step of ``control_dt`` seconds whose effective horizon
    1 / (1 - gamma) steps lasts ``horizon`` seconds: gamma = 1 - control_dt / horizon."""
    if horizon <= control_dt or control_dt <= 0:
        raise ConfigError(f"a discount horizon of {horizon:g} s needs control steps shorter "
                          f"than it, got {control_dt:g} s")
    return 1.0 - control_dt / horizon


def decimation_for(rate_hz: float, physics_dt: float) -> int:
    """The physics steps per step of a loop at ``rate_hz`` (a control rate, a sensor's
    publishing rate): the physics rate over it, which must be a whole number."""
    if rate_hz <= 0:
        raise ConfigError(f"a rate must be > 0 Hz, got {rate_hz:g}")
    decimation = round(1.0 / (physics_dt * rate_hz))
    if decimation < 1 or abs(decimation * physics_dt * rate_hz - 1.0) > 1e-6:
        raise ConfigError(f"{rate_hz:g} Hz is not the physics rate ({1.0 / physics_dt:g} Hz) "
                          f"over a whole number")
    return decimation


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
