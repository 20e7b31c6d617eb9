"""Networks that predict a flow's velocity over an action chunk, conditioned on the
observation: a residual MLP (the default) and a 1-D temporal U-Net.

Both map ``(x (B, H, A) noisy chunk, t (B,) flow time in [0, 1], cond (B, C)) -> (B, H, A)``.
B = batch, H = chunk horizon, A = action dim, C = conditioning width (the normalized,
flattened observation history).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from robot_rl.errors import ConfigError


def time_embedding(t: torch.Tensor, dim: int) -> torch.Tensor:
    """(B,) times in [0, 1] -> (B, dim) sinusoidal features (frequencies 1 .. 1000)."""
    half = dim // 2
    freqs = torch.exp(-math.log(1000.0) * torch.arange(half, device=t.device) / max(half - 1, 1))
    angles = 1000.0 * t[:, None] * freqs[None]
    return torch.cat([angles.sin(), angles.cos()], dim=1)


class ResidualBlock(nn.Module):
    """x + W2 silu(W1 LayerNorm(x)), widths d -> 2d -> d."""

    def __init__(self, width: int):
        super().__init__()
        self.net = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, 2 * width), nn.SiLU(),
                                 nn.Linear(2 * width, width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.net(x)


class PlainBlock(nn.Module):
    """silu(x) -> W x, width d -> d: a quarter of a residual block's multiply-adds, for a
    student whose call latency counts."""

    def __init__(self, width: int):
        super().__init__()
        self.net = nn.Sequential(nn.SiLU(), nn.Linear(width, width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def make_blocks(kind: str, width: int, blocks: int) -> nn.Sequential:
    """``blocks`` blocks of width ``width``: "residual" (``ResidualBlock``) or "plain"."""
    if kind not in ("residual", "plain"):
        raise ConfigError(f"unknown block {kind!r}; blocks: residual, plain")
    block = ResidualBlock if kind == "residual" else PlainBlock
    return nn.Sequential(*[block(width) for _ in range(blocks)])


class MLPDenoiser(nn.Module):
    """MLP with LayerNorm over [flattened chunk, time features, condition]: residual
    blocks (the default) or plain ones."""

    def __init__(self, act_dim: int, horizon: int, cond_dim: int, width: int = 256,
                 blocks: int = 3, time_dim: int = 32, block: str = "residual"):
        super().__init__()
        self.horizon, self.act_dim, self.time_dim = horizon, act_dim, time_dim
        self.inp = nn.Linear(horizon * act_dim + time_dim + cond_dim, width)
        self.blocks = make_blocks(block, width, blocks)
        self.out = nn.Sequential(nn.LayerNorm(width), nn.SiLU(),
                                 nn.Linear(width, horizon * act_dim))

    def forward(self, x: torch.Tensor, t: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        h = torch.cat([x.flatten(1), time_embedding(t, self.time_dim), cond], dim=1)
        return self.out(self.blocks(self.inp(h))).view(-1, self.horizon, self.act_dim)


class _FiLMBlock(nn.Module):
    """Two 1-D convolutions with GroupNorm and Mish; the conditioning scales and shifts the
    first one's output per channel (FiLM); a 1x1 convolution on the skip path when the
    channel count changes."""

    def __init__(self, c_in: int, c_out: int, emb_dim: int, kernel: int = 5, groups: int = 8):
        super().__init__()
        pad = kernel // 2
        self.conv1 = nn.Sequential(nn.Conv1d(c_in, c_out, kernel, padding=pad),
                                   nn.GroupNorm(groups, c_out), nn.Mish())
        self.conv2 = nn.Sequential(nn.Conv1d(c_out, c_out, kernel, padding=pad),
                                   nn.GroupNorm(groups, c_out), nn.Mish())
        self.film = nn.Sequential(nn.Mish(), nn.Linear(emb_dim, 2 * c_out))
        self.skip = nn.Conv1d(c_in, c_out, 1) if c_in != c_out else nn.Identity()

    def forward(self, x: torch.Tensor, emb: torch.Tensor) -> torch.Tensor:
        scale, shift = self.film(emb).unsqueeze(-1).chunk(2, dim=1)
        h = self.conv1(x) * (1.0 + scale) + shift
        return self.conv2(h) + self.skip(x)


class UNet1DDenoiser(nn.Module):
    """1-D temporal U-Net over the chunk (Diffusion Policy's design, smaller): one FiLM
    block per level going down (halving the time axis between levels), one at the bottom,
    one per level going up with the skip connection concatenated. ``horizon`` must be
    divisible by 2 ** (levels - 1)."""

    def __init__(self, act_dim: int, horizon: int, cond_dim: int,
                 channels: tuple[int, ...] = (64, 128), time_dim: int = 32):
        super().__init__()
        levels = len(channels)
        if levels < 1 or horizon % (2 ** (levels - 1)):
            raise ConfigError(f"the U-Net's {levels} levels halve the chunk {levels - 1} "
                              f"times: the horizon ({horizon}) must be divisible by "
                              f"{2 ** (levels - 1)}")
        if any(c % 8 for c in channels):
            raise ConfigError(f"U-Net channels must be multiples of 8, got {channels}")
        self.time_dim = time_dim
        emb = time_dim + cond_dim
        self.down = nn.ModuleList()
        c_prev = act_dim
        for c in channels:
            self.down.append(_FiLMBlock(c_prev, c, emb))
            c_prev = c
        self.mid = _FiLMBlock(c_prev, c_prev, emb)
        self.up = nn.ModuleList()
        for c in reversed(channels):
            self.up.append(_FiLMBlock(c_prev + c, c, emb))
            c_prev = c
        self.pool = nn.AvgPool1d(2)
        self.final = nn.Conv1d(c_prev, act_dim, 1)

    def forward(self, x: torch.Tensor, t: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        emb = torch.cat([time_embedding(t, self.time_dim), cond], dim=1)
        h = x.transpose(1, 2)  # (B, A, H): channels first
        skips = []
        for i, block in enumerate(self.down):
            h = block(h, emb)
            skips.append(h)
            if i < len(self.down) - 1:
                h = self.pool(h)
        h = self.mid(h, emb)
        for i, block in enumerate(self.up):
            skip = skips[-1 - i]
            if h.shape[-1] != skip.shape[-1]:
                h = nn.functional.interpolate(h, size=skip.shape[-1], mode="nearest")
            h = block(torch.cat([h, skip], dim=1), emb)
        return self.final(h).transpose(1, 2)
