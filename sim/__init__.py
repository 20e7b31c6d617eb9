"""Batched MuJoCo simulation: robots, tasks, backends and the batched env.

    from robot_rl.sim import make_env
    env = make_env("push", num_envs=64)            # CPU backend, C threads
    obs = env.reset(seed=0)
    obs, reward, cost, terminated, truncated, info = env.step(env.expert_action())
"""

from __future__ import annotations

from typing import Any

import torch

from robot_rl.robots import RobotSpec, get_robot, list_robots, register_robot
from robot_rl.sim.backends.warp import WarpOptions
from robot_rl.sim.env import BatchedEnv
from robot_rl.sim.randomization import DRConfig, DRPreset, dr_preset
from robot_rl.sim.tasks import (
    TaskConfig,
    get_task,
    list_tasks,
    make_task_config,
    register_task,
    replace_config,
)
from robot_rl.sim.vec_env import VecEnv, check_vec_env


def make_env(task: str | TaskConfig, num_envs: int, backend: str = "cpu",
             device: str | torch.device = "cpu", *, dr: DRPreset | None = None, seed: int = 0,
             nthread: int | None = None, warp: WarpOptions | None = None,
             **overrides: Any) -> BatchedEnv:
    """A batched env of ``task`` (a registered name or a TaskConfig).

    Args:
        task: task name (``reach``, ``push``, ``lift``, ``pusher``) or a config.
        num_envs: number of parallel simulations (> 0).
        backend: ``cpu`` (MuJoCo C threads) or ``warp`` (MuJoCo Warp, float32).
        device: torch device of all tensors; with ``warp``, ``cuda[:N]`` or ``cpu`` (Warp's
            CPU device: slow, for tests and machines without a GPU).
        dr: domain-randomization preset replacing the config's ranges.
        seed: seed of the env's generator (resets, randomization, noise).
        nthread: physics threads of the ``cpu`` backend (default: all cores, at most
            num_envs).
        warp: options of the ``warp`` backend (contact and constraint room, CUDA graphs).
        overrides: config fields to replace (``episode_length=50``).

    A passed config is copied, never modified.
    """
    if dr is not None:
        overrides["dr"] = dr_preset(dr)
    if isinstance(task, str):
        cfg = make_task_config(task, **overrides)
    else:
        cfg = replace_config(task, **overrides)
    return BatchedEnv(cfg, num_envs, backend=backend, device=device, seed=seed, nthread=nthread,
                      warp=warp)


__all__ = ["BatchedEnv", "DRConfig", "RobotSpec", "TaskConfig", "WarpOptions", "dr_preset",
           "get_robot", "get_task", "list_robots", "list_tasks", "make_env", "make_task_config",
           "register_robot", "register_task", "VecEnv", "check_vec_env"]
