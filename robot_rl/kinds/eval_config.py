"""The config of ``robot-rl eval`` (``EvalConfig``), importable without torch (``--help``
reads it); ``kinds.evaluation`` runs it."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated

import tyro

from robot_rl.sim.configs import DRPreset
from robot_rl.video import VIDEO_SIZE


@dataclasses.dataclass(kw_only=True)
class EvalConfig:
    """Evaluate a run, checkpoint, student or exported artifact: success, cost, shield.

    Example: robot-rl eval runs/reach__sac__0__20261121-101500 --episodes 50 --video eval.mp4
    """

    path: Annotated[Path, tyro.conf.Positional]
    """Run directory (robot-rl train, finetune or bc), checkpoint file (.pt), or exported
    artifact folder (with policy.json)."""
    episodes: int = 32
    """Episodes to run."""
    num_envs: int = 16
    """Parallel envs."""
    dr: DRPreset | None = None
    """Domain randomization preset (default: as trained)."""
    student: bool = False
    """Evaluate the run's distilled student instead of its policy: student.pt of a train
    or finetune run, onestep.pt of a bc, dsrl or residual run (``robot-rl distill``)."""
    gate: bool | None = None
    """Use the safety-critic gate (default: as trained; artifacts: when they have a critic)."""
    video: Path | None = None
    """Write an mp4 of the evaluation here (25 frames a second at most: at 50 Hz every second
    control step)."""
    video_envs: tuple[int, ...] = (0,)
    """Env indices shown side by side in the video."""
    camera: str = "corner"
    """Scene camera of the video."""
    width: int = VIDEO_SIZE[0]
    """Video width per env [px]."""
    height: int = VIDEO_SIZE[1]
    """Video height [px]."""
    seed: int = 100
    """Seed of the evaluation episodes."""
    min_success: float | None = None
    """Exit with status 1 when the success rate is below this (a check for scripts and CI;
    make demo checks its artifact with 0.95)."""
    view: bool = False
    """Watch env 0 in MuJoCo's viewer (with the shield's workspace box), the episodes paced
    at the control rate (needs a display: a desktop or xvfb-run)."""
    rerun: Path | None = None
    """Log env 0's episodes into this Rerun .rrd file (open it: rerun FILE): joint states,
    commanded and applied actions, reward and cost terms, success, and each shield layer's
    interventions, step by step."""
