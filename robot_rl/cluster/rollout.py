"""A batch of transitions an env-runner sends to the learner, with its episode statistics.

Arrays are numpy (Ray moves them through its object store without a copy on the same node).
With N kept transitions, O = obs_dim, A = act_dim:

    obs, next_obs   (N, O) float32     next_obs is the true final observation at an episode's end
    action          (N, A) float32
    reward, cost    (N,) float32
    terminated      (N,) float32       1 where the episode ended in a terminal state

Steps the safety gate held are not transitions (the arm did not take the action) and are
left out, as the single-process runner leaves them out of its replay.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch


@dataclasses.dataclass
class Rollout:
    """Transitions of one ``collect`` call and what the learner logs about them."""

    obs: np.ndarray
    action: np.ndarray
    reward: np.ndarray
    cost: np.ndarray
    next_obs: np.ndarray
    terminated: np.ndarray
    env_steps: int
    """Control steps taken (held ones included): what ``total_steps`` counts."""
    steps: int
    """Env transitions taken, held ones included (env_steps without a chunk wrapper)."""
    sums: dict[str, float]
    """Per-term sums of reward terms, cost terms and shield interventions (TensorBoard)."""
    rejected: float
    """Gate rejections."""
    episode_return: list[float]
    episode_cost: list[float]
    episode_success: list[float]
    runner: int
    """Index of the env-runner that collected it."""
    version: int
    """Version of the weights that acted (-1: uniform random actions)."""
    seconds: float
    """Wall-clock seconds the collection took."""
    intervention: np.ndarray | None = None
    """(N,) bool: a person acted (robot episodes; HIL-SERL also learns them as demos)."""
    episode_index: int = -1
    """The robot episode's index in the robot's dataset (-1: simulation)."""

    def __len__(self) -> int:
        return int(self.obs.shape[0])

    def tensors(self, device: str | torch.device) -> dict[str, torch.Tensor]:
        """The transitions as tensors on ``device`` (replay buffer order)."""
        return {k: torch.from_numpy(getattr(self, k)).to(device)
                for k in ("obs", "action", "reward", "cost", "next_obs", "terminated")}
