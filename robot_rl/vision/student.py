"""A policy that sees what a robot has: camera images and proprioception.

    policy = PixelPolicy(PixelPolicyConfig(), image_shapes, proprio_dim=18, act_dim=7,
                         proprio_mean=m, proprio_std=s)
    action = policy(proprio, images)    # (B, O) float, {key: (B, C, H, W)} -> (B, A) in [-1, 1]

``images`` are the env's (``BatchedEnv.images``): ``{camera}.rgb`` uint8 and, where the
camera has depth, ``{camera}.depth`` metres; each camera's RGB and depth go through its own
``ConvEncoder`` as one 3- or 4-channel image. The features of every camera and the
normalized proprioception feed an MLP whose tanh output is the action.
"""

from __future__ import annotations

import dataclasses

import torch
from torch import nn

from robot_rl.vision.encoder import ConvEncoder, image_input, random_shift


@dataclasses.dataclass(kw_only=True)
class PixelPolicyConfig:
    """The pixel student's networks."""

    features: int = 64
    """Features per camera from its encoder."""
    encoder_width: int = 16
    """Channels of the encoder's convolutions (DrQ uses 32 on a GPU: 2-3x the CPU time)."""
    hidden: tuple[int, ...] = (256, 256)
    """Hidden layers of the MLP over camera features and proprioception."""
    shift: int = 4
    """DrQ random-shift padding [px] while training (0: none)."""


def cameras_of(image_shapes: dict[str, tuple[int, int, int]]) -> list[str]:
    """The camera names of an env's image keys, in order."""
    return list(dict.fromkeys(k.rsplit(".", 1)[0] for k in image_shapes))


class PixelPolicy(nn.Module):
    """Images + proprioception -> action (see module docstring)."""

    proprio_mean: torch.Tensor
    proprio_std: torch.Tensor

    def __init__(self, cfg: PixelPolicyConfig, image_shapes: dict[str, tuple[int, int, int]],
                 proprio_dim: int, act_dim: int, proprio_mean: torch.Tensor | None = None,
                 proprio_std: torch.Tensor | None = None):
        super().__init__()
        self.cfg = cfg
        self.image_shapes = dict(image_shapes)
        self.cameras = cameras_of(image_shapes)
        self.depth = {c: f"{c}.depth" in image_shapes for c in self.cameras}
        self.encoders = nn.ModuleDict({
            c: ConvEncoder(3 + int(self.depth[c]), image_shapes[f"{c}.rgb"][1:],
                           cfg.features, cfg.encoder_width) for c in self.cameras})
        self.register_buffer("proprio_mean", torch.zeros(proprio_dim) if proprio_mean is None
                             else proprio_mean.float().clone())
        self.register_buffer("proprio_std", torch.ones(proprio_dim) if proprio_std is None
                             else proprio_std.float().clamp(min=1e-2).clone())
        sizes = [cfg.features * len(self.cameras) + proprio_dim, *cfg.hidden]
        layers: list[nn.Module] = []
        for a, b in zip(sizes[:-1], sizes[1:], strict=True):
            layers += [nn.Linear(a, b), nn.ReLU()]
        layers.append(nn.Linear(sizes[-1], act_dim))
        self.mlp = nn.Sequential(*layers)
        self.proprio_dim, self.act_dim = proprio_dim, act_dim

    def encode(self, images: dict[str, torch.Tensor], gen: torch.Generator | None = None
               ) -> torch.Tensor:
        """(B, features * cameras); with ``gen`` (training), each image randomly shifted."""
        feats = []
        for c in self.cameras:
            x = image_input(images[f"{c}.rgb"], images.get(f"{c}.depth"))
            if gen is not None:
                x = random_shift(x, self.cfg.shift, gen)
            feats.append(self.encoders[c](x))
        return torch.cat(feats, dim=1)

    def forward(self, proprio: torch.Tensor, images: dict[str, torch.Tensor],
                gen: torch.Generator | None = None) -> torch.Tensor:
        p = ((proprio.float() - self.proprio_mean) / self.proprio_std).clamp(-10.0, 10.0)
        return torch.tanh(self.mlp(torch.cat([self.encode(images, gen), p], dim=1)))
