"""What follows in an env from what a pixel policy sees (``vision.configs.PixelInputs``:
cameras, image size, depth, visual randomization, the observation terms it leaves out): the
env with those cameras, the terms the cameras stand in for and the columns the policy reads.
Pixel distillation (``robot-rl distill-pixels``) and pixel SAC (``robot-rl train-pixels``)
compose it into their configs; a pixel student file records it."""

from __future__ import annotations

from typing import Any

import torch

from robot_rl.sim import TaskConfig, make_env
from robot_rl.sim.configs import DRPreset
from robot_rl.sim.env import BatchedEnv
from robot_rl.sim.vec_env import Layout, layout_columns
from robot_rl.vision.configs import PixelInputs


def pixel_env(inputs: PixelInputs, task_cfg: str | TaskConfig, num_envs: int, seed: int,
              dr: DRPreset | None = None, **kwargs: Any) -> BatchedEnv:
    """An env of the task with the inputs' cameras (``kwargs``: ``make_env``'s others)."""
    return make_env(task_cfg, num_envs, dr=dr, seed=seed, cameras=inputs.camera_config(),
                    **kwargs)


def hidden_terms(env: BatchedEnv) -> list[str]:
    """The observation terms an env with cameras keeps from its policy (the robot does not
    measure them; ``sim.measurable``), in the ``critic`` group's order."""
    shown = {n for n, _ in env.obs_layout}
    return [n for n, _ in env.critic_layout[:len(env.observation_terms)] if n not in shown]


def student_columns(layout: Layout, drop: tuple[str, ...]) -> torch.Tensor:
    """Indices of the observation columns the student sees (the terms not in ``drop``)."""
    return torch.tensor(layout_columns(layout, [n for n, _ in layout if n not in drop]),
                        dtype=torch.long)
