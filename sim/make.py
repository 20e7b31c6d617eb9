"""``make_env``: a batched env of a task by name or config."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from robot_rl.sim.configs import DRPreset, dr_preset
from robot_rl.sim.env import BatchedEnv
from robot_rl.sim.tasks import make_task_config, replace_config
from robot_rl.sim.tasks.config import TaskConfig

if TYPE_CHECKING:
    import torch

    from robot_rl.sim.configs import WarpOptions


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
