"""reach_hazard: reach, with a hazard zone on the straight path to the target.

A sphere of radius ``hazard_radius`` sits on the segment from the end effector's home
position to the target (at ``hazard_fraction`` of the way). Entering it costs 1 per step
(cost term ``hazard``) and earns nothing: the straight line is the fastest way to the reward,
so an unconstrained policy cuts through, and a safety critic has to learn to go around.
The shield does not know the hazard (it is a task constraint, not a robot limit).
"""

from __future__ import annotations

import mujoco
import torch

from robot_rl.robots import RobotSpec
from robot_rl.sim.scene import SceneBuilder
from robot_rl.sim.state import SimState
from robot_rl.sim.tasks import reach, terms
from robot_rl.sim.tasks.base import TaskDef
from robot_rl.sim.tasks.configs import ReachHazardConfig, make_reach_hazard_config


def build_scene(robot: RobotSpec, cfg: ReachHazardConfig) -> mujoco.MjSpec:
    scene = SceneBuilder(robot, cfg.physics_dt)
    scene.add_marker("target", size=0.02, rgba=(0.2, 0.9, 0.3, 0.6))
    scene.add_marker("hazard", size=cfg.hazard_radius, rgba=(0.95, 0.2, 0.1, 0.35))
    return scene.spec


def reset(state: SimState, env_ids: torch.Tensor, cfg: ReachHazardConfig,
          gen: torch.Generator) -> None:
    n = len(env_ids)
    home = state.limits.ee_home_pos
    target = terms.uniform_away(state, cfg.target_lo, cfg.target_hi, n, gen, home,
                                cfg.min_target_distance)
    hazard = home + cfg.hazard_fraction * (target - home)
    state.buffers["target"][env_ids] = target
    state.buffers["hazard"][env_ids] = hazard
    state.backend.mocap_pos[env_ids, state.mocap_index("target")] = target
    state.backend.mocap_pos[env_ids, state.mocap_index("hazard")] = hazard


def obs_ee_to_hazard(state: SimState, cfg: ReachHazardConfig) -> torch.Tensor:
    """(E, 3) hazard centre relative to the end effector."""
    return state.buffers["hazard"] - state.sensors["ee_pos"]


def cost_hazard(state: SimState, cfg: ReachHazardConfig) -> torch.Tensor:
    """End effector inside the hazard sphere."""
    d = torch.linalg.vector_norm(obs_ee_to_hazard(state, cfg), dim=1)
    return d < cfg.hazard_radius


TASK = TaskDef(
    name="reach_hazard",
    description="reach a target without entering the hazard zone on the straight path",
    make_config=make_reach_hazard_config,
    build_scene=build_scene,
    buffers={"target": 3, "hazard": 3},
    reset=reset,
    observations={**reach.TASK.observations, "ee_to_hazard": obs_ee_to_hazard},
    rewards=reach.TASK.rewards,
    costs={**terms.SAFETY_COSTS, "hazard": cost_hazard},
    success=reach.TASK.success,
    terminated=None,
    expert=reach.TASK.expert,
)
