"""Self-contained torch modules that become the exported graphs.

Each takes raw observations: normalization is part of the graph, so the ONNX and TorchScript
files are complete policies and ``policy.json`` records the statistics only for reference.

    DeployPolicy    obs (B, O) -> action (B, A) in [-1, 1]
    DeployCost      obs (B, O), action (B, A) -> pessimistic discounted cost (B,)
    NoisyChunkGraph obs (B, T O), noise (B, H A) -> chunk (B, H A) in [-1, 1]: a flow
                    policy, its integration unrolled (the runtime draws the noise); one
                    of one step is exported folded (``robot_rl.export.onestep_graph``)
    ChunkGraph      obs (B, T O) -> chunk (B, H A): an MLP chunk policy, or a flow policy
                    whose noise a DSRL actor chooses from the newest observation; an MLP
                    that sees a clock also takes step (B, 1), the control steps since
                    the episode's start (int64, which the runtime counts)
    ResidualGraph   obs (B, O), base action (B, A) -> action (B, A): a residual policy's
                    bounded correction of a chunk policy's action
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from robot_rl.nets import EnsembleCritic, TanhGaussianActor, mlp
from robot_rl.policies import ChunkPolicy


class ObsNorm(nn.Module):
    """Frozen observation normalization: clip((obs - mean) / std, -clip, clip)."""

    def __init__(self, mean: torch.Tensor, std: torch.Tensor, clip: float):
        super().__init__()
        self.register_buffer("mean", mean.detach().clone().float())
        self.register_buffer("std", std.detach().clone().float())
        self.clip = float(clip)

    mean: torch.Tensor
    std: torch.Tensor

    @classmethod
    def of(cls, dim: int, mean: torch.Tensor | None = None, std: torch.Tensor | None = None,
           clip: float = 10.0, min_std: float = 0.0) -> ObsNorm:
        """Normalization of ``dim`` values by ``mean`` and ``std`` (floored at ``min_std``);
        without them the identity, for a module about to load its own statistics."""
        return cls(torch.zeros(dim) if mean is None else mean,
                   torch.ones(dim) if std is None else std.float().clamp(min=min_std), clip)

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


class NoisyChunkGraph(nn.Module):
    """A flow chunk policy with its noise as an input (see module docstring)."""

    def __init__(self, policy: ChunkPolicy):
        super().__init__()
        self.policy = policy.eval()
        self.shape = (policy.obs_history, policy.obs_dim, policy.horizon, policy.act_dim)

    def forward(self, obs: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        T, n_obs, H, A = self.shape
        return self.policy(obs.view(-1, T, n_obs), noise.view(-1, H, A)).flatten(1)


class ChunkGraph(nn.Module):
    """A chunk policy from the observation history alone (see module docstring): with
    ``noise_actor`` (obs (B, O) -> (B, H A) in [-1, 1], a DSRL agent's deterministic actor)
    the flow's noise is ``noise_scale`` times its output for the newest observation;
    without, the policy ignores the noise (an MLP) and gets zeros."""

    def __init__(self, policy: ChunkPolicy, noise_actor: nn.Module | None = None,
                 noise_scale: float = 1.0, noise_steps: int | None = None):
        """``noise_steps``: the chunk steps whose noise the actor chooses (the first S;
        default all H), the rest's noise 0, as DSRL's ``NoiseActionEnv`` makes it."""
        super().__init__()
        self.policy = policy.eval()
        self.noise_actor = noise_actor
        self.noise_scale = float(noise_scale)
        self.noise_steps = policy.horizon if noise_steps is None else int(noise_steps)
        self.shape = (policy.obs_history, policy.obs_dim, policy.horizon, policy.act_dim)

    def forward(self, obs: torch.Tensor, step: torch.Tensor | None = None) -> torch.Tensor:
        T, n_obs, H, A = self.shape
        hist = obs.view(-1, T, n_obs)
        noise = torch.zeros(hist.shape[0], H, A, dtype=obs.dtype, device=obs.device)
        if self.noise_actor is not None:
            chosen = self.noise_scale * self.noise_actor(hist[:, -1]).view(-1, self.noise_steps,
                                                                           A)
            noise = torch.cat([chosen, noise[:, self.noise_steps:]], dim=1)
        return self.policy(hist, noise, step).flatten(1)


class ResidualGraph(nn.Module):
    """clip(base + scale * residual(obs, base), -1, 1): a residual policy (a ``DeployPolicy``
    on the observation and the base action, in [-1, 1]) correcting the base action.
    ``every``: control steps per decision (the deployed policy holds the correction between;
    ``ResidualEnv``), recorded in the artifact's metadata, not in the graph."""

    def __init__(self, residual: DeployPolicy, scale: float, every: int = 1):
        super().__init__()
        self.residual = residual.eval()
        self.scale = float(scale)
        self.every = int(every)

    def forward(self, obs: torch.Tensor, base: torch.Tensor) -> torch.Tensor:
        r = self.residual(torch.cat([obs, base], dim=1))
        return torch.clamp(base + self.scale * r, -1.0, 1.0)
