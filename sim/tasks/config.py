"""What every task's config holds (``TaskConfig``) and the discount and rate arithmetic on
it. Plain dataclasses, importable without MuJoCo or torch (``robot-rl ... --help`` reads
them); ``sim.tasks.base`` holds the task's functions (``TaskDef``)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Any, Literal

from tyro.conf import Suppress, subcommand

from robot_rl.controllers.configs import (
    DiffIKConfig,
    EEDeltaConfig,
    EEPoseConfig,
    JointDeltaConfig,
    JointImpedanceConfig,
    JointPDConfig,
    JointTorqueConfig,
    JointVelocityConfig,
    MotionConfig,
    OSCConfig,
    ShieldConfig,
)
from robot_rl.errors import ConfigError, unknown_name
from robot_rl.sim.configs import CameraConfig, DRConfig
from robot_rl.sim.tasks.safety_costs import SafetyCostConfig

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
    observe_prev_action: bool = False
    """The policy also observes the action before its last (``prev_action``, beside
    ``last_action``): the actions in flight under two control steps of actuation delay
    (``dr.action_delay``)."""
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

    @classmethod
    def upgrade_saved_dict(cls, data: dict[str, Any]) -> dict[str, Any]:
        """A saved task config of an older version: its randomization's delay in control
        steps (``action_delay_max``) as seconds at its control rate."""
        if isinstance(data.get("dr"), dict):
            dt = float(data.get("physics_dt", 0.002)) * int(data.get("decimation", 10))
            data = {**data, "dr": DRConfig.upgrade_saved(data["dr"], dt)}
        return data

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
