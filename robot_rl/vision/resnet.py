"""A ResNet-18 image encoder, optionally from pretrained (ImageNet) weights on disk.

    enc = ResNetEncoder(channels=4, size=(96, 96), features=64,
                        weights=Path("~/.cache/torch/hub/checkpoints/resnet18-f37072fd.pth"))
    z = enc(images)       # (B, C, H, W) float in [0, 1] -> (B, features), as ConvEncoder's

A ResNet-18 trunk (He et al. 2016) without its classifier, as robomimic and Diffusion
Policy use it: its last feature maps pooled by a spatial softmax (``pool="keypoints"``) or
flattened, then a linear projection with LayerNorm and tanh. The trunk is written here in
plain torch with torchvision's parameter names, so torchvision's weight files load as they
are, and torchvision is not needed (PyPI's torchvision does not import beside a CPU build of
torch). Weights are read from a local file (a torchvision ResNet-18 state dict, e.g. the one
torchvision's download caches); nothing is fetched. Without a file the trunk starts from
random weights.

ImageNet weights expect ImageNet's colour statistics: RGB is normalized with them inside
the encoder. A depth channel gets the first convolution's mean RGB filter (a common
initialization for RGB-D). The batch norms keep their pretrained statistics (they stay in
eval mode while training: a small RL or DAgger batch of one scene would overwrite ImageNet's
with its own), their affine parameters train.

The trunk downsamples by 32: 96x96 images give 3x3 feature maps, 48x48 give 2x2. A training
step costs ~35x the default ``ConvEncoder``'s on a CPU (1.3 s for 128 images at 48x48 on 2
cores; docs/vision.md): it is for a GPU, or for images where a pretrained trunk's features
matter more than speed.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from robot_rl.errors import ConfigError
from robot_rl.vision.configs import Pool
from robot_rl.vision.encoder import SpatialSoftmax

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
MIN_RESNET_SIZE = 32
"""Smallest image side [px] the trunk (stride 32) takes."""


class BasicBlock(nn.Module):
    """ResNet's two 3x3 convolutions with a residual connection (torchvision's names)."""

    def __init__(self, c_in: int, c_out: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.downsample = None if stride == 1 and c_in == c_out else nn.Sequential(
            nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skip = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(out)) + skip)


class ResNet18Trunk(nn.Module):
    """ResNet-18 up to its last feature maps: (B, 3, H, W) -> (B, 512, H/32, W/32)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        widths = (64, 128, 256, 512)
        for i, (c_in, c_out) in enumerate(zip((64, *widths[:-1]), widths, strict=True)):
            stride = 1 if i == 0 else 2
            self.add_module(f"layer{i + 1}", nn.Sequential(BasicBlock(c_in, c_out, stride),
                                                           BasicBlock(c_out, c_out, 1)))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        for i in range(1, 5):
            x = getattr(self, f"layer{i}")(x)
        return x


def load_weights(path: Path) -> dict[str, torch.Tensor]:
    """A torchvision ResNet-18 state dict from a local file."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise ConfigError(f"pretrained weights {path} not found (a torchvision ResNet-18 "
                          f"state dict, e.g. ~/.cache/torch/hub/checkpoints/"
                          f"resnet18-f37072fd.pth)")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:
        raise ConfigError(f"cannot read pretrained weights {path}: {e}") from None
    if not isinstance(state, dict) or "conv1.weight" not in state:
        raise ConfigError(f"{path} is not a ResNet state dict (no conv1.weight)")
    return state


class ResNetEncoder(nn.Module):
    """(B, C, H, W) float images in [0, 1] -> (B, features) (see module docstring)."""

    def __init__(self, channels: int, size: tuple[int, int], features: int = 64,
                 pool: Pool = "keypoints", weights: Path | None = None):
        super().__init__()
        if min(size) < MIN_RESNET_SIZE:
            raise ConfigError(f"images of {size[0]}x{size[1]} px are too small for the "
                              f"resnet18 encoder (at least {MIN_RESNET_SIZE}x{MIN_RESNET_SIZE})")
        if channels not in (3, 4):
            raise ConfigError(f"the resnet18 encoder takes RGB or RGB-D, not {channels} "
                              f"channels")
        trunk = ResNet18Trunk()
        if weights is not None:
            state = {k: v for k, v in load_weights(weights).items() if not k.startswith("fc.")}
            missing, unexpected = trunk.load_state_dict(state, strict=False)
            if missing or unexpected:
                raise ConfigError(f"{weights} is not a ResNet-18 state dict: missing "
                                  f"{missing[:3]}, unexpected {unexpected[:3]}")
        if channels == 4:  # depth gets the mean RGB filter
            rgb = trunk.conv1.weight.data
            conv = nn.Conv2d(4, rgb.shape[0], 7, stride=2, padding=3, bias=False)
            conv.weight.data = torch.cat([rgb, rgb.mean(1, keepdim=True)], dim=1)
            trunk.conv1 = conv
        self.trunk = trunk
        mean = torch.tensor([*IMAGENET_MEAN, 0.5][:channels]).view(1, channels, 1, 1)
        std = torch.tensor([*IMAGENET_STD, 0.5][:channels]).view(1, channels, 1, 1)
        self.register_buffer("mean", mean)
        self.register_buffer("std", std)
        with torch.no_grad():
            _, c, h, w = self.trunk.eval()(torch.zeros(1, channels, *size)).shape
        if pool == "keypoints":
            self.pool: nn.Module = SpatialSoftmax(h, w)
            flat = 2 * c
        elif pool == "flatten":
            self.pool = nn.Flatten()
            flat = c * h * w
        else:
            raise ValueError(f"unknown pool {pool!r} (flatten, keypoints)")
        self.head = nn.Sequential(nn.Linear(flat, features), nn.LayerNorm(features), nn.Tanh())
        self.features = features

    mean: torch.Tensor
    std: torch.Tensor

    def train(self, mode: bool = True) -> ResNetEncoder:
        super().train(mode)
        for m in self.trunk.modules():  # the batch norms keep their statistics
            if isinstance(m, nn.BatchNorm2d):
                m.eval()
        return self

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.pool(self.trunk((x - self.mean) / self.std)))
