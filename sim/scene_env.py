"""SceneEnv: what the renderers, the policy cameras and the measurability check need of a
batched env. ``BatchedEnv`` has it; naming it here keeps those modules from importing the
env that imports them.

    renderer = EnvRenderer(env)      # env: any SceneEnv (a BatchedEnv)
"""

from __future__ import annotations

from typing import Any, Protocol

import mujoco
import torch

from robot_rl.sim.backends.base import Backend
from robot_rl.sim.state import SimState


class SceneEnv(Protocol):
    """A batched MuJoCo env: its compiled model, the backend that steps its worlds, their
    state and the task."""

    num_envs: int
    device: torch.device
    model: mujoco.MjModel
    backend: Backend
    state: SimState
    cfg: Any
    """The task's config (``TaskConfig``)."""
    task: Any
    """The task's functions (``TaskDef``)."""
    observation_terms: dict[str, Any]
    """Name -> fn(state, cfg) of each observation term, in order: the task's, then those its
    config adds (``TaskConfig.observe_prev_action``)."""
