"""Self-contained torch modules that become the exported graphs.

Each takes raw observations: normalization is part of the graph, so the ONNX and TorchScript
files are complete policies and ``policy.json`` records the statistics only for reference.

    DeployPolicy    obs (B, O) -> action (B, A) in [-1, 1]
    DeployCost      obs (B, O), action (B, A) -> pessimistic discounted cost (B,)
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from robot_rl.nets import EnsembleCritic, TanhGaussianActor, mlp


class ObsNorm(nn.Module):
    """Frozen observation normalization: clip((obs - mean) / std, -clip, clip)."""

    def __init__(self, mean: torch.Tensor, std: torch.Tensor, clip: float):
        super().__init__()
        self.register_buffer("mean", mean.detach().clone().float())
        self.register_buffer("std", std.detach().clone().float())
        self.clip = float(clip)

    mean: torch.Tensor
    std: torch.Tensor

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.clamp((obs - self.mean) / self.std, -self.clip, self.clip)


class DeployPolicy(nn.Module):
    """Normalization + a network whose output is squashed by tanh into [-1, 1]."""

    def __init__(self, norm: ObsNorm, net: nn.Module):
        super().__init__()
        self.norm = norm
        self.net = net

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.net(self.norm(obs)))


class ActorMean(nn.Module):
    """The pre-tanh mean of a TanhGaussianActor (its deterministic policy before tanh)."""

    def __init__(self, actor: TanhGaussianActor):
        super().__init__()
        self.actor = actor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.actor.mu(self.actor.trunk(x))


def student_net(obs_dim: int, act_dim: int, hidden: Sequence[int]) -> nn.Sequential:
    """The student MLP (pre-tanh output); ELU keeps it smooth for small sizes."""
    return mlp([obs_dim, *hidden, act_dim], nn.ELU)


class DeployCost(nn.Module):
    """Normalization + the cost-critic ensemble, reduced to mean + pessimism * std."""

    def __init__(self, norm: ObsNorm, critic: EnsembleCritic, pessimism: float):
        super().__init__()
        self.norm = norm
        self.critic = critic
        self.pessimism = float(pessimism)

    def forward(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        q = self.critic(self.norm(obs), action)  # (N, B)
        if self.critic.n == 1:
            return q[0]
        return q.mean(0) + self.pessimism * q.std(0)
