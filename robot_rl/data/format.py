"""The on-disk layout: LeRobotDataset v3.0, one committed episode per file, plus our columns.

    root/
      meta/info.json                      codebase_version "v3.0", fps, features, counts, paths;
                                          "robot_rl": task, action space, observation layout
      meta/stats.json                     per feature: min, max, mean, std, count, q01-q99
      meta/tasks.parquet                  task_index -> task text
      meta/episodes/chunk-000/file-007.parquet   episode 7's row (offsets, length, stats, ours)
      data/chunk-000/file-007.parquet     episode 7's frames
      videos/observation.images.front/chunk-000/file-007.mp4
      .incomplete/                        the episode being recorded (never read)

LeRobot v3 packs many episodes into each file and points at them from the episode rows; one
episode per file is the same format with a file index per episode, and it is what makes an
episode commit atomic. A file's number is the episode's index in datasets we wrote; appending
to one another tool laid out (LeRobot's edit tools keep their source's file numbers), a new
episode takes the next number no file has (``used_file_numbers``). A save writes, in order:
the frames, the videos, the episode row, stats.json, and info.json counting the episode, the
commit point. A reader (ours, and LeRobot's, which takes its counts from info.json) sees the
episodes info.json counts, so a kill at any step of a save leaves a valid dataset holding the
episodes before it: the files of the episode being saved are unreferenced extras (its file
number is above every counted episode's, so LeRobot's index over the data files is
unchanged), which ``--resume`` removes along with ``.incomplete``. A kill just before
info.json leaves stats.json counting the episode too: the statistics of a superset, harmless.

Frame columns (one row per control step; vectors are fixed-size float32 lists):

    observation.state       (O,)  the policy observation (the task's terms, ``names``)
    observation.joint_pos   (n,)  measured joint positions
    observation.joint_vel   (n,)  measured joint velocities
    action                  (A,)  the action commanded (by the policy, the person or the
                                  expert), in [-1, 1] (the task's action space): what BC
                                  and RL learn from (see docs/data.md). Its feature entry
                                  in info.json also holds the task and the action space
                                  (``ACTION_MEANING``), which LeRobot's edit tools keep
    action.applied          (A,)  the action the robot executed: ``action`` after the
                                  shield's action layers (NaN guard, bounds, rate limit),
                                  and in simulation the action delay
    next.observation.state  (O,)  the observation after the step (the true final one at the
                                  end of an episode, so time-outs bootstrap)
    next.reward, next.cost        float32
    next.done, next.terminated, next.success, intervention    bool
    timestamp float32, frame_index, episode_index, index, task_index   int64
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

from robot_rl.errors import RobotRLError
from robot_rl.fileio import atomic_write

CODEBASE_VERSION = "v3.0"
CHUNKS_SIZE = 1000
DATA_PATH = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
VIDEO_PATH = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
EPISODES_PATH = "meta/episodes/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
INCOMPLETE = ".incomplete"
IMAGE_PREFIX = "observation.images."

SCALARS = {"next.reward": "float32", "next.cost": "float32", "next.done": "bool",
           "next.terminated": "bool", "next.success": "bool", "intervention": "bool"}
"""Per-frame scalar columns of ours, next to LeRobot's own (reward and done as LeRobot names
them; cost, termination, success and intervention for safe RL and HIL-SERL)."""
INDICES = ("frame_index", "episode_index", "index", "task_index")
ACTION_MEANING = "robot_rl"
"""Key, in the ``action`` feature of info.json, of the task and action space
(``DatasetSpec.action_meaning``)."""
DEFAULT_KEYFRAME_INTERVAL = 10
"""Frames between keyframes of recorded videos (benchmarks/dataset_access.py: see
docs/data.md for the read time and size of each choice)."""


class DatasetError(RobotRLError):
    """A dataset is missing, corrupt, unwritable, or does not match what it is used for."""


@dataclasses.dataclass(frozen=True)
class DatasetSpec:
    """What a dataset holds; written into info.json and checked when it is extended or used."""

    fps: float
    """Control rate of the recorded steps [Hz]."""
    robot_type: str
    """Robot name (RobotSpec)."""
    task: str
    """Task name in our registry (the env that replays the actions)."""
    task_text: str
    """The task in words (LeRobot's task string)."""
    obs_names: tuple[str, ...]
    """One name per observation element ("ee_pos.0", ...)."""
    action_names: tuple[str, ...]
    """One name per action element."""
    joint_names: tuple[str, ...]
    action_space: dict[str, Any]
    """The action space config (type and scales): an action means nothing without it."""
    cameras: tuple[tuple[str, int, int], ...] = ()
    """(name, height, width) of each camera recorded as video."""
    env: dict[str, Any] = dataclasses.field(default_factory=dict)
    """How the simulated env was made (dr, episode_length), for replay; empty for data from
    hardware."""
    applied_action: bool = True
    """The frames hold ``action.applied`` (the action after the shield) next to ``action``
    (the command); False for datasets recorded before it was."""
    keyframe_interval: int | None = None
    """Frames between the videos' keyframes (None: the encoder's default, 250). A random
    frame costs decoding up to this many; see ``DEFAULT_KEYFRAME_INTERVAL``."""

    def __post_init__(self) -> None:
        for cam, h, w in self.cameras:
            if (why := camera_size_problem(h, w)) is not None:
                raise DatasetError(f"camera {cam!r}: {why}")

    @property
    def lerobot_fps(self) -> int | float:
        """The rate as LeRobot writes it (an int); a rate that is not a whole number of
        Hz stays a float (``Dataset.validate`` reports it: LeRobot cannot express it)."""
        return round(self.fps) if abs(self.fps - round(self.fps)) < 1e-6 else self.fps

    def features(self) -> dict[str, dict[str, Any]]:
        """LeRobot's ``features`` block of info.json."""
        def vec(names: tuple[str, ...]) -> dict[str, Any]:
            return {"dtype": "float32", "shape": [len(names)], "names": list(names)}

        out: dict[str, dict[str, Any]] = {
            "observation.state": vec(self.obs_names),
            "observation.joint_pos": vec(self.joint_names),
            "observation.joint_vel": vec(self.joint_names),
            "action": {**vec(self.action_names), ACTION_MEANING: self.action_meaning()},
            "next.observation.state": vec(self.obs_names),
        }
        if self.applied_action:
            out["action.applied"] = vec(self.action_names)
        for name, dtype in SCALARS.items():
            out[name] = {"dtype": dtype, "shape": [1], "names": None}
        out["timestamp"] = {"dtype": "float32", "shape": [1], "names": None}
        for name in INDICES:
            out[name] = {"dtype": "int64", "shape": [1], "names": None}
        for cam, h, w in self.cameras:
            out[IMAGE_PREFIX + cam] = {
                "dtype": "video", "shape": [h, w, 3], "names": ["height", "width", "channels"],
                "info": {"video.height": h, "video.width": w, "video.codec": "h264",
                         "video.pix_fmt": "yuv420p", "video.is_depth_map": False,
                         "video.fps": self.lerobot_fps, "video.channels": 3, "has_audio": False,
                         "video.g": self.keyframe_interval}}
        return out

    def action_meaning(self) -> dict[str, Any]:
        """What an action means (the task and its action space), also kept in the
        ``action`` feature's entry: LeRobot's edit tools rewrite info.json without our
        block but copy the feature entries, so an edited dataset still says it."""
        return {"task": self.task, "action_space": dict(self.action_space)}

    def to_json(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["cameras"] = [list(c) for c in self.cameras]
        return d

    @staticmethod
    def from_json(d: dict[str, Any]) -> DatasetSpec:
        try:
            return DatasetSpec(
                fps=float(d["fps"]), robot_type=str(d["robot_type"]), task=str(d["task"]),
                task_text=str(d["task_text"]), obs_names=tuple(d["obs_names"]),
                action_names=tuple(d["action_names"]), joint_names=tuple(d["joint_names"]),
                action_space=dict(d["action_space"]),
                cameras=tuple((str(c[0]), int(c[1]), int(c[2])) for c in d.get("cameras", [])),
                env=dict(d.get("env") or {}),
                applied_action=bool(d.get("applied_action", False)),
                keyframe_interval=None if d.get("keyframe_interval") is None else
                int(d["keyframe_interval"]))
        except (KeyError, TypeError, ValueError, IndexError) as e:
            raise DatasetError(f"info.json's robot_rl block is malformed: {e!r}") from None

    def mismatch(self, other: DatasetSpec) -> str | None:
        """The first field in which ``other`` differs from this one, described; None if equal.
        Cameras, the env's making, the videos' keyframe interval and whether the applied
        action is recorded may differ (a state-only learner ignores them)."""
        for f in dataclasses.fields(self):
            if f.name in ("cameras", "env", "keyframe_interval", "applied_action"):
                continue
            a, b = getattr(self, f.name), getattr(other, f.name)
            if a == b:
                continue
            if isinstance(a, tuple) and isinstance(b, tuple):  # where two name lists part
                i = next(i for i, (x, y) in enumerate(zip((*a, None), (*b, None), strict=False))
                         if x != y)
                return (f"{f.name}: the dataset has {len(a)}, this run {len(b)}; from element "
                        f"{i} on the dataset has {_short(a[i:])}, this run {_short(b[i:])}")
            return f"{f.name}: the dataset has {_short(a)}, this run has {_short(b)}"
        return None


def camera_size_problem(height: int, width: int) -> str | None:
    """Why a camera of this size cannot be recorded as given; None if it can."""
    if height <= 0 or width <= 0 or height % 2 or width % 2:
        return (f"{height}x{width}: the videos are H.264 in yuv420p, which needs even sizes "
                f"(e.g. {height + height % 2}x{width + width % 2})")
    return None


def _short(x: Any) -> str:
    s = repr(x)
    return s if len(s) <= 160 else s[:157] + "..."


def chunk_file(number: int) -> tuple[int, int]:
    """(chunk_index, file_index) of file number ``number`` (chunk * CHUNKS_SIZE + file). Our
    writer gives each episode its own number: its episode index in the datasets it wrote,
    the next number free in datasets another tool laid out (``used_file_numbers``)."""
    return divmod(number, CHUNKS_SIZE)


def data_path(number: int) -> str:
    c, f = chunk_file(number)
    return DATA_PATH.format(chunk_index=c, file_index=f)


def video_path(number: int, camera: str) -> str:
    c, f = chunk_file(number)
    return VIDEO_PATH.format(video_key=IMAGE_PREFIX + camera, chunk_index=c, file_index=f)


def episode_path(number: int) -> str:
    c, f = chunk_file(number)
    return EPISODES_PATH.format(chunk_index=c, file_index=f)


def used_file_numbers(root: Path) -> set[int]:
    """The file numbers of every data, video and episode-row file under ``root``: LeRobot's
    writer packs many episodes per file and its edit tools keep the source's file numbers
    (deleting episode 1 of 0..3 leaves files 0, 2 and 3 holding episodes 0, 1 and 2), so a
    file number is not an episode index there."""
    used = set()
    for pattern in ("data/chunk-*/file-*.parquet", "videos/*/chunk-*/file-*.mp4",
                    "meta/episodes/chunk-*/file-*.parquet"):
        for p in root.glob(pattern):
            try:
                chunk = int(p.parent.name.removeprefix("chunk-"))
                used.add(chunk * CHUNKS_SIZE + int(p.stem.removeprefix("file-")))
            except ValueError:
                continue
    return used


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so a reader sees the old file or the new one, never half."""
    atomic_write(path, lambda f: f.write(data))


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_bytes(path, (json.dumps(obj, indent=2) + "\n").encode())


def commit_file(src: Path, dst: Path) -> None:
    """Move a finished file from ``.incomplete`` into place (same file system: atomic)."""
    with open(src, "rb") as f:
        os.fsync(f.fileno())
    dst.parent.mkdir(parents=True, exist_ok=True)
    os.replace(src, dst)
