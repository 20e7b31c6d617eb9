"""``robot-rl record`` and ``robot-rl data info | validate | replay | import``."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import tyro
from rich.console import Console
from rich.table import Table

from robot_rl.errors import ConfigError
from robot_rl.recording.config import RecordConfig
from robot_rl.sim.configs import GRPC_PORT, WEB_PORT
from robot_rl.work_progress import WorkProgress

if TYPE_CHECKING:
    from robot_rl.data import Dataset


def record_cmd(cfg: RecordConfig) -> None:
    from robot_rl.recording.record import record

    record(cfg)


@dataclasses.dataclass(kw_only=True)
class DataInfoConfig:
    """Summarise a dataset: task, robot, action space, episodes, frames, success, cameras.

    Example: robot-rl data info data/push
    """

    path: Annotated[Path, tyro.conf.Positional]
    """Dataset folder."""


@dataclasses.dataclass(kw_only=True)
class DataViewConfig:
    """Look at a dataset in Rerun: each frame's joint states, commanded and applied actions,
    reward, cost, success, interventions and camera frames, on a frame and a time timeline.

    Examples:
      robot-rl data view data/push --out push.rrd        (open it later: rerun push.rrd)
      robot-rl data view data/push --episodes 0 3        (Rerun's viewer; over SSH, its web
                                                          viewer at http://localhost:9090)
    """

    path: Annotated[Path, tyro.conf.Positional]
    """Dataset folder."""
    episodes: tuple[int, ...] | None = None
    """Episodes to log (default: all)."""
    out: Path | None = None
    """Save the recording as an .rrd file here instead of showing it."""
    cameras: bool = True
    """Log the camera frames (decoding the videos takes most of the time)."""
    replay: bool | None = None
    """Replay each episode in simulation for what the dataset does not store: the reward and
    cost terms and each shield layer's interventions (default: for datasets recorded in
    simulation)."""
    web_port: int = WEB_PORT
    """Without a display: the port of Rerun's web viewer."""
    grpc_port: int = GRPC_PORT
    """Without a display: the port the web viewer reads the recording from."""


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
    """Import a real arm's logs onto one of our tasks, one episode per bag and per LeRobot
    episode: rosbag2 / MCAP recordings (/joint_states and position commands) and
    LeRobotDataset v3.0 folders (joint positions in the state, position targets in the
    action, matched to the task robot's joints by name). Observations, reward, cost and
    success are the task's own terms, the actions its action space.

    Examples:
      robot-rl data import run1/ run2/ --task reach --goal 0.5 -0.15 0.3 --out data/real
      robot-rl data import ~/lerobot/my_arm --task reach --goal 0.5 -0.15 0.3 --out data/my_arm
      robot-rl data import ~/lerobot/so101 --task reach --robot so5 --angle-unit normalized \
          --goal 0.22 0.05 0.12 --out data/so101
    """

    sources: Annotated[tuple[Path, ...], tyro.conf.Positional]
    """Bag folders (or .mcap / .db3 files) and LeRobot dataset folders (meta/info.json)."""
    out: Path
    """Dataset folder."""
    task: str = "reach"
    """Task whose observation, reward, cost and action space label the steps."""
    goal: tuple[float, float, float] | None = None
    """The task's goal point during the recording (world frame, metres)."""
    joint_states: str = "/joint_states"
    """Bags: the sensor_msgs/JointState topic."""
    commands: str = "/forward_position_controller/commands"
    """Bags: std_msgs/Float64MultiArray of joint position targets."""
    joint_names: tuple[str, ...] = ()
    """Bags: the joints as the driver names them in the JointStates, one per arm joint in
    the arm's order (a profile's joint_names, e.g. fr3_joint1 ...; default: the arm's own)."""
    state_key: str = "observation.state"
    """LeRobot datasets: the feature holding joint positions (names j or j.pos; j.vel
    velocities where present)."""
    action_key: str = "action"
    """LeRobot datasets: the feature holding joint position targets."""
    robot: str | None = None
    """The arm that was logged (robot-rl sim info lists them; default: the task's own,
    arm7); so5 takes LeRobot's SO-101 joint names as they are."""
    angle_unit: Literal["rad", "deg", "normalized"] = "rad"
    """The unit of joint angles in the sources: rad, deg (LeRobot's use_degrees) or
    normalized (-100 .. 100 across each joint's range: LeRobot's default for SO-101; in a
    bag, a profile's position_unit)."""
    resume: bool = False
    """Append to the dataset in --out."""


def import_cmd(cfg: DataImportConfig) -> None:
    from robot_rl.data import Dataset
    from robot_rl.recording.lerobot_import import import_lerobot, is_dataset
    from robot_rl.recording.rosbag_import import import_bags

    if not cfg.sources:
        raise ConfigError("name at least one bag or LeRobot dataset to import")
    datasets = [p for p in cfg.sources if is_dataset(p)]
    bags = [p for p in cfg.sources if not is_dataset(p)]
    n, resume = 0, cfg.resume
    if bags:
        n += import_bags(bags, cfg.out, cfg.task, cfg.goal, cfg.joint_states, cfg.commands,
                         resume, cfg.robot, cfg.joint_names, cfg.angle_unit)
        resume = True
    if datasets:
        n += import_lerobot(datasets, cfg.out, cfg.task, cfg.goal, cfg.state_key,
                            cfg.action_key, cfg.angle_unit, resume, cfg.robot)
    ds = Dataset(cfg.out)
    Console().print(f"imported {n} episode(s) from {len(bags)} bag(s) and {len(datasets)} "
                    f"dataset(s): {cfg.out} has {ds.num_episodes} episodes, "
                    f"{ds.num_frames} frames")


def view_cmd(cfg: DataViewConfig) -> None:
    from robot_rl.data import Dataset
    from robot_rl.data.rerun_log import log_dataset, rerun_recording, show

    console = Console()
    ds = Dataset(cfg.path)
    rec = rerun_recording(f"robot-rl data view {cfg.path.name}")
    if cfg.out is not None:
        rec.save(str(cfg.out))
    else:
        show(rec, cfg.web_port, cfg.grpc_port, console.print)
    replay = cfg.replay if cfg.replay is not None else bool(
        ds.spec is not None and ds.spec.env and
        all(int(r.get("robot_rl/seed", -1)) >= 0 for r in ds.episodes))
    extra = None
    if replay:
        from functools import partial

        from robot_rl.recording.sim_replay import replayed_terms

        extra = partial(replayed_terms, ds)
    n = log_dataset(rec, ds, None if cfg.episodes is None else list(cfg.episodes),
                    cameras=cfg.cameras, extra=extra,
                    progress=lambda k, total: console.print(f"  episode {k}/{total} logged",
                                                            highlight=False))
    rec.flush()
    if cfg.out is not None:
        rec.disconnect()  # finalizes the file (its footer)
        console.print(f"{n} frames of {cfg.path} in {cfg.out} (open it: rerun {cfg.out})"
                      + ("; reward and cost terms and shield flags from a replay in "
                         "simulation" if replay else ""), markup=False)
        return
    console.print(f"{n} frames logged; Ctrl-C ends", markup=False)
    import time

    try:
        while True:
            time.sleep(1.0)
    except KeyboardInterrupt:
        pass


def info_cmd(cfg: DataInfoConfig) -> None:
    from robot_rl.data import Dataset

    ds = Dataset(cfg.path)
    spec, eps = ds.spec, ds.episodes
    console = Console()
    t = Table(title=str(cfg.path), show_header=False, box=None)
    size = sum(p.stat().st_size for p in cfg.path.rglob("*") if p.is_file())
    success, interventions = _outcomes(ds)
    sources = sorted({str(r.get("robot_rl/source", "")) for r in eps} - {""})
    rows = [("format", f"LeRobotDataset {ds.info['codebase_version']}")]
    if spec is not None:
        rows += [
            ("task", f"{spec.task} ({spec.task_text})"), ("robot", spec.robot_type),
            ("action space", ", ".join(f"{k}={v}" for k, v in spec.action_space.items())),
            ("observation", f"{len(spec.obs_names)} values")]
    else:
        vectors = [f"{k} ({f['shape'][0]})" for k, f in ds.features.items()
                   if f.get("dtype") not in ("video", "image") and f.get("shape") not in (
                       [1], (1,)) and f.get("shape")]
        rows += [("robot", str(ds.info.get("robot_type") or "-")),
                 ("features", ", ".join(vectors) or "-")]
    fps = ds.fps or float("nan")
    rows += [
        ("rate", f"{fps:g} Hz"),
        ("episodes", f"{ds.num_episodes}" + ("" if success is None else
                                             f" ({success} successful)")),
        ("frames", f"{ds.num_frames} ({ds.num_frames / fps:.0f} s)"),
        ("interventions", "-" if interventions is None else str(interventions)),
        ("sources", ", ".join(sources) or "-"),
        ("cameras", ", ".join(f"{c} {w}x{h}" for c, h, w in ds.cameras) + _gop(ds)
         if ds.cameras else "none"),
        ("size", f"{size / 2 ** 20:.1f} MB"),
    ]
    leftovers = ds.uncommitted()
    if leftovers:
        rows.append(("uncommitted", f"{len(leftovers)} file(s) of an interrupted episode "
                                    f"(ignored; --resume removes them)"))
    rows += [("note", n) for n in ds.notes]
    for k, v in rows:
        t.add_row(f"[bold]{k}", v)
    console.print(t)


def _gop(ds: Dataset) -> str:
    """The videos' keyframe interval as recorded in info.json ("" where it is not)."""
    from robot_rl.data.recover import recorded_keyframe_interval

    g = recorded_keyframe_interval(ds.features)
    return "" if g is None else f" (a keyframe every {g} frames)"


def _outcomes(ds: Dataset) -> tuple[int | None, int | None]:
    """(successful episodes, intervention steps) from the episode rows, or counted from the frames
    (success at each episode's last frame) where the rows lack them (after a LeRobot edit);
    None where neither has them."""
    import numpy as np

    eps = ds.episodes
    if eps and "robot_rl/success" in eps[0]:
        return (sum(bool(r.get("robot_rl/success")) for r in eps),
                sum(int(r.get("robot_rl/interventions", 0)) for r in eps))
    if not eps or not {"next.success", "intervention"} & set(ds.features):
        return None, None
    f = ds.frames()  # in episode order: an episode's last frame is where the next one begins
    ep = f["episode_index"]
    last = np.append(ep[1:] != ep[:-1], True)
    success = int(f["next.success"][last].astype(bool).sum()) if "next.success" in f else None
    interventions = int(f["intervention"].astype(bool).sum()) if "intervention" in f else None
    return success, interventions


def validate_cmd(cfg: DataValidateConfig) -> None:
    from robot_rl.data import Dataset

    ds = Dataset(cfg.path)
    problems = ds.validate(decode_videos=cfg.videos)
    console = Console()
    for n in ds.notes:
        console.print(f"[yellow]note:[/yellow] {n}", highlight=False)
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
    console = Console()
    with WorkProgress(console, "data replay", len(which), "episodes") as work:
        for k, i in enumerate(which):
            work.start(f"episode {i}")
            r = replay_episode(ds, i, cfg.video if k == 0 else None, cfg.camera)
            work.advance()
            t.add_row(str(i), str(r.frames), f"{r.max_joint_error:.2e}",
                      f"{r.max_obs_error:.2e}", f"{r.success} / {r.recorded_success}")
    console.print(t)
