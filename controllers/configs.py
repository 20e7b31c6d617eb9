"""The configs of the action spaces, controllers, motion profile and shield: plain
dataclasses, importable without numpy's compiled kernels, MuJoCo or torch (``robot-rl ...
--help`` reads them). The modules that act on them (``action_spaces``, ``joint``,
``diff_ik``, ``osc``, ``motion``, ``shield``) import them from here."""

from __future__ import annotations

import dataclasses
from typing import Literal, TypeAlias

from robot_rl.errors import ConfigError

Vec3 = tuple[float, float, float]


@dataclasses.dataclass(kw_only=True)
class JointDeltaConfig:
    """Joint position targets offset from the measured position."""

    type: Literal["joint_delta"] = "joint_delta"
    scale: float = 0.1
    """Target offset from the measured joint position at |a| = 1 [rad]."""
    gripper: bool = True
    """Append a gripper action (-1 open, +1 closed) if the robot has a gripper."""


@dataclasses.dataclass(kw_only=True)
class JointVelocityConfig:
    """Joint velocity commands, integrated into a position reference kept near the arm."""

    type: Literal["joint_velocity"] = "joint_velocity"
    scale: float = 1.0
    """Commanded joint velocity at |a| = 1 [rad/s]."""
    max_lead: float = 0.1
    """Reference clamping: the integrated reference stays within this of the measured joint
    position, so a blocked joint does not wind up a large torque [rad]."""
    gripper: bool = True
    """Append a gripper action (-1 open, +1 closed) if the robot has a gripper."""


@dataclasses.dataclass(kw_only=True)
class EEDeltaConfig:
    """End-effector pose targets offset from the measured pose (position + axis-angle)."""

    type: Literal["ee_delta"] = "ee_delta"
    pos_scale: float = 0.05
    """Target offset from the measured end-effector position at |a| = 1 [m]."""
    rot_scale: float = 0.3
    """Target rotation from the measured orientation at |a| = 1 [rad]."""
    rotation: bool = True
    """Include the three rotation actions; without them the target orientation is the home
    orientation."""
    box_lo: Vec3 | None = None
    """Lower corner of the target box, world frame [m]: every position target is clipped
    into [box_lo, box_hi] before the shield sees it, as SERL's robot envs clip each pose
    target into their safety box (``clip_safety_box``; position only here). Put it where the
    shield passes a hand at rest (above the table by the hand's depth below the site), and
    the policy's whole action box is within what the shield passes. None: no box."""
    box_hi: Vec3 | None = None
    """Upper corner of the target box, world frame [m] (with ``box_lo``; None: no box)."""
    gripper: bool = True
    """Append a gripper action (-1 open, +1 closed) if the robot has a gripper."""


@dataclasses.dataclass(kw_only=True)
class EEPoseConfig:
    """Absolute end-effector pose targets: a position in a box, a rotation from home."""

    type: Literal["ee_pose"] = "ee_pose"
    lo: Vec3 = (0.25, -0.45, 0.02)
    """Target position at a = -1 (lower box corner), world frame [m]."""
    hi: Vec3 = (0.8, 0.45, 0.6)
    """Target position at a = +1 (upper box corner), world frame [m]."""
    max_angle: float = 1.0
    """Rotation from the home orientation at |a| = 1 per axis-angle component [rad]."""
    rotation: bool = True
    """Include the three rotation actions; without them the target is the home orientation."""
    gripper: bool = True
    """Append a gripper action (-1 open, +1 closed) if the robot has a gripper."""


@dataclasses.dataclass(kw_only=True)
class JointTorqueConfig:
    """Direct joint torques, a = +-1 at the ends of each actuator's control range."""

    type: Literal["joint_torque"] = "joint_torque"
    gripper: bool = False
    """Append a gripper action (-1 open, +1 closed) if the robot has a gripper."""


ActionConfig = (JointDeltaConfig | JointVelocityConfig | EEDeltaConfig | EEPoseConfig
                | JointTorqueConfig)


@dataclasses.dataclass(kw_only=True)
class JointPDConfig:
    """Joint PD with the robot's servo gains, evaluated at every physics step."""

    type: Literal["joint_pd"] = "joint_pd"


@dataclasses.dataclass(kw_only=True)
class JointImpedanceConfig:
    """Compliant joint impedance: stiffness per joint and a damping ratio."""

    type: Literal["joint_impedance"] = "joint_impedance"
    stiffness: tuple[float, ...] | float = 200.0
    """Joint stiffness, one value or one per joint [Nm/rad]."""
    damping_ratio: float = 1.0
    """Damping relative to critical damping at the home pose's joint inertias."""


@dataclasses.dataclass(kw_only=True)
class DiffIKConfig:
    """Pose targets through damped least-squares IK and the joint position servo."""

    type: Literal["diff_ik"] = "diff_ik"
    damping: float = 0.05
    """Damping of the least-squares step (larger: smoother near singularities) [m]."""
    max_pos_error: float = 0.05
    """Position error one step works on at most [m]."""
    max_rot_error: float = 0.3
    """Orientation error one step works on at most (sin of the angle)."""
    posture_gain: float = 0.1
    """Null-space pull of the joints towards the home pose per step (0: none)."""


@dataclasses.dataclass(kw_only=True)
class OSCConfig:
    """Operational-space control (inertia-decoupled task-space PD) of the end-effector pose."""

    type: Literal["osc"] = "osc"
    pos_stiffness: float = 200.0
    """Position gain [1/s^2] (OSC) or [N/m] (cartesian impedance)."""
    rot_stiffness: float = 200.0
    """Orientation gain [1/s^2] (OSC) or [Nm/rad] (cartesian impedance)."""
    damping_ratio: float = 1.0
    """Task-space damping relative to critical."""
    max_pos_error: float = 0.05
    """Reference clamping: position error used by the law is at most this [m]."""
    max_rot_error: float = 0.5
    """Reference clamping: orientation error used by the law is at most this (sin of angle)."""
    null_stiffness: float = 25.0
    """Null-space posture gain towards the home pose [1/s^2]."""
    singularity_damping: float = 1e-3
    """lambda added to J M^-1 J^T before inverting it."""
    substeps: int = 1
    """Physics steps between two evaluations of the law (1: every physics step)."""
    decouple_inertia: bool = True
    """True: OSC (tau = J^T Lambda a). False: Cartesian impedance (tau = J^T a)."""


def cartesian_impedance(pos_stiffness: float = 1000.0, rot_stiffness: float = 50.0,
                        **kwargs: object) -> OSCConfig:
    """Config of a Cartesian impedance controller (OSC without inertia decoupling)."""
    return OSCConfig(pos_stiffness=pos_stiffness, rot_stiffness=rot_stiffness,
                     decouple_inertia=False, **kwargs)  # type: ignore[arg-type]


ControllerConfig: TypeAlias = JointPDConfig | JointImpedanceConfig | DiffIKConfig | OSCConfig
"""Controller configs; ``None`` in a task config picks the default for its action space."""


@dataclasses.dataclass(kw_only=True)
class MotionConfig:
    """The motion profile of joint targets (joint-target action spaces, and pose targets the
    differential IK turns into joint targets; torque controllers have none)."""

    enabled: bool = False
    """Shape joint targets before the shield (``controllers.motion``). False: the targets go to
    the shield as the action space makes them (the runs before 2026-11-27)."""
    accel_fraction: float = 0.9
    """The profile's joint acceleration, as a fraction of the shield's ``max_joint_accel``."""
    speed_fraction: float = 0.9
    """The profile's joint speed limit, as a fraction of the shield's speed limit."""
    ramp: bool = False
    """Ramp each control step's joint command over the step (joint targets; with the
    profile or without): the command moves at a constant speed from the PD law's steady
    lead to the target, which the joint reaches as the next step begins, instead of jumping
    to the target and holding it. A real arm's driver interpolates a slow command stream
    the same way. The shield and the profile model the command as the speed
    (q_target - q) / (lag + control_dt) (``SafetyShield.ramp``). Where the control period is
    longer than the PD law's lag (0.05 s; at 20 Hz and below), a held target makes the joint
    arrive and stop within each step. With a control step longer than the lag (10 Hz) the
    shield's bounds were measured to fail under attack (docs/control.md), so the deploy
    runtime refuses such a policy (simulation only); at 20 Hz and faster they hold. False:
    held (every run before this option)."""

    def __post_init__(self) -> None:
        for name in ("accel_fraction", "speed_fraction"):
            value = getattr(self, name)
            if not 0.0 < value <= 1.0:
                raise ConfigError(f"motion.{name} must be in (0, 1], got {value} (a fraction "
                                  f"of the shield's limit)")


@dataclasses.dataclass(kw_only=True)
class ShieldConfig:
    """Margins and rates of the safety shield (limits themselves come from the RobotSpec)."""

    enabled: bool = True
    """False: actions still pass the NaN guard and bounds, nothing else is limited."""
    max_action_delta: float | None = 1.0
    """Largest change of an action component per control tick (None: no rate limit)."""
    joint_margin: float = 0.05
    """Soft joint limits sit this far inside the hard limits [rad] (when not given below)."""
    q_soft_min: tuple[float, ...] | None = None
    """Soft lower joint limits, one per joint [rad]; default q_min + joint_margin."""
    q_soft_max: tuple[float, ...] | None = None
    """Soft upper joint limits, one per joint [rad]; default q_max - joint_margin."""
    velocity_fraction: float = 0.85
    """Joint speed limit as a fraction of the robot's velocity limits."""
    torque_fraction: float = 0.95
    """Joint torque limit as a fraction of the robot's torque limits."""
    workspace_margin: float = 0.03
    """The end effector is kept this far inside the workspace box [m]."""
    floor_height: float = 0.005
    """Lowest end-effector height above the table top (z = 0) [m]."""
    brake_accel: float = 8.0
    """Joint deceleration [rad/s^2] the braking margins assume."""
    max_joint_accel: float = 8.0
    """Largest joint acceleration the shield lets a command ask for [rad/s^2] (braking
    towards a limit may ask for more): joint targets follow a trajectory whose velocity
    changes by at most this per second; torques are corrected so the joint accelerations
    they cause stay within it. It bounds the inertial coupling between the joints (a
    shoulder swung at full torque flings a wrist past what its own motor can hold)."""
    brake_accel_ee: float = 4.0
    """End-effector deceleration [m/s^2] the braking margins assume."""
    brake_time: float = 0.01
    """Torque layers: time constant with which an excess speed is removed [s]."""
