"""A success classifier on camera frames, usable as the reward where no state tells success
(HIL-SERL's reward classifier).

    clf = load_reward_classifier("runs/reward_lift.pt")
    p = clf.probability({"front": rgb}, state)    # {camera: (B, 3, H, W) uint8}, (B, k) -> (B,)
    done = clf.success({"front": rgb}, state)     # (B,) bool: p >= the chosen threshold

Each camera's frame is resized to the classifier's square ``size`` (area averaging: a frame
of any resolution works, as a RealSense's 640x480 does), encoded by its own ``ConvEncoder``,
and the features of every camera, with the optional state columns the classifier was trained
on (normalized; e.g. push's commanded goal, which no image shows), feed an MLP whose output
is the logit of "this frame shows success". ``robot-rl reward train`` makes one
(``robot_rl.vision.reward_training``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from robot_rl.checkpoint import CheckpointError
from robot_rl.config_io import from_dict
from robot_rl.export.modules import ObsNorm
from robot_rl.vision.configs import ClassifierNetConfig
from robot_rl.vision.encoder import ConvEncoder, image_input, random_shift

REWARD_CLASSIFIER_FORMAT = "robot_rl.reward_classifier"


def resize_frames(rgb: torch.Tensor, size: int) -> torch.Tensor:
    """(B, 3, H, W) uint8 -> (B, 3, size, size) uint8 by area averaging (or bilinear
    interpolation where a side grows)."""
    if rgb.shape[-2:] == (size, size):
        return rgb
    mode = "area" if min(rgb.shape[-2:]) >= size else "bilinear"
    out = F.interpolate(rgb.float(), size=(size, size), mode=mode)
    return out.round().clamp(0, 255).to(torch.uint8)


class SuccessNet(nn.Module):
    """{camera: (B, 3, size, size) uint8} + (B, k) state -> (B,) success logits."""

    def __init__(self, cfg: ClassifierNetConfig, cameras: tuple[str, ...], size: int,
                 state_dim: int = 0, state_mean: torch.Tensor | None = None,
                 state_std: torch.Tensor | None = None):
        super().__init__()
        self.cfg, self.cameras, self.size = cfg, tuple(cameras), size
        self.encoders = nn.ModuleDict({c: ConvEncoder(3, (size, size), cfg.features,
                                                      cfg.encoder_width, cfg.pool)
                                       for c in self.cameras})
        self.state_norm = ObsNorm.of(state_dim, state_mean, state_std, 10.0, 1e-3)
        self.mlp = nn.Sequential(
            nn.Linear(cfg.features * len(self.cameras) + state_dim, cfg.hidden), nn.ReLU(),
            nn.Linear(cfg.hidden, 1))

    def forward(self, frames: dict[str, torch.Tensor], state: torch.Tensor | None = None,
                gen: torch.Generator | None = None) -> torch.Tensor:
        feats = []
        for c in self.cameras:
            x = image_input(resize_frames(frames[c], self.size))
            if gen is not None:
                x = random_shift(x, self.cfg.shift, gen)
            feats.append(self.encoders[c](x))
        if self.state_norm.mean.numel():
            if state is None:
                raise ValueError(f"this classifier also reads {self.state_norm.mean.numel()} "
                                 "state columns; none were given")
            feats.append(self.state_norm(state.float()))
        return self.mlp(torch.cat(feats, dim=1)).squeeze(1)


@dataclasses.dataclass
class RewardClassifier:
    """A trained success classifier with what it was trained on (see module docstring)."""

    net: SuccessNet
    threshold: float
    """Probability at or above which a frame counts as success."""
    state_names: tuple[str, ...]
    """The ``observation.state`` columns it reads, in order (empty: images only)."""
    meta: dict[str, Any]

    @property
    def cameras(self) -> tuple[str, ...]:
        return self.net.cameras

    @torch.no_grad()
    def probability(self, frames: dict[str, torch.Tensor], state: torch.Tensor | None = None
                    ) -> torch.Tensor:
        """(B,) the probability that each frame shows success; ``frames`` maps each of
        ``cameras`` to (B, 3, H, W) uint8 RGB, ``state`` is (B, len(state_names))."""
        missing = [c for c in self.cameras if c not in frames]
        if missing:
            raise ValueError(f"the reward classifier needs cameras {list(self.cameras)}; "
                             f"missing {missing}")
        return torch.sigmoid(self.net.eval()(frames, state))

    def success(self, frames: dict[str, torch.Tensor], state: torch.Tensor | None = None
                ) -> torch.Tensor:
        """(B,) bool: ``probability >= threshold``."""
        return self.probability(frames, state) >= self.threshold


def load_reward_classifier(path: str | Path) -> RewardClassifier:
    """A classifier saved by ``robot-rl reward train``."""
    try:
        state = torch.load(Path(path), map_location="cpu", weights_only=False)
        if not isinstance(state, dict) or state.get("format") != REWARD_CLASSIFIER_FORMAT:
            raise ValueError(f"not a {REWARD_CLASSIFIER_FORMAT} file")
        net = SuccessNet(from_dict(ClassifierNetConfig, state["net"]), tuple(state["cameras"]),
                         int(state["size"]), len(state["state_names"]))
        net.load_state_dict(state["state_dict"])
    except Exception as e:
        raise CheckpointError(f"cannot read reward classifier {path}: {type(e).__name__}: {e}"
                              ) from None
    return RewardClassifier(net.eval(), float(state["threshold"]),
                            tuple(state["state_names"]), state)
