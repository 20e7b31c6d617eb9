"""lift: grasp a cube from the table and lift it."""

from __future__ import annotations

import dataclasses
import math

import mujoco
import torch

from robot_rl.controllers import JointDeltaConfig
from robot_rl.robots import RobotSpec
from robot_rl.sim.scene import SceneBuilder
from robot_rl.sim.state import SimState
from robot_rl.sim.tasks import terms
from robot_rl.sim.tasks.base import TaskConfig, TaskDef
from robot_rl.sim.tasks.motion import move_ee, quat_yaw

Vec2 = tuple[float, float]


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


def make_config() -> LiftConfig:
    return LiftConfig(
        name="lift",
        episode_length=150,
        action=JointDeltaConfig(gripper=True),
        reward_weights={"reach": 1.0, "grasp": 0.5, "lift": 2.0, "success": 2.0,
                        "action_rate": 0.01},
    )


def build_scene(robot: RobotSpec, cfg: LiftConfig) -> mujoco.MjSpec:
    scene = SceneBuilder(robot, cfg.physics_dt)
    h = cfg.cube_half_size
    scene.add_object("cube", geom_type=mujoco.mjtGeom.mjGEOM_BOX, size=(h, h, h),
                     mass=cfg.cube_mass, rgba=(0.85, 0.2, 0.2, 1), friction=1.0)
    if robot.gripper is not None:
        for i, pad in enumerate(robot.gripper.pads):
            scene.add_contact_found(f"pad{i}_cube", body1=pad, body2="cube")
    return scene.spec


def reset(state: SimState, env_ids: torch.Tensor, cfg: LiftConfig, gen: torch.Generator) -> None:
    n, dt, dev = len(env_ids), state.dtype, state.device
    xy = terms.uniform(state, cfg.cube_lo, cfg.cube_hi, n, gen)
    yaw = cfg.max_yaw * (2.0 * torch.rand(n, generator=gen, device=dev, dtype=dt) - 1.0)
    z = torch.full((n, 1), cfg.cube_half_size, dtype=dt, device=dev)
    quat = torch.stack([torch.cos(yaw / 2), torch.zeros_like(yaw), torch.zeros_like(yaw),
                        torch.sin(yaw / 2)], dim=1)
    q = state.qpos_slice("cube_joint")
    state.backend.qpos[env_ids, q] = torch.cat([xy, z, quat], dim=1)


def _ee_to_cube(state: SimState) -> torch.Tensor:
    return state.sensors["cube_pos"] - state.sensors["ee_pos"]


def _grasped(state: SimState) -> torch.Tensor:
    """Both finger pads touch the cube."""
    return (state.sensors["pad0_cube"][:, 0] > 0) & (state.sensors["pad1_cube"][:, 0] > 0)


def _height(state: SimState, cfg: LiftConfig) -> torch.Tensor:
    return state.sensors["cube_pos"][:, 2] - cfg.cube_half_size


def obs_gripper(state: SimState, cfg: LiftConfig) -> torch.Tensor:
    return state.gripper_pos


def obs_cube_pos(state: SimState, cfg: LiftConfig) -> torch.Tensor:
    return state.sensors["cube_pos"]


def obs_cube_quat(state: SimState, cfg: LiftConfig) -> torch.Tensor:
    return state.sensors["cube_quat"]


def priv_cube_vel(state: SimState, cfg: LiftConfig) -> torch.Tensor:
    """(E, 6) the cube's linear and angular velocity: privileged (no camera measures it)."""
    return state.qvel[:, state.qvel_slice("cube_joint")]


def obs_ee_to_cube(state: SimState, cfg: LiftConfig) -> torch.Tensor:
    return _ee_to_cube(state)


def reward_reach(state: SimState, cfg: LiftConfig) -> torch.Tensor:
    return terms.closeness(torch.linalg.vector_norm(_ee_to_cube(state), dim=1))


def reward_grasp(state: SimState, cfg: LiftConfig) -> torch.Tensor:
    """1 while both finger pads touch the cube."""
    return _grasped(state).to(state.dtype)


def reward_lift(state: SimState, cfg: LiftConfig) -> torch.Tensor:
    """Fraction of the lift height reached while grasped."""
    frac = (_height(state, cfg) / cfg.lift_height).clamp(0.0, 1.0)
    return frac * _grasped(state)


def success(state: SimState, cfg: LiftConfig) -> torch.Tensor:
    return _height(state, cfg) > cfg.lift_height


def expert(state: SimState, cfg: LiftConfig) -> torch.Tensor:
    """Open above the cube aligned with its faces, descend, close, lift."""
    assert isinstance(cfg.action, JointDeltaConfig)
    ee, cube = state.sensors["ee_pos"], state.sensors["cube_pos"]
    h = cfg.cube_half_size
    # The cube looks the same every quarter turn: turn the hand by its yaw folded into
    # [-pi/4, pi/4].
    yaw = torch.remainder(quat_yaw(state.sensors["cube_quat"]) + math.pi / 4, math.pi / 2)
    yaw = yaw - math.pi / 4
    grasp_pt = cube + torch.tensor([0.0, 0.0, 0.003], dtype=cube.dtype, device=cube.device)
    above = cube + torch.tensor([0.0, 0.0, 0.08], dtype=cube.dtype, device=cube.device)
    lift_pt = torch.cat([cube[:, :2], torch.full_like(cube[:, :1], h + cfg.lift_height + 0.04)],
                        dim=1)
    width = state.gripper_pos.sum(dim=1)  # finger opening
    closed_on_cube = _grasped(state) & (width < 2 * h + 0.004)
    at_grasp = torch.linalg.vector_norm(ee - grasp_pt, dim=1) < 0.012
    xy_ok = torch.linalg.vector_norm((ee - cube)[:, :2], dim=1) < 0.008
    target = torch.where(closed_on_cube[:, None], lift_pt,
                         torch.where((at_grasp | xy_ok)[:, None], grasp_pt, above))
    close = closed_on_cube | at_grasp
    arm = move_ee(state, target - ee, cfg.action.scale, yaw=yaw)
    grip = torch.where(close, 1.0, -1.0).to(arm.dtype)[:, None]
    return torch.cat([arm, grip], dim=1).float()


TASK = TaskDef(
    name="lift",
    description="grasp a cube and lift it",
    make_config=make_config,
    build_scene=build_scene,
    buffers={},
    reset=reset,
    observations={
        "joint_pos": terms.obs_joint_pos,
        "joint_vel": terms.obs_joint_vel,
        "gripper": obs_gripper,
        "ee_pos": terms.obs_ee_pos,
        "cube_pos": obs_cube_pos,
        "cube_quat": obs_cube_quat,
        "ee_to_cube": obs_ee_to_cube,
        "last_action": terms.obs_last_action,
    },
    privileged={"cube_vel": priv_cube_vel},
    rewards={
        "reach": reward_reach,
        "grasp": reward_grasp,
        "lift": reward_lift,
        "success": terms.indicator(success),
        "action_rate": terms.reward_action_rate,
    },
    costs=terms.SAFETY_COSTS,
    success=success,
    terminated=terms.fell_off_table("cube_pos"),
    expert=expert,
)
