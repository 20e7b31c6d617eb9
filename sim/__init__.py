"""Batched MuJoCo simulation: robots, tasks, backends and the batched env.

    from robot_rl.sim import make_env
    env = make_env("push", num_envs=64)            # CPU backend, C threads
    obs = env.reset(seed=0)
    obs, reward, cost, terminated, truncated, info = env.step(env.expert_action())
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from robot_rl.lazy import lazy_exports

if TYPE_CHECKING:
    from robot_rl.robots import get_robot, list_robots, register_robot
    from robot_rl.robots.spec import RobotSpec
    from robot_rl.sim.configs import DRConfig, DRPreset, WarpOptions, dr_preset
    from robot_rl.sim.env import BatchedEnv
    from robot_rl.sim.make import make_env
    from robot_rl.sim.tasks import (
        get_task,
        list_tasks,
        make_task_config,
        register_task,
        replace_config,
    )
    from robot_rl.sim.tasks.config import TaskConfig
    from robot_rl.sim.vec_env import VecEnv, check_vec_env

_EXPORTS = {
    "RobotSpec": "robot_rl.robots.spec",
    "get_robot": "robot_rl.robots",
    "list_robots": "robot_rl.robots",
    "register_robot": "robot_rl.robots",
    "WarpOptions": "robot_rl.sim.configs",
    "BatchedEnv": "robot_rl.sim.env",
    "DRConfig": "robot_rl.sim.configs",
    "DRPreset": "robot_rl.sim.configs",
    "dr_preset": "robot_rl.sim.configs",
    "TaskConfig": "robot_rl.sim.tasks.config",
    "get_task": "robot_rl.sim.tasks",
    "list_tasks": "robot_rl.sim.tasks",
    "make_task_config": "robot_rl.sim.tasks",
    "register_task": "robot_rl.sim.tasks",
    "replace_config": "robot_rl.sim.tasks",
    "VecEnv": "robot_rl.sim.vec_env",
    "check_vec_env": "robot_rl.sim.vec_env",
    "make_env": "robot_rl.sim.make",
}
"""Where each exported name lives; imported on first use (``robot_rl.lazy``)."""

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


__all__ = ["BatchedEnv", "DRConfig", "DRPreset", "RobotSpec", "TaskConfig", "WarpOptions",
           "dr_preset", "get_robot", "get_task", "list_robots", "list_tasks", "make_env",
           "make_task_config", "register_robot", "register_task", "replace_config", "VecEnv",
           "check_vec_env"]
