"""Image encoders and augmentation for learning from pixels.

    enc = ConvEncoder(channels=4, size=(64, 64), features=64)
    z = enc(images)                       # (B, C, H, W) float in [0, 1] -> (B, features)
    x = random_shift(images, pad=4, gen)  # DrQ's augmentation, (B, C, H, W)
    x = image_input(rgb, depth)           # uint8 RGB (B, 3, H, W) + depth [m] -> float (B, 4, H, W)

The encoder is DrQ's (Yarats et al. 2021) made cheaper for CPUs: four 3x3 convolutions of
32 channels, the first two with stride 2 (DrQ strides only the first: at 64x64 that costs
~7x the multiply-adds, ~0.5 s per 128-image training batch on 2 cores). Its feature maps are
pooled either by flattening them (DrQ) or by a spatial softmax (``pool="keypoints"``, Levine
et al. 2016, as in robomimic and Diffusion Policy): each channel becomes the expected image
coordinates of its activation, a "keypoint" that says *where* something is, which is what
manipulation needs from a small image and what flattening learns slowly. Then a linear
projection with LayerNorm and tanh. It is trained from scratch; it has no pretrained weights
to fetch, so it runs anywhere.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from robot_rl.vision.configs import MIN_SIZE, Pool

DEPTH_RANGE = 2.0
"""Depth is fed to the encoder as min(depth, DEPTH_RANGE) / DEPTH_RANGE [m]; 0 (no return)
stays 0."""


def image_input(rgb: torch.Tensor, depth: torch.Tensor | None = None) -> torch.Tensor:
    """(B, 3 or 4, H, W) float in [0, 1]: RGB uint8 (B, 3, H, W) scaled, depth [m]
    (B, 1, H, W) clipped to ``DEPTH_RANGE`` and scaled, as one more channel."""
    x = rgb.float() / 255.0
    if depth is None:
        return x
    return torch.cat([x, depth.float().clamp(0.0, DEPTH_RANGE) / DEPTH_RANGE], dim=1)


def random_shift(x: torch.Tensor, pad: int, gen: torch.Generator | None = None
                 ) -> torch.Tensor:
    """DrQ's random shift: pad by replicating the border, then crop back to (H, W) at a
    random offset in [0, 2 pad] per sample; (B, C, H, W) -> (B, C, H, W)."""
    if pad <= 0:
        return x
    B, _, H, W = x.shape
    padded = F.pad(x, (pad, pad, pad, pad), mode="replicate")
    dx = torch.randint(0, 2 * pad + 1, (B,), generator=gen, device=gen.device if gen else None)
    dy = torch.randint(0, 2 * pad + 1, (B,), generator=gen, device=gen.device if gen else None)
    rows = (dy.to(x.device)[:, None] + torch.arange(H, device=x.device))  # (B, H)
    cols = (dx.to(x.device)[:, None] + torch.arange(W, device=x.device))  # (B, W)
    b = torch.arange(B, device=x.device)[:, None, None]
    # gather (B, C, H, W): padded[b, :, rows[b, i], cols[b, j]]
    out = padded.permute(0, 2, 3, 1)[b, rows[:, :, None], cols[:, None, :]]
    return out.permute(0, 3, 1, 2).contiguous()


class SpatialSoftmax(nn.Module):
    """(B, C, h, w) feature maps -> (B, 2 C): per channel, the softmax-weighted mean of the
    pixel coordinates (x, y in [-1, 1]), with a learned temperature."""

    grid: torch.Tensor

    def __init__(self, h: int, w: int):
        super().__init__()
        ys, xs = torch.meshgrid(torch.linspace(-1, 1, h), torch.linspace(-1, 1, w),
                                indexing="ij")
        self.register_buffer("grid", torch.stack([xs.reshape(-1), ys.reshape(-1)], dim=1))
        self.log_temperature = nn.Parameter(torch.zeros(()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, C = x.shape[:2]
        attn = torch.softmax(x.reshape(B, C, -1) / self.log_temperature.exp(), dim=-1)
        return (attn @ self.grid).reshape(B, 2 * C)  # (B, C, h w) @ (h w, 2)


class ConvEncoder(nn.Module):
    """(B, C, H, W) float images in [0, 1] -> (B, features) (see module docstring)."""

    def __init__(self, channels: int, size: tuple[int, int], features: int = 64,
                 width: int = 32, pool: Pool = "flatten"):
        super().__init__()
        if min(size) < MIN_SIZE:
            raise ValueError(f"images of {size[0]}x{size[1]} px are too small for the encoder "
                             f"(at least {MIN_SIZE}x{MIN_SIZE})")
        self.convs = nn.Sequential(
            nn.Conv2d(channels, width, 3, stride=2), nn.ReLU(),
            nn.Conv2d(width, width, 3, stride=2), nn.ReLU(),
            nn.Conv2d(width, width, 3), nn.ReLU(),
            nn.Conv2d(width, width, 3))
        with torch.no_grad():
            _, c, h, w = self.convs(torch.zeros(1, channels, *size)).shape
        if pool == "keypoints":
            self.pool: nn.Module = SpatialSoftmax(h, w)
            flat = 2 * c
        elif pool == "flatten":
            self.pool = nn.Sequential(nn.ReLU(), nn.Flatten())
            flat = c * h * w
        else:
            raise ValueError(f"unknown pool {pool!r} (flatten, keypoints)")
        self.head = nn.Sequential(nn.Linear(flat, features), nn.LayerNorm(features), nn.Tanh())
        self.features = features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.pool(self.convs(x - 0.5)))
