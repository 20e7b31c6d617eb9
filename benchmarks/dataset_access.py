"""Random access to a dataset's camera frames: milliseconds per random frame against the
videos' keyframe interval, and what the interval costs on disk.

    python benchmarks/dataset_access.py                        # intervals 2 5 10 30 and 250
    python benchmarks/dataset_access.py --intervals 2 250 --episodes 2

For each keyframe interval g, ``robot-rl record`` (the push expert, one camera) records the
same episodes into its own dataset; then ``Dataset.video_frames`` fetches ``--samples``
frames, one random (episode, frame) per call, as a learner sampling frames at random does,
and a batch of 16 random frames per call (one call per episode they fall in). Reported: mean
and p90 ms per single random frame, ms per 16-frame batch, and the videos' size (MB per
minute of video). "whole episode" is the time to decode an episode's whole video, what a
reader without random access pays for any one frame of it (``Dataset.video``). g = 250 is x264's
default, which recordings used before the interval was a setting (one or two keyframes per
episode). LeRobot encodes with g = 2.
"""

from __future__ import annotations

import dataclasses
import shutil
import time
from pathlib import Path

import numpy as np
import tyro
from rich.console import Console
from rich.table import Table


@dataclasses.dataclass
class Args:
    intervals: tuple[int, ...] = (2, 5, 10, 30, 250)
    """Keyframe intervals to record and read."""
    episodes: int = 3
    """Episodes recorded per interval."""
    episode_length: int = 300
    """Control steps per episode (at 50 Hz: 6 s of video)."""
    camera: str = "front"
    camera_size: tuple[int, int] = (240, 320)
    samples: int = 200
    """Random single frames timed per interval."""
    batches: int = 20
    """16-frame random batches timed per interval."""
    out: Path = Path("runs/bench/dataset_access")
    seed: int = 0


def record_dataset(args: Args, g: int, out: Path) -> Path:
    from robot_rl.recording.config import RecordConfig
    from robot_rl.recording.record import record

    if (out / "meta" / "info.json").is_file():
        return out
    shutil.rmtree(out, ignore_errors=True)
    record(RecordConfig(task="push", teleop="expert", episodes=args.episodes, out=out,
                        cameras=(args.camera,), camera_size=args.camera_size,
                        keyframe_interval=g, episode_length=args.episode_length,
                        seed=args.seed, progress=False), console=Console(quiet=True))
    return out


def time_access(args: Args, root: Path) -> dict[str, float]:
    from robot_rl.data import Dataset

    ds = Dataset(root)
    lengths = {int(r["episode_index"]): int(r["length"]) for r in ds.episodes}
    rng = np.random.default_rng(args.seed)
    picks = [(e, int(rng.integers(lengths[e]))) for e in rng.choice(list(lengths), args.samples)]
    ds.video_frames(picks[0][0], args.camera, [picks[0][1]])  # warm the decoder's libraries
    single = []
    for e, f in picks:
        t0 = time.perf_counter()
        ds.video_frames(e, args.camera, [f])
        single.append(time.perf_counter() - t0)
    batch = []
    for _ in range(args.batches):
        eps = rng.choice(list(lengths), 16)
        t0 = time.perf_counter()
        for e in np.unique(eps):
            ds.video_frames(int(e), args.camera,
                            rng.integers(lengths[int(e)], size=int((eps == e).sum())))
        batch.append(time.perf_counter() - t0)
    whole = []
    for e, _ in picks[:10]:
        t0 = time.perf_counter()
        ds.video(e, args.camera)
        whole.append(time.perf_counter() - t0)
    mb = sum(p.stat().st_size for p in (root / "videos").rglob("*.mp4")) / 2 ** 20
    minutes = sum(lengths.values()) / ds.fps / 60
    return {"single_ms": 1e3 * float(np.mean(single)),
            "single_p90_ms": 1e3 * float(np.percentile(single, 90)),
            "batch16_ms": 1e3 * float(np.mean(batch)),
            "decode_all_ms": 1e3 * float(np.mean(whole)),
            "mb_per_minute": mb / minutes}


def main(args: Args) -> None:
    console = Console(width=max(110, Console().width))
    rows = {}
    for g in args.intervals:
        root = args.out / f"g{g}"
        t0 = time.perf_counter()
        record_dataset(args, g, root)
        console.print(f"g={g}: recorded {args.episodes} episodes in "
                      f"{time.perf_counter() - t0:.0f} s; timing random access...")
        rows[g] = time_access(args, root)
    h, w = args.camera_size
    t = Table(title=f"random camera frames ({h}x{w} H.264, push, {args.episodes} episodes of "
                    f"{args.episode_length} frames): {args.samples} single frames, "
                    f"{args.batches} batches of 16", title_justify="left")
    for col in ("keyframe interval", "ms / random frame", "p90 ms", "ms / 16-frame batch",
                "whole episode: ms", "MB / min of video"):
        t.add_column(col, justify="right")
    for g, r in rows.items():
        t.add_row(f"{g}", f"{r['single_ms']:.1f}", f"{r['single_p90_ms']:.1f}",
                  f"{r['batch16_ms']:.0f}", f"{r['decode_all_ms']:.0f}",
                  f"{r['mb_per_minute']:.2f}")
    console.print(t)


if __name__ == "__main__":
    main(tyro.cli(Args))
