"""Recording demonstrations for offline-to-online learning: how fast the recorder runs.

    python benchmarks/offline_to_online.py --part recording     # a minute or two

The learning comparison this script also ran (SAC, "RLPD" and "WSRL" sharing SAC's networks
and update ratio, which is neither reference's recipe) is replaced by
``benchmarks/learners.py``, which runs each learner to its reference.

Recording (push, the scripted expert driving, as fast as the loop goes):
  no camera        the recorder: expert action, env step, frame into the dataset, commits
  1 camera         the same with the 320x240 corner camera encoded to mp4 as it records
  bare rendering   the physical limit with a camera: env step + offscreen render, no recorder
and the seconds each episode commit took. Targets: >= 30 Hz without cameras, <= 10%
recording overhead over bare rendering, < 1 s to save an episode. LeRobot (not installable
here: it pins torch < 2.11) is reported by its users to spend 30-60 s processing a 15 s
episode; its figure is quoted, not measured.
"""

from __future__ import annotations

import dataclasses
import sys
import tempfile
import time
from pathlib import Path
from typing import Literal

import numpy as np
import torch
import tyro
from rich.console import Console
from rich.table import Table

from robot_rl.recording.config import RecordConfig
from robot_rl.recording.record import make_recording_env, record


@dataclasses.dataclass
class Args:
    part: Literal["recording"] = "recording"
    episodes: int = 4
    """Episodes recorded per row."""
    camera_size: tuple[int, int] = (240, 320)
    """Height and width of the camera."""


def _bare_render_rate(frames: int, size: tuple[int, int]) -> float:
    """env step + one offscreen render per step, nothing recorded: frames/s."""
    from robot_rl.sim.render import EnvRenderer

    env = make_recording_env("push")
    env.reset(seed=0)
    with EnvRenderer(env, camera="corner", width=size[1], height=size[0]) as r:
        r.render()  # GL set-up outside the timing
        t0 = time.perf_counter()
        for _ in range(frames):
            r.render()
            env.step(env.expert_action())
        return frames / (time.perf_counter() - t0)


def recording(args: Args, console: Console) -> None:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, cams in (("no camera", ()), ("1 camera 320x240", ("corner",))):
            cfg = RecordConfig(task="push", teleop="expert", episodes=args.episodes,
                               out=Path(tmp) / name.replace(" ", "_"), cameras=cams,
                               camera_size=args.camera_size, realtime=False, progress=False)
            console.print(f"recording {args.episodes} episodes, {name}...")
            res = record(cfg, console=Console(quiet=True))
            rate = res.frames / res.seconds
            rows.append((name, rate, res.frames, res.save_seconds))
        frames = rows[1][2]
        console.print(f"bare rendering: {frames} steps with one render each...")
        bare = _bare_render_rate(frames, args.camera_size)
    t = Table(title="recording push demonstrations (scripted expert, 200-step episodes)")
    for col in ("loop", "frames/s", "save p50 / max [s]", "vs bare rendering", "target"):
        t.add_column(col)
    no_cam, cam = rows
    t.add_row("ours, no camera", f"{no_cam[1]:.0f}",
              f"{np.median(no_cam[3]):.3f} / {max(no_cam[3]):.3f}", "", ">= 30 Hz, < 1 s")
    t.add_row("ours, 1 camera", f"{cam[1]:.1f}", f"{np.median(cam[3]):.3f} / {max(cam[3]):.3f}",
              f"{100 * (1 - cam[1] / bare):+.1f}% overhead", "<= 10%, < 1 s")
    t.add_row("bare rendering (limit)", f"{bare:.1f}", "", "", "")
    t.add_row("LeRobot (users' reports)", "", "30-60 s per 15 s episode", "", "")
    console.print(t)


def main(args: Args) -> None:
    console = Console(width=max(Console().width, 120))
    torch.set_num_threads(1)
    recording(args, console)


if __name__ == "__main__":
    main(tyro.cli(Args))
    sys.exit(0)
