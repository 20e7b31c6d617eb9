"""The configs of learning from pixels: what a pixel policy sees (``PixelInputs``), the
pixel student, SAC from pixels, the success classifier and its training. Plain
dataclasses, importable without torch (``robot-rl train-pixels --help`` reads them)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Any, Literal

import tyro

from robot_rl.algos.configs import SACConfig
from robot_rl.config_io import nest
from robot_rl.errors import ConfigError
from robot_rl.sim.configs import VISUAL_PRESETS, CameraConfig, VisualPreset
from robot_rl.train_config import TrainConfig

MIN_SIZE = 24
"""Smallest image side [px] the encoder's four convolutions (two of stride 2) accept."""


Pool = Literal["flatten", "keypoints"]


@dataclasses.dataclass(kw_only=True)
class PixelInputs:
    """The cameras and observation terms a pixel policy sees."""

    cameras: tuple[str, ...] = ("front", "wrist")
    """Cameras the policy sees."""
    size: int = 48
    """Square image size [px] (48: ~20 ms per 128-image training batch and camera on 2
    CPU cores with the default encoder; 64 costs 2.5x)."""
    depth: bool = False
    """The policy also sees depth."""
    visual: VisualPreset = "default"
    """Visual randomization preset (``sim.visual_dr``: camera pose and field of view, lights,
    colours, pixel and depth noise, and frames as old as a 30 fps camera's)."""
    drop_terms: tuple[str, ...] = ("last_action", "prev_action")
    """Observation terms the policy does not see. The last action predicts the teacher's
    next one so well that a cloned student copies it and ignores the cameras (the copycat
    problem of behaviour cloning with action history)."""

    def validate(self) -> None:
        if self.size < MIN_SIZE:
            raise ConfigError(f"--size must be >= {MIN_SIZE} px, got {self.size}")
        if not self.cameras:
            raise ConfigError("--cameras: give at least one camera")

    def camera_config(self) -> CameraConfig:
        return CameraConfig(names=self.cameras, height=self.size, width=self.size,
                            depth=self.depth, visual=VISUAL_PRESETS[self.visual])


@dataclasses.dataclass(kw_only=True)
class PixelPolicyConfig:
    """The pixel student's networks."""

    features: int = 64
    """Features per camera from its encoder."""
    encoder_width: int = 16
    """Channels of the encoder's convolutions (DrQ uses 32 on a GPU: 2-3x the CPU time)."""
    pool: Pool = "keypoints"
    """How each encoder pools its feature maps: ``keypoints`` (spatial softmax) or
    ``flatten`` (DrQ)."""
    state_hidden: tuple[int, ...] = (256,)
    """Hidden layers of the state head (with state_dim > 0)."""
    act_on: Literal["state", "features"] = "state"
    """What the action MLP reads next to the proprioception: the state estimate or the
    cameras' features (see ``vision.student``; without a state head: features)."""
    hidden: tuple[int, ...] = (256, 256)
    """Hidden layers of the action MLP."""
    activation: Literal["relu", "elu"] = "relu"
    """The action MLP's activation. Cloning push's scripted expert without the last action, a
    state student of this size succeeded in 78% of 32 episodes with ELU and 44% with ReLU
    (same data and steps), so ``distill-pixels``, whose action MLP first learns as such a
    state policy, uses ELU (docs/vision-history.md)."""
    shift: int = 4
    """DrQ random-shift padding [px] while training (0: none)."""

    encoder: Literal["conv", "resnet18"] = "conv"
    """Each camera's encoder: the small conv net trained from scratch, or a ResNet-18 trunk
    (``robot_rl.vision.resnet``: torchvision's weight files load; ~35x the conv net's cost
    on a CPU, for a GPU)."""
    pretrained: Path | None = None
    """With ``encoder resnet18``: a local file of pretrained ResNet-18 weights (a
    torchvision state dict); without it the trunk starts from random weights."""


def saved_policy(data: dict[str, Any]) -> dict[str, Any]:
    """A saved ``PixelPolicyConfig`` as it reads today: students saved before the activation
    was a choice used ReLU."""
    return {"activation": "relu", **data}


@dataclasses.dataclass(kw_only=True)
class ClassifierNetConfig:
    """The classifier's networks."""

    features: int = 64
    """Features per camera from its encoder."""
    encoder_width: int = 16
    """Channels of the encoder's convolutions."""
    pool: Pool = "keypoints"
    """How the encoder pools its feature maps (``robot_rl.vision.encoder``)."""
    hidden: int = 128
    """Hidden width of the MLP over camera features and state."""
    shift: int = 4
    """DrQ random-shift padding [px] while training (0: none)."""


@dataclasses.dataclass(kw_only=True)
class RewardTrainConfig:
    """Train a success classifier on camera frames (HIL-SERL's reward classifier).

    Learns from a dataset's videos and next.success labels and reports precision and recall
    on held-out episodes.

    Example: robot-rl reward train data/lift --cameras front --out runs/reward_lift.pt
    """

    dataset: Annotated[Path, tyro.conf.Positional]
    """Dataset folder with camera videos and next.success labels."""
    cameras: tuple[str, ...] = ()
    """Cameras the classifier sees (default: every camera of the dataset)."""
    size: int = 64
    """Frames are resized to size x size [px]."""
    state_terms: tuple[str, ...] = ()
    """Observation terms (of observation.state) the classifier also reads, e.g. ``goal``
    for push, whose goal no camera shows (default: images only)."""
    net: ClassifierNetConfig = dataclasses.field(default_factory=ClassifierNetConfig)
    holdout: float = 0.2
    """Fraction of the episodes held out for evaluation (at least one)."""
    balance: bool = False
    """Weight success frames by the other-to-success frame ratio (see
    ``vision.reward_training``)."""
    grad_steps: int = 1500
    batch_size: int = 64
    lr: float = 1e-3
    precision: float = 0.95
    """Precision the decision threshold is chosen for on the validation episodes (0: use
    --threshold)."""
    validation: float = 0.2
    """Fraction of the training episodes kept out of the fit to choose the threshold on."""
    threshold: float = 0.5
    """Probability at or above which a frame counts as success (with --precision 0)."""
    seed: int = 0
    out: Path = Path("runs/reward_classifier.pt")
    """Where the classifier is saved."""
    progress: bool = True

    def validate(self) -> None:
        if not 0.0 < self.holdout < 1.0:
            raise ConfigError(f"--holdout must be in (0, 1), got {self.holdout}")
        if not 0.0 < self.threshold < 1.0:
            raise ConfigError(f"--threshold must be in (0, 1), got {self.threshold}")
        if not 0.0 <= self.precision < 1.0 or not 0.0 < self.validation < 1.0:
            raise ConfigError("--precision must be in [0, 1) and --validation in (0, 1)")
        if self.size < MIN_SIZE:
            raise ConfigError(f"--size must be >= {MIN_SIZE} px, got {self.size}")
        if min(self.grad_steps, self.batch_size) < 1:
            raise ConfigError("--grad-steps and --batch-size must be >= 1")


@dataclasses.dataclass(kw_only=True)
class RewardEvalConfig:
    """Evaluate a success classifier on a dataset's labelled frames.

    Precision, recall, accuracy, and per episode whether it saw the success the labels say
    happened.

    Example: robot-rl reward eval runs/reward_lift.pt data/lift_test
    """

    classifier: Annotated[Path, tyro.conf.Positional]
    """A classifier saved by ``robot-rl reward train``."""
    dataset: Annotated[Path, tyro.conf.Positional]
    """Dataset folder with camera videos and next.success labels."""
    episodes: tuple[int, ...] = ()
    """Episode indices to evaluate on (default: all)."""
    threshold: float | None = None
    """Decision threshold (default: the classifier's own)."""


def _pixel_sac() -> SACConfig:
    return SACConfig(batch_size=128, buffer_size=50_000, learning_starts=2_000)


@dataclasses.dataclass(kw_only=True)
class PixelTrainConfig(TrainConfig):
    """Train a policy that sees camera images and proprioception with asymmetric SAC: the
    critics and the safety critic read the simulator's state.

    Example: robot-rl train-pixels --student runs/pixel_student.pt --time-budget 1800
    """

    gym: tyro.conf.Suppress[str | None] = None
    """Not here: --gym trains robot-rl train runs."""

    task: str = "push"
    """Task (with --student: the student's)."""
    algo: Literal["pixel_sac"] = "pixel_sac"  # type: ignore[assignment]
    """Learning algorithm (names the run)."""
    student: Path | None = None
    """A pixel student file (robot-rl distill-pixels) to start the actor from; its
    cameras, size, depth, visual preset, dropped terms and networks replace the flags'."""
    inputs: Annotated[PixelInputs, tyro.conf.arg(name="")] = dataclasses.field(
        default_factory=PixelInputs)
    """What the actor sees (flags without a prefix: ``--cameras``, ``--size``, ...; as
    distill-pixels')."""
    policy: PixelPolicyConfig = dataclasses.field(default_factory=PixelPolicyConfig)
    """The actor's networks and augmentation (the DrQ shift is ``policy.shift``)."""
    state_weight: float = 1.0
    """Weight of the auxiliary loss of the actor's state head (the terms the cameras stand
    in for, regressed on the critic group's values); 0: no state head."""
    rl_trains_perception: bool = False
    """Where the action MLP reads the state estimate: SAC's actor loss also trains the
    encoders and state head through it (default: they learn from the state loss alone)."""
    anchor_weight: float | None = None
    """Weight of the pull of the actor's actions toward the initial action MLP's (TD3+BC's
    regularizer, scaled by the critics' mean |Q|; robot_rl.vision.pixel_sac). Default: 0.4
    (TD3+BC's 2.5) with --student, 0 without."""
    init_log_std: float = -1.5
    """The actor's initial log std (state-independent at first)."""
    critic_warmup: int = 2_000
    """With --student: gradient updates of the critics alone before the actor learns."""
    sac: SACConfig = dataclasses.field(default_factory=_pixel_sac)

    def validate(self) -> None:
        super().validate()
        self.inputs.validate()
        if self.state_weight < 0 or self.critic_warmup < 0 or (self.anchor_weight or 0) < 0:
            raise ConfigError("--state-weight, --critic-warmup and --anchor-weight must be "
                              ">= 0")

    @classmethod
    def from_saved(cls, data: dict[str, Any]) -> PixelTrainConfig:
        """As ``TrainConfig.from_saved``; runs saved before ``inputs`` was its own config
        had its fields flat."""
        return super().from_saved(nest(data, "inputs", PixelInputs))
