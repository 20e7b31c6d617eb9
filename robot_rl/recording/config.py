"""The config of ``robot-rl record`` (``RecordConfig``), importable without MuJoCo or torch
(``--help`` reads it); ``recording.record`` records with it."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Literal

from robot_rl.data.format import DEFAULT_KEYFRAME_INTERVAL, camera_size_problem
from robot_rl.errors import ConfigError
from robot_rl.recording.pacing import Pacing, SuccessEnds
from robot_rl.sim.configs import DRPreset, ExpertStyle
from robot_rl.sim.tasks import make_task_config
from robot_rl.sim.tasks.config import decimation_for

TeleopKind = Literal["keyboard", "spacemouse", "gamepad", "expert"]


ActionName = Literal["task", "joint-delta", "ee-delta", "ee-position"]


@dataclasses.dataclass(kw_only=True)
class RecordConfig:
    """Record teleoperated (or scripted-expert) demonstrations in simulation into a dataset.

    Example: robot-rl record --task push --teleop keyboard --episodes 20 --out data/push
    """

    task: str = "push"
    """Task name (robot-rl sim info lists them)."""
    robot: str | None = None
    """The arm (robot-rl sim info lists them; default: the task's own, arm7)."""
    teleop: TeleopKind = "keyboard"
    """Who acts: a device (keyboard in this terminal, spacemouse, gamepad) or the task's
    scripted expert (no person needed)."""
    episodes: int = 20
    """Committed episodes to have in the dataset when done (counting earlier ones on
    --resume)."""
    out: Path = Path("data/demos")
    """Dataset folder."""
    resume: bool = False
    """Append to the dataset in --out (it must be for the same task, robot and actions)."""
    seed: int = 0
    """Base seed of the episodes' initial states."""
    cameras: tuple[str, ...] = ()
    """Scene cameras to record as mp4 (e.g. corner); none by default."""
    camera_size: tuple[int, int] = (240, 320)
    """Height and width of recorded camera frames (even numbers: H.264 in yuv420p)."""
    render_mode: Literal["policy", "video"] = "policy"
    """How the cameras are drawn: policy (no shadows, reflections or multisampling: ~10x
    faster, and what pixel policies see in simulation) or video (MuJoCo's default look)."""
    keyframe_interval: int = DEFAULT_KEYFRAME_INTERVAL
    """Frames between the camera videos' keyframes. A frame read at random (learning from
    video) costs decoding up to this many frames; shorter is faster to read and larger on
    disk (benchmarks/dataset_access.py measures both). LeRobot records with 2."""
    realtime: bool | None = None
    """Pace the loop at the control rate (default: yes for a person, no for the expert)."""
    policy: Path | None = None
    """A policy artifact (robot-rl export) that acts while the device is still; moving the
    device takes over (a human intervention, flagged in the dataset, HIL-SERL style)."""
    expert_style: ExpertStyle = "scripted"
    """How the expert drives: scripted (the task's, unimodal and noiseless), multimodal (one
    of several ways drawn per episode: push round either side of the puck, lift across
    either pair of faces), human (slower, jittery, pauses, detours) or multimodal-human."""
    expert_noise: float = 0.0
    """Gaussian noise (std, in action units) on the expert's actions, for varied demos."""
    success_only: bool = False
    """Keep only successful episodes (the expert's failures are recorded again)."""
    dr: DRPreset = "off"
    """Domain randomization of the recording env."""
    action: ActionName = "task"
    """The action space the demonstrations are recorded in: the task's own, joint-delta,
    ee-delta (end-effector position and rotation offsets) or ee-position (position offsets;
    the hand keeps its home orientation). Learners from the dataset act in it."""
    target_box: bool = False
    """With --action ee-delta or ee-position: clip every end-effector target into the task's
    box (the hand stays above the table where the task's work is), as SERL's robot envs
    do; learners from the dataset act with it."""
    motion: bool | None = None
    """Record with the motion profile of joint targets on (``--env.motion.enabled`` of the
    learners; None: the task's own setting). Learners from the dataset act with it."""
    ramp: bool = False
    """Ramp each control step's joint command over the step (``--env.motion.ramp`` of the
    learners; joint targets). Learners from the dataset act with it."""
    episode_length: int | None = None
    """Override the task's episode length (control steps). With a person driving, the
    episode's step limit instead of --episode-time."""
    control_hz: float | None = None
    """The control rate to record at [Hz] (None: the task's own, 50 Hz for the built-in
    tasks); the physics rate over it must be a whole number. Learners from the dataset act
    at it. --episode-length counts steps at this rate."""
    episode_time: float = 60.0
    """With a person driving: the longest episode [s] (Enter or success end it sooner)."""
    success_ends: SuccessEnds = "auto"
    """With a person driving, when the task's success test holds: auto: the episode ends and
    is saved; confirm: the status line says so and Enter saves it (the person may go on)."""
    keep_failures: bool = False
    """With a person driving: also save the episodes that end without success by the time
    limit or the task's termination (otherwise only those the person labels y/n)."""
    progress: bool = True
    """Show the live status line."""
    view: bool = False
    """Show the env in MuJoCo's viewer while recording, with the shield's workspace box
    (needs a display: a desktop or xvfb-run)."""

    def validate(self) -> None:
        if self.episodes < 1:
            raise ConfigError(f"--episodes must be >= 1, got {self.episodes}")
        if self.expert_noise < 0:
            raise ConfigError("--expert-noise must be >= 0")
        if self.control_hz is not None:
            try:
                decimation_for(self.control_hz, make_task_config(self.task).physics_dt)
            except ConfigError as e:
                raise ConfigError(f"--control-hz: {e}") from None
        if (why := camera_size_problem(*self.camera_size)) is not None:
            raise ConfigError(f"--camera-size {why}")
        if self.keyframe_interval < 1:
            raise ConfigError(f"--keyframe-interval must be >= 1, got {self.keyframe_interval}")
        self.pacing()  # checks --episode-time and --success-ends

    def pacing(self) -> Pacing:
        """How a person's episodes end."""
        return Pacing(self.episode_time, self.success_ends, self.keep_failures)
