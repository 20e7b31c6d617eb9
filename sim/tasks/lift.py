"""lift: grasp a cube from the table and lift it."""

from __future__ import annotations

import math

import mujoco
import torch

from robot_rl.controllers.ik import orientation_error, quat_to_mat, rot_z
from robot_rl.robots import RobotSpec
from robot_rl.sim.scene import SceneBuilder
from robot_rl.sim.state import SimState
from robot_rl.sim.tasks import terms
from robot_rl.sim.tasks.base import AXIAL_MIRROR, QUAT_MIRROR, Y_MIRROR, ModalExpert, TaskDef
from robot_rl.sim.tasks.configs import LiftConfig, make_lift_config
from robot_rl.sim.tasks.expert_motion import eased_down, move_ee, quat_yaw


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
    """Open above the cube aligned with its faces, descend (slowly, the last few
    centimetres), close, lift."""
    return _grasp_and_lift(state, cfg, 0.0)


def turned_expert(state: SimState, cfg: LiftConfig, mode: torch.Tensor,
                  memory: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Grasp across either pair of the cube's faces: mode 0 as the scripted expert (the
    smallest turn of the hand), mode 1 a quarter turn further, back towards the hand's home
    yaw (so it turns at most a quarter turn either way). The modes' mean grasps the cube
    across its diagonal: averaging them fails.

    ``memory``: (phase, grasp yaw, yaw set). The grasp yaw is fixed at the episode's first
    step (a cube nudged across a fold would otherwise flip the grasp a half turn). Phases:
    0 above the cube, turning; 1 descending, open; 2 closing at the grasp point; 3 lifting
    (back to 0 if the cube slips out).
    """
    phase, yaw = memory[:, 0].long(), memory[:, 1]
    folded = _folded_yaw(state).to(memory.dtype)
    turn = torch.where(folded < 0, 1.0, -1.0) * (math.pi / 2) * mode.to(memory.dtype)
    yaw = torch.where(memory[:, 2] > 0, yaw, folded + turn)
    ee, cube = state.sensors["ee_pos"], state.sensors["cube_pos"]
    h = cfg.cube_half_size
    grasp_pt = cube + cube.new_tensor([0.0, 0.0, 0.003])
    above = cube + cube.new_tensor([0.0, 0.0, 0.08])
    lift_pt = torch.cat([cube[:, :2], torch.full_like(cube[:, :1], h + cfg.lift_height + 0.04)],
                        dim=1)
    closed_on_cube = _grasped(state) & (state.gripper_pos.sum(dim=1) < 2 * h + 0.004)
    rot_des = rot_z(yaw.to(ee.dtype)) @ state.limits.ee_home_rot.expand(len(yaw), 3, 3)
    turned = torch.linalg.vector_norm(orientation_error(
        quat_to_mat(state.sensors["ee_quat"]), rot_des), dim=1) < 0.1
    xy_ok = torch.linalg.vector_norm((ee - cube)[:, :2], dim=1) < 0.008
    at_grasp = torch.linalg.vector_norm(ee - grasp_pt, dim=1) < 0.012
    phase = torch.where((phase == 0) & xy_ok & turned, 1, phase)
    phase = torch.where((phase == 1) & at_grasp, 2, phase)
    phase = torch.where((phase == 2) & closed_on_cube, 3, phase)
    phase = torch.where((phase == 3) & ~_grasped(state), 0, phase)
    target = torch.where((phase == 0)[:, None], above,
                         torch.where((phase == 3)[:, None], lift_pt, grasp_pt))
    arm = move_ee(state, target - ee, cfg.action, yaw=yaw.to(ee.dtype))
    grip = torch.where(phase >= 2, 1.0, -1.0).to(arm.dtype)[:, None]
    memory = torch.stack([phase.to(memory.dtype), yaw, torch.ones_like(yaw)], dim=1)
    return torch.cat([arm, grip], dim=1).float(), memory


def _folded_yaw(state: SimState) -> torch.Tensor:
    """(E,) the cube's yaw folded into [-pi/4, pi/4] (it looks the same every quarter
    turn): the smallest turn of the hand that aligns it with two faces."""
    yaw = torch.remainder(quat_yaw(state.sensors["cube_quat"]) + math.pi / 4, math.pi / 2)
    return yaw - math.pi / 4


def _grasp_and_lift(state: SimState, cfg: LiftConfig, turn: torch.Tensor | float
                    ) -> torch.Tensor:
    """The expert's action with the hand's yaw turned by ``turn`` (E,) beyond the nearest
    face-aligned yaw."""
    ee, cube = state.sensors["ee_pos"], state.sensors["cube_pos"]
    h = cfg.cube_half_size
    yaw = _folded_yaw(state) + turn
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
    arm = move_ee(state, eased_down(target, ee, grasp_pt[:, 2]), cfg.action, yaw=yaw)
    grip = torch.where(close, 1.0, -1.0).to(arm.dtype)[:, None]
    return torch.cat([arm, grip], dim=1).float()


TASK = TaskDef(
    name="lift",
    needs_gripper=True,
    description="grasp a cube and lift it",
    make_config=make_lift_config,
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
        "shield": terms.reward_shield,
    },
    costs=terms.SAFETY_COSTS,
    success=success,
    terminated=terms.fell_off_table("cube_pos"),
    expert=expert,
    modal_expert=ModalExpert(modes=2, act=turned_expert, memory=3),
    # the cube's box and yaw range centred on y = 0 and on yaw 0, the table and the arm's
    # base too; the fingers, a pair coupled to the same opening, swap places
    mirror={"joint_pos": "joints", "joint_vel": "joints", "gripper": "kept",
            "ee_pos": Y_MIRROR, "cube_pos": Y_MIRROR, "cube_quat": QUAT_MIRROR,
            "ee_to_cube": Y_MIRROR, "last_action": "action",
            "cube_vel": (*Y_MIRROR, *AXIAL_MIRROR)},  # linear, then angular velocity
)
