"""Networks: plain MLPs, ensembles of MLPs evaluated in one batched matmul, the tanh-Gaussian
actor, and the running observation normalizer.

Shapes: B = batch, N = ensemble members, O = obs dim, A = action dim.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0


def mlp(sizes: Sequence[int], activation: type[nn.Module] = nn.ReLU,
        layer_norm: bool = False) -> nn.Sequential:
    """Linear layers ``sizes[0] -> ... -> sizes[-1]``; activation (and LayerNorm) between."""
    layers: list[nn.Module] = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            if layer_norm:
                layers.append(nn.LayerNorm(sizes[i + 1]))
            layers.append(activation())
    return nn.Sequential(*layers)


class EnsembleLinear(nn.Module):
    """N independent linear layers: (N, B, in) -> (N, B, out) in one ``baddbmm``."""

    def __init__(self, n: int, d_in: int, d_out: int):
        super().__init__()
        bound = 1.0 / math.sqrt(d_in)  # nn.Linear's default init, per member
        self.weight = nn.Parameter(torch.empty(n, d_in, d_out).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(n, 1, d_out).uniform_(-bound, bound))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.baddbmm(self.bias, x, self.weight)


class EnsembleLayerNorm(nn.Module):
    """LayerNorm over the last dim with a separate affine per ensemble member."""

    def __init__(self, n: int, d: int):
        super().__init__()
        self.d = d
        self.weight = nn.Parameter(torch.ones(n, 1, d))
        self.bias = nn.Parameter(torch.zeros(n, 1, d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, (self.d,)) * self.weight + self.bias


class EnsembleCritic(nn.Module):
    """N critics Q_i(s, a) (RLPD/REDQ): LayerNorm after each hidden layer.

    ``forward(obs (B, O), act (B, A)) -> (N, B)``; ``obs`` may also be (N, B, O) to give each
    member its own batch. With ``atoms`` K > 0 each member is categorical (C51; FastTD3's
    and FastSAC's critics): it gives logits over K values evenly spaced on
    [``v_min``, ``v_max``] (``logits``: (N, B, K)) and ``forward`` their expectation.
    """

    def __init__(self, n: int, obs_dim: int, act_dim: int, hidden: Sequence[int],
                 layer_norm: bool = True, activation: type[nn.Module] = nn.ReLU,
                 atoms: int = 0, v_min: float = -20.0, v_max: float = 20.0):
        super().__init__()
        self.n, self.atoms = n, atoms
        sizes = [obs_dim + act_dim, *hidden]
        layers: list[nn.Module] = []
        for d_in, d_out in zip(sizes[:-1], sizes[1:], strict=True):
            layers.append(EnsembleLinear(n, d_in, d_out))
            if layer_norm:
                layers.append(EnsembleLayerNorm(n, d_out))
            layers.append(activation())
        layers.append(EnsembleLinear(n, sizes[-1], max(atoms, 1)))
        self.net = nn.Sequential(*layers)
        if atoms:
            self.register_buffer("support", torch.linspace(v_min, v_max, atoms))

    support: torch.Tensor

    def logits(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        """(N, B, K) the categorical members' logits (``atoms`` K > 0)."""
        x = torch.cat([obs, act], dim=-1)
        if x.dim() == 2:
            x = x.unsqueeze(0).expand(self.n, -1, -1)
        return self.net(x)

    def forward(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        out = self.logits(obs, act)
        if not self.atoms:
            return out.squeeze(-1)  # (N, B)
        return (out.softmax(-1) * self.support).sum(-1)  # (N, B): the expectations


class TanhGaussianActor(nn.Module):
    """pi(a|s) = tanh(N(mu(s), sigma(s))), actions in (-1, 1).

    ``log_std_init``: the log std the actor starts from (its head's weights scaled down, its
    bias set); None leaves the head as initialized, whose log std then starts near
    ``LOG_STD_MIN + (LOG_STD_MAX - LOG_STD_MIN) / 2`` = -1.5 (sigma 0.22).
    """

    def __init__(self, obs_dim: int, act_dim: int, hidden: Sequence[int],
                 activation: type[nn.Module] = nn.ReLU, layer_norm: bool = False,
                 log_std_init: float | None = None):
        super().__init__()
        self.trunk = mlp([obs_dim, *hidden], activation, layer_norm)
        if layer_norm:
            self.trunk.append(nn.LayerNorm(hidden[-1]))
        self.trunk.append(activation())
        self.mu = nn.Linear(hidden[-1], act_dim)
        self.log_std = nn.Linear(hidden[-1], act_dim)
        if log_std_init is not None:
            if not LOG_STD_MIN < log_std_init < LOG_STD_MAX:
                raise ValueError(f"log_std_init must be in ({LOG_STD_MIN}, {LOG_STD_MAX}), got "
                                 f"{log_std_init}")
            with torch.no_grad():
                self.log_std.weight.mul_(0.01)
                u = 2.0 * (log_std_init - LOG_STD_MIN) / (LOG_STD_MAX - LOG_STD_MIN) - 1.0
                self.log_std.bias.fill_(math.atanh(u))

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(mean (B, A), log_std (B, A)) of the pre-tanh Gaussian."""
        h = self.trunk(obs)
        log_std = torch.tanh(self.log_std(h))
        log_std = LOG_STD_MIN + 0.5 * (LOG_STD_MAX - LOG_STD_MIN) * (log_std + 1.0)
        return self.mu(h), log_std

    def sample(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """A reparameterized sample (B, A) and its log-probability (B,)."""
        mean, log_std = self(obs)
        u = mean + log_std.exp() * torch.randn_like(mean)
        return torch.tanh(u), tanh_gaussian_log_prob(u, mean, log_std)

    def mean_action(self, obs: torch.Tensor) -> torch.Tensor:
        """The deterministic action tanh(mu(s)) (B, A)."""
        return torch.tanh(self(obs)[0])


def tanh_gaussian_log_prob(u: torch.Tensor, mean: torch.Tensor,
                           log_std: torch.Tensor) -> torch.Tensor:
    """log pi(tanh(u)) (B,) for pre-tanh sample u of N(mean, exp(log_std)).

    The change of variables subtracts log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u)),
    written in the numerically stable form.
    """
    z = (u - mean) / log_std.exp()
    gauss = -0.5 * z * z - log_std - 0.5 * math.log(2.0 * math.pi)
    squash = 2.0 * (math.log(2.0) - u - F.softplus(-2.0 * u))
    return (gauss - squash).sum(-1)


class RunningNorm(nn.Module):
    """Observation normalizer from running mean and variance (Chan's parallel update).

    ``update(x (B, O))`` folds a batch into the statistics; ``forward`` returns
    ``clip((x - mean) / sqrt(var + eps))``.
    """

    def __init__(self, dim: int, clip: float = 10.0, eps: float = 1e-4):
        super().__init__()
        self.register_buffer("mean", torch.zeros(dim))
        self.register_buffer("var", torch.ones(dim))
        # (1,), not 0-dim: torch.compile takes a 0-dim CPU tensor for a Python number and
        # restarts its analysis of the compiled gradient step over it (10 s of tracing)
        self.register_buffer("count", torch.zeros(1, dtype=torch.float64))
        self.clip = clip
        self.eps = eps

    mean: torch.Tensor
    var: torch.Tensor
    count: torch.Tensor
    """(1,) float64: the observations folded in so far."""

    def _load_from_state_dict(self, state_dict: dict[str, Any], prefix: str, *args: Any,
                              **kwargs: Any) -> None:
        count = state_dict.get(prefix + "count")
        if count is not None and count.dim() == 0:  # saved when the count was 0-dim
            state_dict[prefix + "count"] = count.reshape(1)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    @torch.no_grad()
    def update(self, x: torch.Tensor) -> None:
        """Fold ``x`` (B, O) in; the count stays a tensor (float64), so nothing is read
        back from the device."""
        if x.shape[0] == 0:
            return
        n = float(x.shape[0])
        total = self.count + n  # (1,) float64, as the numbers: the statistics' arithmetic
        count, w = self.count.to(x.dtype), (n / total).to(x.dtype)  # is in x's dtype
        b_mean, b_var = x.mean(0), x.var(0, correction=0)
        delta = b_mean - self.mean
        m2 = self.var * count + b_var * n + delta * delta * count * w
        self.mean += delta * w
        self.var.copy_(m2 / total.to(x.dtype))
        self.count.copy_(total)

    @property
    def std(self) -> torch.Tensor:
        return torch.sqrt(self.var + self.eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ((x - self.mean) / self.std).clamp(-self.clip, self.clip)

    def inverse(self, z: torch.Tensor, dims: slice = slice(None)) -> torch.Tensor:
        """The raw values of normalized ones ``z`` (B, D) of the features ``dims`` (D of
        them; default all): exact where ``forward`` did not clip."""
        return self.mean[dims] + z * self.std[dims]
