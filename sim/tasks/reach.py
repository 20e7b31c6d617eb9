"""reach: move the end effector to a random target point above the table."""

from __future__ import annotations

import mujoco
import torch

from robot_rl.robots import RobotSpec
from robot_rl.sim.scene import SceneBuilder
from robot_rl.sim.state import SimState
from robot_rl.sim.tasks import terms
from robot_rl.sim.tasks.base import TaskDef
from robot_rl.sim.tasks.configs import ReachConfig, make_reach_config
from robot_rl.sim.tasks.expert_motion import move_ee


def build_scene(robot: RobotSpec, cfg: ReachConfig) -> mujoco.MjSpec:
    scene = SceneBuilder(robot, cfg.physics_dt)
    scene.add_marker("target", size=0.02, rgba=(0.2, 0.9, 0.3, 0.6))
    return scene.spec


def reset(state: SimState, env_ids: torch.Tensor, cfg: ReachConfig, gen: torch.Generator) -> None:
    target = terms.uniform(state, cfg.target_lo, cfg.target_hi, len(env_ids), gen)
    state.buffers["target"][env_ids] = target
    state.backend.mocap_pos[env_ids, state.mocap_index("target")] = target


def _to_target(state: SimState) -> torch.Tensor:
    return state.buffers["target"] - state.sensors["ee_pos"]


def obs_target(state: SimState, cfg: ReachConfig) -> torch.Tensor:
    return state.buffers["target"]


def obs_ee_to_target(state: SimState, cfg: ReachConfig) -> torch.Tensor:
    return _to_target(state)


def reward_reach(state: SimState, cfg: ReachConfig) -> torch.Tensor:
    return terms.closeness(torch.linalg.vector_norm(_to_target(state), dim=1))


def success(state: SimState, cfg: ReachConfig) -> torch.Tensor:
    return torch.linalg.vector_norm(_to_target(state), dim=1) < cfg.success_radius


def expert(state: SimState, cfg: ReachConfig) -> torch.Tensor:
    """Straight to the target (joint deltas through the Jacobian, or end-effector offsets),
    keeping the home orientation."""
    return move_ee(state, _to_target(state), cfg.action)


TASK = TaskDef(
    name="reach",
    description="move the end effector to a random target point",
    make_config=make_reach_config,
    build_scene=build_scene,
    buffers={"target": 3},
    reset=reset,
    observations={
        "joint_pos": terms.obs_joint_pos,
        "joint_vel": terms.obs_joint_vel,
        "ee_pos": terms.obs_ee_pos,
        "target": obs_target,
        "ee_to_target": obs_ee_to_target,
        "last_action": terms.obs_last_action,
    },
    rewards={
        "reach": reward_reach,
        "success": terms.indicator(success),
        "action_rate": terms.reward_action_rate,
        "joint_vel": terms.reward_joint_vel,
        "posture": terms.reward_posture,
        "shield": terms.reward_shield,
    },
    costs=terms.SAFETY_COSTS,
    success=success,
    terminated=None,
    expert=expert,
)
