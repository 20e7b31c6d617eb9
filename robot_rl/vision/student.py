"""A policy that sees what a robot has: camera images and proprioception.

    policy = PixelPolicy(PixelPolicyConfig(), image_shapes, proprio_dim=18, act_dim=7,
                         proprio_mean=m, proprio_std=s, state_dim=7, state_mean=sm,
                         state_std=ss)     # statistics: ObsNorm buffers (proprio_norm, state_norm)
    action = policy(proprio, images)    # (B, O) float, {key: (B, C, H, W)} -> (B, A) in [-1, 1]
    est = policy.estimate(proprio, images)      # (B, S) the hidden state, normalized

``images`` are the env's (``BatchedEnv.images``): ``{camera}.rgb`` uint8 and, where the
camera has depth, ``{camera}.depth`` metres; each camera's RGB and depth go through its own
encoder as one 3- or 4-channel image (``ConvEncoder``, or with ``encoder="resnet18"`` a
ResNet-18 trunk, ``robot_rl.vision.resnet``).

With ``state_dim > 0`` the policy has a *state head*: from the cameras' features and the
normalized proprioception it estimates the observation terms the robot does not measure
(the ones the cameras stand in for, e.g. push's puck position and its offsets to the hand
and the goal), normalized by ``state_norm``. What the action MLP reads is set
by ``PixelPolicyConfig.act_on``:

- ``state`` (default where there is a state head): proprioception + the state estimate. The
  student is then a perception module followed by a state policy: each is a plain supervised
  problem, and the action MLP can be trained on vectors, cheaply and in large batches, with
  the true state (blurred by the estimator's error) while the encoder learns the estimate
  (``robot_rl.distill.pixels``).
- ``features``: proprioception + the cameras' features, end to end (DrQ-style); the state
  head, where there is one, only shapes the encoder through its auxiliary loss.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from robot_rl.export.modules import ObsNorm
from robot_rl.nets import mlp
from robot_rl.vision.configs import PixelPolicyConfig
from robot_rl.vision.encoder import ConvEncoder, image_input, random_shift


def make_encoder(cfg: PixelPolicyConfig, channels: int, size: tuple[int, int],
                 load_pretrained: bool = True) -> nn.Module:
    """A camera's encoder as ``cfg`` says; ``load_pretrained=False`` skips reading the
    pretrained weights (a saved policy about to load its own)."""
    if cfg.encoder == "resnet18":
        from robot_rl.vision.resnet import ResNetEncoder

        return ResNetEncoder(channels, size, cfg.features, cfg.pool,
                             cfg.pretrained if load_pretrained else None)
    return ConvEncoder(channels, size, cfg.features, cfg.encoder_width, cfg.pool)


def cameras_of(image_shapes: dict[str, tuple[int, int, int]]) -> list[str]:
    """The camera names of an env's image keys, in order."""
    return list(dict.fromkeys(k.rsplit(".", 1)[0] for k in image_shapes))


class PixelPolicy(nn.Module):
    """Images + proprioception -> action (see module docstring)."""

    def __init__(self, cfg: PixelPolicyConfig, image_shapes: dict[str, tuple[int, int, int]],
                 proprio_dim: int, act_dim: int, proprio_mean: torch.Tensor | None = None,
                 proprio_std: torch.Tensor | None = None, state_dim: int = 0,
                 state_mean: torch.Tensor | None = None, state_std: torch.Tensor | None = None,
                 load_pretrained: bool = True):
        super().__init__()
        self.cfg = cfg
        self.image_shapes = dict(image_shapes)
        self.cameras = cameras_of(image_shapes)
        self.depth = {c: f"{c}.depth" in image_shapes for c in self.cameras}
        self.encoders = nn.ModuleDict({
            c: make_encoder(cfg, 3 + int(self.depth[c]), image_shapes[f"{c}.rgb"][1:],
                            load_pretrained) for c in self.cameras})
        self.proprio_norm = ObsNorm.of(proprio_dim, proprio_mean, proprio_std, 10.0, 1e-2)
        self.state_norm = ObsNorm.of(state_dim, state_mean, state_std, math.inf, 1e-2)
        width = cfg.features * len(self.cameras) + proprio_dim
        self.state_head = None if state_dim == 0 else \
            mlp([width, *cfg.state_hidden, state_dim])
        self.acts_on_state = state_dim > 0 and cfg.act_on == "state"
        """The action MLP reads proprioception + the state estimate (else + the features)."""
        self.mlp = mlp([proprio_dim + state_dim if self.acts_on_state else width,
                        *cfg.hidden, act_dim], nn.ELU if cfg.activation == "elu" else nn.ReLU)
        self.proprio_dim, self.act_dim, self.state_dim = proprio_dim, act_dim, state_dim

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

    def normalize_proprio(self, proprio: torch.Tensor) -> torch.Tensor:
        return self.proprio_norm(proprio.float())

    def normalize_state(self, state: torch.Tensor) -> torch.Tensor:
        return self.state_norm(state.float())

    def _features(self, proprio: torch.Tensor, images: dict[str, torch.Tensor],
                  gen: torch.Generator | None) -> torch.Tensor:
        return torch.cat([self.encode(images, gen), self.normalize_proprio(proprio)], dim=1)

    def estimate(self, proprio: torch.Tensor, images: dict[str, torch.Tensor],
                 gen: torch.Generator | None = None) -> torch.Tensor:
        """(B, state_dim) the hidden state estimated from images + proprioception,
        normalized (``normalize_state``'s units)."""
        if self.state_head is None:
            raise ValueError("this policy has no state head (state_dim 0)")
        return self.state_head(self._features(proprio, images, gen))

    def act_on_state(self, proprio: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        """(B, A) actions from proprioception and a *normalized* state (an estimate, or
        while training the true state); only where ``acts_on_state``."""
        return torch.tanh(self.mlp(torch.cat([self.normalize_proprio(proprio), state], dim=1)))

    def mlp_input(self, proprio: torch.Tensor, images: dict[str, torch.Tensor],
                  gen: torch.Generator | None = None, with_estimate: bool = False,
                  detach_estimate: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(what the action MLP reads (B, width), the state estimate (B, S)); the estimate
        is None without a state head, or where the MLP does not read it and
        ``with_estimate`` is False. ``detach_estimate``: the MLP reads the estimate without
        a gradient path into the encoders (the estimate returned keeps its own)."""
        feats = self._features(proprio, images, gen)
        est = None if self.state_head is None or not (self.acts_on_state or with_estimate) \
            else self.state_head(feats)
        if self.acts_on_state:
            assert est is not None
            read = est.detach() if detach_estimate else est
            return torch.cat([self.normalize_proprio(proprio), read], dim=1), est
        return feats, est

    def forward(self, proprio: torch.Tensor, images: dict[str, torch.Tensor],
                gen: torch.Generator | None = None) -> torch.Tensor:
        return torch.tanh(self.mlp(self.mlp_input(proprio, images, gen)[0]))
