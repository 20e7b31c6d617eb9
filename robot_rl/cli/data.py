"""``robot-rl record`` and ``robot-rl data info | validate | replay | import``."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Annotated

import tyro
from rich.console import Console
from rich.table import Table

from robot_rl.recording.record import RecordConfig, record


def record_cmd(cfg: RecordConfig) -> None:
    record(cfg)



@dataclasses.dataclass(kw_only=True)
class DataInfoConfig:
    """Summarise a dataset: task, robot, action space, episodes, frames, success, cameras.

    Example: robot-rl data info data/push
    """

    path: Annotated[Path, tyro.conf.Positional]
    """Dataset folder."""


@dataclasses.dataclass(kw_only=True)
class DataValidateConfig:
    """Check every file of a dataset against its metadata (exit status 1 on a problem).

    Example: robot-rl data validate data/push
    """

    path: Annotated[Path, tyro.conf.Positional]
    """Dataset folder."""
    videos: bool = True
    """Decode every video and count its frames (slower)."""


@dataclasses.dataclass(kw_only=True)
class DataReplayConfig:
    """Replay recorded episodes' actions in simulation from their recorded initial states and
    report how far the replayed joint states stray from the recorded ones.

    Example: robot-rl data replay data/push --episodes 0 1 --video replay.mp4
    """

    path: Annotated[Path, tyro.conf.Positional]
    """Dataset folder."""
    episodes: tuple[int, ...] = ()
    """Episode indices (default: all)."""
    video: Path | None = None
    """Film the first replayed episode into this mp4."""
    camera: str = "corner"
    """Scene camera of the video."""


@dataclasses.dataclass(kw_only=True)
class DataImportConfig:
    """Import rosbag2 / MCAP recordings of a real arm (/joint_states and position commands),
    one episode per bag, in the task's action space.

    Example: robot-rl data import run1/ run2/ --task reach --goal 0.5 -0.15 0.3 --out data/real
    """

    bags: Annotated[tuple[Path, ...], tyro.conf.Positional]
    """Bag folders (or .mcap / .db3 files)."""
    out: Path
    """Dataset folder."""
    task: str = "reach"
    """Task whose observation, reward, cost and action space label the steps."""
    goal: tuple[float, float, float] | None = None
    """The task's goal point during the recording (world frame, metres)."""
    joint_states: str = "/joint_states"
    commands: str = "/forward_position_controller/commands"
    """std_msgs/Float64MultiArray of joint position targets."""
    resume: bool = False
    """Append to the dataset in --out."""


def import_cmd(cfg: DataImportConfig) -> None:
    from robot_rl.data import Dataset
    from robot_rl.recording.rosbag_import import import_bags

    n = import_bags(cfg.bags, cfg.out, cfg.task, cfg.goal, cfg.joint_states, cfg.commands,
                    cfg.resume)
    ds = Dataset(cfg.out)
    Console().print(f"imported {n} bag(s): {cfg.out} has {ds.num_episodes} episodes, "
                    f"{ds.num_frames} frames")


def info_cmd(cfg: DataInfoConfig) -> None:
    from robot_rl.data import Dataset

    ds = Dataset(cfg.path)
    spec, eps = ds.spec, ds.episodes
    console = Console()
    t = Table(title=str(cfg.path), show_header=False, box=None)
    size = sum(p.stat().st_size for p in cfg.path.rglob("*") if p.is_file())
    success = sum(bool(r.get("robot_rl/success")) for r in eps)
    interventions = sum(int(r.get("robot_rl/interventions", 0)) for r in eps)
    sources = sorted({str(r.get("robot_rl/source", "")) for r in eps} - {""})
    rows = [
        ("format", f"LeRobotDataset {ds.info['codebase_version']}"),
        ("task", f"{spec.task} ({spec.task_text})"), ("robot", spec.robot_type),
        ("action space", ", ".join(f"{k}={v}" for k, v in spec.action_space.items())),
        ("observation", f"{len(spec.obs_names)} values"),
        ("rate", f"{spec.fps:g} Hz"),
        ("episodes", f"{ds.num_episodes} ({success} successful)"),
        ("frames", f"{ds.num_frames} ({ds.num_frames / spec.fps:.0f} s)"),
        ("interventions", str(interventions)),
        ("sources", ", ".join(sources) or "-"),
        ("cameras", ", ".join(f"{c} {w}x{h}" for c, h, w in spec.cameras) +
         f" (a keyframe every {ds.keyframe_interval(spec.cameras[0][0])} frames)"
         if spec.cameras else "none"),
        ("size", f"{size / 2 ** 20:.1f} MB"),
    ]
    leftovers = ds.uncommitted()
    if leftovers:
        rows.append(("uncommitted", f"{len(leftovers)} file(s) of an interrupted episode "
                                    f"(ignored; --resume removes them)"))
    for k, v in rows:
        t.add_row(f"[bold]{k}", v)
    console.print(t)


def validate_cmd(cfg: DataValidateConfig) -> None:
    from robot_rl.data import Dataset

    ds = Dataset(cfg.path)
    problems = ds.validate(decode_videos=cfg.videos)
    console = Console()
    if problems:
        for p in problems:
            console.print(f"[red]problem:[/red] {p}", highlight=False)
        console.print(f"{cfg.path}: {len(problems)} problem(s)")
        sys.exit(1)
    console.print(f"{cfg.path}: valid ({ds.num_episodes} episodes, {ds.num_frames} frames)")


def replay_cmd(cfg: DataReplayConfig) -> None:
    from robot_rl.data import Dataset
    from robot_rl.recording.sim_replay import replay_episode

    ds = Dataset(cfg.path)
    which = list(cfg.episodes) or [int(r["episode_index"]) for r in ds.episodes]
    t = Table(title=f"replay of {cfg.path}")
    for col in ("episode", "frames", "max joint error [rad]", "max obs error",
                "success (replayed / recorded)"):
        t.add_column(col)
    for k, i in enumerate(which):
        r = replay_episode(ds, i, cfg.video if k == 0 else None, cfg.camera)
        t.add_row(str(i), str(r.frames), f"{r.max_joint_error:.2e}", f"{r.max_obs_error:.2e}",
                  f"{r.success} / {r.recorded_success}")
    Console().print(t)
