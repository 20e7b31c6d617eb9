"""What a pixel policy sees (``PixelInputs``: cameras, image size, depth, visual
randomization, the observation terms it leaves out) and what follows from it in an env: the
env with those cameras, the terms the cameras stand in for and the columns the policy reads.
Pixel distillation (``robot-rl distill-pixels``) and pixel SAC (``robot-rl train-pixels``)
compose it into their configs; a pixel student file records it."""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from robot_rl.errors import ConfigError
from robot_rl.sim import TaskConfig, make_env
from robot_rl.sim.configs import CameraConfig, DRPreset
from robot_rl.sim.env import BatchedEnv
from robot_rl.sim.vec_env import Layout, layout_columns
from robot_rl.sim.visual_dr import VISUAL_PRESETS, VisualPreset
from robot_rl.vision.encoder import MIN_SIZE


@dataclasses.dataclass(kw_only=True)
class PixelInputs:
    """The cameras and observation terms a pixel policy sees."""

    cameras: tuple[str, ...] = ("front", "wrist")
    """Cameras the policy sees."""
    size: int = 48
    """Square image size [px] (48: ~20 ms per 128-image training batch and camera on 2
    CPU cores with the default encoder; 64 costs 2.5x)."""
    depth: bool = False
    """The policy also sees depth."""
    visual: VisualPreset = "default"
    """Visual randomization preset (``sim.visual_dr``: camera pose and field of view, lights,
    colours, pixel and depth noise, and frames as old as a 30 fps camera's)."""
    drop_terms: tuple[str, ...] = ("last_action", "prev_action")
    """Observation terms the policy does not see. The last action predicts the teacher's
    next one so well that a cloned student copies it and ignores the cameras (the copycat
    problem of behaviour cloning with action history)."""

    def validate(self) -> None:
        if self.size < MIN_SIZE:
            raise ConfigError(f"--size must be >= {MIN_SIZE} px, got {self.size}")
        if not self.cameras:
            raise ConfigError("--cameras: give at least one camera")

    def camera_config(self) -> CameraConfig:
        return CameraConfig(names=self.cameras, height=self.size, width=self.size,
                            depth=self.depth, visual=VISUAL_PRESETS[self.visual])


def pixel_env(inputs: PixelInputs, task_cfg: str | TaskConfig, num_envs: int, seed: int,
              dr: DRPreset | None = None, **kwargs: Any) -> BatchedEnv:
    """An env of the task with the inputs' cameras (``kwargs``: ``make_env``'s others)."""
    return make_env(task_cfg, num_envs, dr=dr, seed=seed, cameras=inputs.camera_config(),
                    **kwargs)


def hidden_terms(env: BatchedEnv) -> list[str]:
    """The observation terms an env with cameras keeps from its policy (the robot does not
    measure them; ``sim.measurable``), in the ``critic`` group's order."""
    shown = {n for n, _ in env.obs_layout}
    return [n for n, _ in env.critic_layout[:len(env.task.observations)] if n not in shown]


def student_columns(layout: Layout, drop: tuple[str, ...]) -> torch.Tensor:
    """Indices of the observation columns the student sees (the terms not in ``drop``)."""
    return torch.tensor(layout_columns(layout, [n for n, _ in layout if n not in drop]),
                        dtype=torch.long)
