"""push: slide a puck across the table to a goal, with the gripper closed."""

from __future__ import annotations

import mujoco
import torch

from robot_rl.robots import RobotSpec
from robot_rl.sim.scene import SceneBuilder
from robot_rl.sim.state import SimState
from robot_rl.sim.tasks import terms
from robot_rl.sim.tasks.base import AXIAL_MIRROR, Y_MIRROR, ModalExpert, TaskDef
from robot_rl.sim.tasks.configs import PushConfig, make_push_config
from robot_rl.sim.tasks.expert_motion import eased_down, move_ee


def build_scene(robot: RobotSpec, cfg: PushConfig) -> mujoco.MjSpec:
    scene = SceneBuilder(robot, cfg.physics_dt)
    scene.add_object("puck", geom_type=mujoco.mjtGeom.mjGEOM_CYLINDER,
                     size=(cfg.puck_radius, cfg.puck_half_height, 0), mass=cfg.puck_mass,
                     rgba=(0.15, 0.35, 0.85, 1), friction=0.4)
    scene.add_marker("goal", size=0.025, rgba=(0.2, 0.9, 0.3, 0.6))
    return scene.spec


def reset(state: SimState, env_ids: torch.Tensor, cfg: PushConfig, gen: torch.Generator) -> None:
    n = len(env_ids)
    puck = terms.uniform(state, cfg.puck_lo, cfg.puck_hi, n, gen)
    goal = terms.uniform_away(state, cfg.goal_lo, cfg.goal_hi, n, gen, puck,
                              cfg.min_goal_distance)
    z = torch.full((n, 1), cfg.puck_half_height, dtype=state.dtype, device=state.device)
    qpos = state.backend.qpos
    q = state.qpos_slice("puck_joint")
    qpos[env_ids, q.start:q.start + 3] = torch.cat([puck, z], dim=1)
    qpos[env_ids, q.start + 3:q.stop] = qpos.new_tensor((1.0, 0.0, 0.0, 0.0))
    goal3 = torch.cat([goal, z], dim=1)
    state.buffers["goal"][env_ids] = goal3
    state.backend.mocap_pos[env_ids, state.mocap_index("goal")] = goal3


def _puck_to_goal(state: SimState) -> torch.Tensor:
    return (state.buffers["goal"] - state.sensors["puck_pos"])[:, :2]


def _ee_to_puck(state: SimState) -> torch.Tensor:
    return state.sensors["puck_pos"] - state.sensors["ee_pos"]


def obs_puck_pos(state: SimState, cfg: PushConfig) -> torch.Tensor:
    return state.sensors["puck_pos"]


def priv_puck_vel(state: SimState, cfg: PushConfig) -> torch.Tensor:
    """(E, 6) the puck's linear and angular velocity: privileged (no camera measures it)."""
    return state.qvel[:, state.qvel_slice("puck_joint")]


def obs_goal(state: SimState, cfg: PushConfig) -> torch.Tensor:
    return state.buffers["goal"][:, :2]


def obs_ee_to_puck(state: SimState, cfg: PushConfig) -> torch.Tensor:
    return _ee_to_puck(state)


def obs_puck_to_goal(state: SimState, cfg: PushConfig) -> torch.Tensor:
    return _puck_to_goal(state)


def reward_ee_to_puck(state: SimState, cfg: PushConfig) -> torch.Tensor:
    return terms.closeness(torch.linalg.vector_norm(_ee_to_puck(state), dim=1))


def reward_puck_to_goal(state: SimState, cfg: PushConfig) -> torch.Tensor:
    return terms.closeness(torch.linalg.vector_norm(_puck_to_goal(state), dim=1))


def success(state: SimState, cfg: PushConfig) -> torch.Tensor:
    return torch.linalg.vector_norm(_puck_to_goal(state), dim=1) < cfg.success_radius


_STOP = 0.01
"""The expert stops pushing with the puck this close to the goal [m]."""
_APPROACH = 0.5
"""Near the goal, the push's lead (how far ahead of the hand its target is) is this fraction
of the puck's remaining distance: the hand, and the puck, slow down as they arrive (a puck
pushed at full speed slides about 3 cm on after the hand stops)."""
_MARGIN = 0.005
"""... and keeps still while the puck is this far inside the success radius [m]."""


def expert(state: SimState, cfg: PushConfig) -> torch.Tensor:
    """Get behind the puck on the puck-goal line, lower to puck height (slowly, the last few
    centimetres), push it to the goal."""
    return _push(state, cfg, ease=True)


def _push(state: SimState, cfg: PushConfig, ease: bool) -> torch.Tensor:
    """The scripted expert; ``ease``: come down slowly near the table (``eased_down``)."""
    ee, puck = state.sensors["ee_pos"], state.sensors["puck_pos"]
    goal_xy = state.buffers["goal"][:, :2]
    line = goal_xy - puck[:, :2]
    to_go = torch.linalg.vector_norm(line, dim=1, keepdim=True)  # (E, 1)
    u = line / to_go.clamp(min=1e-6)  # (E, 2)
    rel = ee[:, :2] - puck[:, :2]
    along = (rel * u).sum(dim=1)
    off_line = rel - along[:, None] * u  # (E, 2) the end effector's offset from the push line
    lateral = torch.linalg.vector_norm(off_line, dim=1)
    aligned = (along < -cfg.puck_radius + 0.005) & (lateral < 0.025)
    z_push = cfg.puck_half_height + 0.008  # finger pads ~2 cm above the table
    z_hover = z_push + 0.06
    low = ee[:, 2] < z_push + 0.015
    standoff = puck[:, :2] - (cfg.puck_radius + 0.03) * u
    # While pushing, advance along the line and steer back onto it; slow down near the goal
    # so the puck stops there rather than sliding on (success is judged at the episode's end)
    lead = (_APPROACH * (to_go - _STOP)).clamp(0.0, 0.04)
    pushing = ee[:, :2] + lead * u - 0.8 * off_line

    def point(xy: torch.Tensor, z: float) -> torch.Tensor:
        return torch.cat([xy, torch.full_like(xy[:, :1], z)], dim=1)

    near_standoff = torch.linalg.vector_norm(ee[:, :2] - standoff, dim=1) < 0.02
    # the puck well inside the success radius: keep still (going round it again would knock it)
    there = to_go[:, 0] < cfg.success_radius - _MARGIN
    target = torch.where(
        (aligned & low)[:, None], point(pushing, z_push),                    # push
        torch.where((aligned | near_standoff)[:, None], point(standoff, z_push),  # descend
                    torch.where(low[:, None], point(ee[:, :2], z_hover),      # lift clear
                                point(standoff, z_hover))))                   # go above standoff
    target = torch.where(there[:, None], ee, target)                         # hold
    err = eased_down(target, ee, z_push) if ease else target - ee
    return move_ee(state, err, cfg.action)


# The multimodal expert's waypoints, in the push-line frame (along u, beside it along n).
_SIDE = 0.06
"""Clearance beside the puck's edge of the detour [m]."""
_BEHIND = 0.05
"""Clearance behind the puck's edge of the detour's corner [m]."""
_REACHED = 0.015
"""A waypoint counts as reached within this distance [m]."""


def around_expert(state: SimState, cfg: PushConfig, mode: torch.Tensor,
                  memory: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Go round the puck on its left (mode 0) or right (mode 1) side at push height, then
    push as the scripted expert does.

    ``memory[:, 0]`` is the phase: 0 above the side point, 1 down to push height beside
    the puck, 2 the corner behind it on that side, 3 behind the puck on the push line; from
    4 on, the scripted expert (which recovers over the puck if the push loses the line).
    The two modes' mean path would come down onto the puck: averaging them fails.
    """
    ee, puck = state.sensors["ee_pos"], state.sensors["puck_pos"]
    line = state.buffers["goal"][:, :2] - puck[:, :2]
    u = line / torch.linalg.vector_norm(line, dim=1, keepdim=True).clamp(min=1e-6)  # (E, 2)
    n = torch.stack([-u[:, 1], u[:, 0]], dim=1)
    side = (1.0 - 2.0 * mode.to(u.dtype))[:, None]  # mode 0: +n (left of the push line)
    r = cfg.puck_radius
    beside = puck[:, :2] + side * (r + _SIDE) * n
    corner = beside - (r + _BEHIND) * u
    behind = puck[:, :2] - (r + 0.03) * u
    z_push = cfg.puck_half_height + 0.008
    z_hover = z_push + 0.06

    def point(xy: torch.Tensor, z: float) -> torch.Tensor:
        return torch.cat([xy, torch.full_like(xy[:, :1], z)], dim=1)

    waypoints = torch.stack([point(beside, z_hover), point(beside, z_push),
                             point(corner, z_push), point(behind, z_push)], dim=1)  # (E, 4, 3)
    phase = memory[:, 0].long()
    target = waypoints[torch.arange(len(phase), device=phase.device), phase.clamp(max=3)]
    reached = torch.linalg.vector_norm(target - ee, dim=1) < _REACHED
    phase = torch.where((phase < 4) & reached, phase + 1, phase)
    routed = move_ee(state, target - ee, cfg.action)
    # the route and its push keep their pace (its demonstrations are already slow at low
    # control rates; issue 47's tables use them)
    action = torch.where((phase < 4)[:, None], routed, _push(state, cfg, ease=False))
    return action, phase[:, None].to(memory.dtype)


TASK = TaskDef(
    name="push",
    description="push a puck to a goal on the table (gripper closed)",
    make_config=make_push_config,
    build_scene=build_scene,
    buffers={"goal": 3},
    reset=reset,
    observations={
        "joint_pos": terms.obs_joint_pos,
        "joint_vel": terms.obs_joint_vel,
        "ee_pos": terms.obs_ee_pos,
        "puck_pos": obs_puck_pos,
        "goal": obs_goal,
        "ee_to_puck": obs_ee_to_puck,
        "puck_to_goal": obs_puck_to_goal,
        "last_action": terms.obs_last_action,
    },
    privileged={"puck_vel": priv_puck_vel},
    rewards={
        "ee_to_puck": reward_ee_to_puck,
        "puck_to_goal": reward_puck_to_goal,
        "success": terms.indicator(success),
        "action_rate": terms.reward_action_rate,
        "shield": terms.reward_shield,
    },
    costs=terms.SAFETY_COSTS,
    success=success,
    terminated=terms.fell_off_table("puck_pos"),
    expert=expert,
    modal_expert=ModalExpert(modes=2, act=around_expert),
    # puck and goal boxes centred on y = 0, the table and the arm's base too
    mirror={"joint_pos": "joints", "joint_vel": "joints", "ee_pos": Y_MIRROR,
            "puck_pos": Y_MIRROR, "goal": Y_MIRROR[:2], "ee_to_puck": Y_MIRROR,
            "puck_to_goal": Y_MIRROR[:2], "last_action": "action",
            "puck_vel": (*Y_MIRROR, *AXIAL_MIRROR)},  # linear, then angular velocity
    # The puck's and the goal's boxes with room behind the puck, and a floor where the hand
    # (its lowest corner 8.8 mm below the site at the home orientation) stays 21 mm above
    # the shield's floor (5 mm) at rest, so the floor layer passes a hand coming down onto
    # it at up to 0.22 m/s, while still meeting the puck (4 cm high) over its top 14 mm.
    ee_box=((0.25, -0.45, 0.035), (0.8, 0.45, 0.5)),
)
