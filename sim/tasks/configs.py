"""The built-in tasks' configs (reach, reach_hazard, push, lift, pusher) and their
defaults, importable without MuJoCo or torch; each task's module holds its functions."""

from __future__ import annotations

import dataclasses
import math

from robot_rl.controllers.configs import JointDeltaConfig, JointTorqueConfig, ShieldConfig
from robot_rl.sim.tasks.config import TaskConfig
from robot_rl.sim.tasks.safety_costs import SafetyCostConfig, Vec3

Vec2 = tuple[float, float]


@dataclasses.dataclass(kw_only=True)
class ReachConfig(TaskConfig):
    """Reach a target sampled uniformly in a box in front of the robot."""

    target_lo: Vec3 = (0.3, -0.3, 0.1)
    """Lower corner of the target box [m]."""
    target_hi: Vec3 = (0.7, 0.3, 0.5)
    """Upper corner of the target box [m]."""
    success_radius: float = 0.03
    """End-effector distance to the target that counts as success [m]."""


def make_reach_config() -> ReachConfig:
    return ReachConfig(
        name="reach",
        episode_length=100,
        # the arm gets there in about a second: gamma 0.97 at 50 Hz (its measured recipe)
        discount_horizon=2.0 / 3.0,
        action=JointDeltaConfig(gripper=False),
        # joint_vel, posture and shield: off (on the command line to be tried; issue 48)
        reward_weights={"reach": 1.0, "success": 1.0, "action_rate": 0.01, "joint_vel": 0.0,
                        "posture": 0.0, "shield": 0.0},
    )


@dataclasses.dataclass(kw_only=True)
class ReachHazardConfig(ReachConfig):
    """Reach with a spherical hazard zone between the start and the target."""

    hazard_radius: float = 0.07
    """Radius of the hazard sphere [m]."""
    hazard_fraction: float = 0.5
    """Where the hazard sits on the segment from the home end-effector position (0) to the
    target (1)."""
    min_target_distance: float = 0.3
    """Targets are resampled until this far from the home end-effector position, so start
    and target lie well outside the hazard [m]."""


def make_reach_hazard_config() -> ReachHazardConfig:
    base = make_reach_config()
    fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(base)}
    fields["name"] = "reach_hazard"
    return ReachHazardConfig(**fields)


@dataclasses.dataclass(kw_only=True)
class PushConfig(TaskConfig):
    """Push a puck from a random start to a random goal on the table."""

    puck_radius: float = 0.03
    """Puck radius [m]."""
    puck_half_height: float = 0.02
    """Half of the puck's height [m]."""
    puck_mass: float = 0.2
    """Puck mass [kg]."""
    puck_lo: Vec2 = (0.4, -0.15)
    """Lower corner (x, y) of the puck's start box [m]."""
    puck_hi: Vec2 = (0.55, 0.15)
    """Upper corner (x, y) of the puck's start box [m]."""
    goal_lo: Vec2 = (0.45, -0.25)
    """Lower corner (x, y) of the goal box [m]."""
    goal_hi: Vec2 = (0.7, 0.25)
    """Upper corner (x, y) of the goal box [m]."""
    min_goal_distance: float = 0.1
    """Smallest start-to-goal distance [m]."""
    success_radius: float = 0.04
    """Puck-to-goal distance (in the table plane) that counts as success [m]."""


def make_push_config() -> PushConfig:
    return PushConfig(
        name="push",
        episode_length=200,
        action=JointDeltaConfig(gripper=False),
        # shield: off (on the command line; issue 48)
        reward_weights={"ee_to_puck": 0.5, "puck_to_goal": 1.0, "success": 2.0,
                        "action_rate": 0.01, "shield": 0.0},
    )


@dataclasses.dataclass(kw_only=True)
class LiftConfig(TaskConfig):
    """Grasp a cube placed at a random position and yaw, and lift it."""

    cube_half_size: float = 0.02
    """Half of the cube's edge [m]."""
    cube_mass: float = 0.1
    """Cube mass [kg]."""
    cube_lo: Vec2 = (0.4, -0.15)
    """Lower corner (x, y) of the cube's start box [m]."""
    cube_hi: Vec2 = (0.6, 0.15)
    """Upper corner (x, y) of the cube's start box [m]."""
    max_yaw: float = math.pi / 4
    """The cube's yaw is uniform in [-max_yaw, max_yaw] [rad]."""
    lift_height: float = 0.08
    """Height above its resting height the cube must reach for success [m]."""


def make_lift_config() -> LiftConfig:
    return LiftConfig(
        name="lift",
        episode_length=150,
        action=JointDeltaConfig(gripper=True),
        reward_weights={"reach": 1.0, "grasp": 0.5, "lift": 2.0, "success": 2.0,
                        "action_rate": 0.01, "shield": 0.0},
    )


@dataclasses.dataclass(kw_only=True)
class PusherConfig(TaskConfig):
    """gymnasium Pusher-v5: push the white cylinder to the red goal at the origin."""

    object_lo: Vec2 = (-0.3, -0.2)
    """Lower corner of the object's start offset (slide joints) [m]."""
    object_hi: Vec2 = (0.0, 0.2)
    """Upper corner of the object's start offset [m]."""
    min_goal_distance: float = 0.17
    """Smallest start-to-goal distance [m]."""
    qvel_noise: float = 0.005
    """Half-width of the uniform noise on the arm's initial joint velocities [rad/s]."""


def make_pusher_config() -> PusherConfig:
    return PusherConfig(
        name="pusher",
        robot="pusher",
        physics_dt=0.01,
        decimation=5,
        episode_length=100,
        init_joint_noise=0.0,
        sensor_stage="last_substep",  # gymnasium's body positions are one substep behind
        action=JointTorqueConfig(),
        shield=ShieldConfig(enabled=False),  # gymnasium's Pusher has none; parity first
        safety=SafetyCostConfig(workspace_lo=(-0.3, -1.3, -0.4), workspace_hi=(1.1, 0.6, 0.5)),
        reward_weights={"near": 0.5, "dist": 1.0, "ctrl": 0.1},
    )
