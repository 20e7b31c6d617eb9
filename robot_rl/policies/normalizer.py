"""Fixed normalization from a dataset's statistics (observations and actions of a policy).

    norm = Normalizer.from_data(actions)      # actions (N, D)
    y = norm(x); x = norm.inverse(y)          # (..., D)

Unlike the running normalizer of the RL learners (``robot_rl.nets.RunningNorm``), these
statistics are fixed when the policy is built and saved with it (exported with the policy).
"""

from __future__ import annotations

import torch
from torch import nn


class Normalizer(nn.Module):
    """``clip((x - mean) / std)``; ``std`` is floored at ``min_std`` so a feature that never
    varies in the data (a fixed goal height) is not blown up at test time."""

    mean: torch.Tensor
    std: torch.Tensor

    def __init__(self, mean: torch.Tensor, std: torch.Tensor, clip: float = 10.0):
        super().__init__()
        self.register_buffer("mean", mean.detach().float().clone())
        self.register_buffer("std", std.detach().float().clone())
        self.clip = clip

    @classmethod
    def from_data(cls, x: torch.Tensor, min_std: float = 1e-2,
                  clip: float = 10.0) -> Normalizer:
        """Statistics of ``x`` (N, D)."""
        x = x.float()
        return cls(x.mean(0), x.std(0, correction=0).clamp(min=min_std), clip)

    @classmethod
    def identity(cls, dim: int) -> Normalizer:
        return cls(torch.zeros(dim), torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ((x - self.mean) / self.std).clamp(-self.clip, self.clip)

    def inverse(self, y: torch.Tensor) -> torch.Tensor:
        return y * self.std + self.mean
