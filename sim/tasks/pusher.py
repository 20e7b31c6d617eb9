"""pusher: gymnasium's Pusher-v5 (model, reset, observation, reward) in the batched env.

The reference point for benchmarks and parity checks: the same MJCF, frame skip 5, 23-D
observation and reward terms as ``gymnasium.make("Pusher-v5")``, plus our safety costs, with
actions in [-1, 1] mapped onto the actuators' [-2, 2] torque range. It has no scripted expert.
"""

from __future__ import annotations

import mujoco
import torch

from robot_rl.robots import RobotSpec
from robot_rl.sim.scene import add_contact_force, add_frame_sensors
from robot_rl.sim.state import SimState
from robot_rl.sim.tasks import terms
from robot_rl.sim.tasks.base import TaskDef
from robot_rl.sim.tasks.configs import PusherConfig, make_pusher_config


def build_scene(robot: RobotSpec, cfg: PusherConfig) -> mujoco.MjSpec:
    spec = robot.load_spec()
    spec.option.timestep = cfg.physics_dt
    for act in spec.actuators:  # gymnasium's actuators are unnamed
        act.name = act.target
    spec.body("tips_arm").add_site(name="tips", pos=[0.1, 0.0, 0.0])
    add_frame_sensors(spec, "ee", mujoco.mjtObj.mjOBJ_SITE, "tips")
    # gymnasium's get_body_com() reads the body frame origin (xpos), hence XBODY.
    for body in ("tips_arm", "object", "goal"):
        add_frame_sensors(spec, body, mujoco.mjtObj.mjOBJ_XBODY, body)
    add_contact_force(spec, "arm_table_force", subtree=robot.root_body, geom="table")
    return spec


def reset(state: SimState, env_ids: torch.Tensor, cfg: PusherConfig,
          gen: torch.Generator) -> None:
    n, dt, dev = len(env_ids), state.dtype, state.device
    obj = terms.uniform(state, cfg.object_lo, cfg.object_hi, n, gen)
    far = torch.linalg.vector_norm(obj, dim=1) > cfg.min_goal_distance  # the goal is (0, 0)
    while not bool(far.all()):
        obj = torch.where(far[:, None], obj, terms.uniform(state, cfg.object_lo, cfg.object_hi, n,
                                                           gen))
        far = torch.linalg.vector_norm(obj, dim=1) > cfg.min_goal_distance
    qpos, qvel = state.backend.qpos, state.backend.qvel
    qpos[env_ids, 7:9] = obj
    qpos[env_ids, 9:11] = 0.0
    noise = torch.rand((n, 7), generator=gen, device=dev, dtype=dt)
    qvel[env_ids, :7] = cfg.qvel_noise * (2.0 * noise - 1.0)
    qvel[env_ids, 7:] = 0.0


def obs_qpos(state: SimState, cfg: PusherConfig) -> torch.Tensor:
    return state.qpos[:, :7]


def obs_qvel(state: SimState, cfg: PusherConfig) -> torch.Tensor:
    return state.qvel[:, :7]


def obs_tips(state: SimState, cfg: PusherConfig) -> torch.Tensor:
    return state.sensors["tips_arm_pos"]


def obs_object(state: SimState, cfg: PusherConfig) -> torch.Tensor:
    return state.sensors["object_pos"]


def obs_goal(state: SimState, cfg: PusherConfig) -> torch.Tensor:
    return state.sensors["goal_pos"]


def reward_near(state: SimState, cfg: PusherConfig) -> torch.Tensor:
    d = state.sensors["object_pos"] - state.sensors["tips_arm_pos"]
    return -torch.linalg.vector_norm(d, dim=1)


def reward_dist(state: SimState, cfg: PusherConfig) -> torch.Tensor:
    d = state.sensors["object_pos"] - state.sensors["goal_pos"]
    return -torch.linalg.vector_norm(d, dim=1)


def reward_ctrl(state: SimState, cfg: PusherConfig) -> torch.Tensor:
    u = state.ctrl[:, :7]
    return -(u * u).sum(dim=1)


def success(state: SimState, cfg: PusherConfig) -> torch.Tensor:
    d = state.sensors["object_pos"] - state.sensors["goal_pos"]
    return torch.linalg.vector_norm(d[:, :2], dim=1) < 0.05


TASK = TaskDef(
    name="pusher",
    description="gymnasium Pusher-v5 in the batched env (benchmark reference)",
    make_config=make_pusher_config,
    build_scene=build_scene,
    buffers={},
    reset=reset,
    observations={"qpos": obs_qpos, "qvel": obs_qvel, "tips_arm": obs_tips,
                  "object": obs_object, "goal": obs_goal},
    rewards={"near": reward_near, "dist": reward_dist, "ctrl": reward_ctrl},
    costs=terms.SAFETY_COSTS,
    success=success,
    terminated=None,
    expert=None,
)
