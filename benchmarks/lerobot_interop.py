"""Round trips between robot_rl and the real LeRobot: an outside check, run by hand.

LeRobot (0.4.4, the last for Python 3.11) pins torch < 2.11, so it lives in its own
environment; this script runs there and calls our ``robot-rl`` command for our side:

    python3 -m venv /tmp/lrenv
    /tmp/lrenv/bin/pip install lerobot==0.4.4 av"<16"   # + torch/torchvision for that env
    /tmp/lrenv/bin/python benchmarks/lerobot_interop.py --robot-rl .venv/bin/robot-rl

What it does, printing one line per check (exit status 1 if any failed):

1. ``robot-rl record`` two push datasets with a camera; LeRobot's ``LeRobotDataset`` loads
   them, indexes frames with images, chunks actions with ``delta_timestamps`` and finds
   q01/q99 in the stats.
2. LeRobot's edit tools (``delete_episodes``, ``split_dataset``, ``merge_datasets``) on
   them; LeRobot reloads the results and ``robot-rl data validate`` / ``data info`` open
   them (the robot_rl block recovered, what was lost named).
3. ``robot-rl record --resume`` appends to the edited dataset; both validate and LeRobot
   reload it.
4. LeRobot writes a dataset from scratch (a 7-joint arm, AV1 video, several episodes per
   file); ``robot-rl data validate`` / ``data info`` read it, ``robot-rl data import`` maps
   it onto reach, ``robot-rl bc`` learns from it (held-out action error).

Video decoding: LeRobot 0.4.4's ``pyav`` backend goes through
``torchvision.io.VideoReader``, which torchvision 0.26+ removed; where that is missing the
script decodes the frames LeRobot asks for with PyAV itself (nearest frame to each
timestamp, within LeRobot's tolerance), so the timestamp queries are LeRobot's own.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch

RESULTS: list[tuple[str, bool, str]] = []


def check(name: str, ok: bool, detail: str = "") -> None:
    RESULTS.append((name, ok, detail))
    print(f"[{'ok' if ok else 'FAIL'}] {name}{': ' + detail if detail else ''}", flush=True)


def ours(robot_rl: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Our command line; its output comes back as text."""
    return subprocess.run([robot_rl, *args], capture_output=True, text=True,
                          env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin",
                               "COLUMNS": "200"})


def patch_decoding() -> None:
    import torchvision.io

    if hasattr(torchvision.io, "VideoReader"):
        return
    import av
    import lerobot.datasets.lerobot_dataset as lds
    import lerobot.datasets.video_utils as vu

    def decode(video_path, timestamps, tolerance_s, backend=None):  # type: ignore[no-untyped-def]
        with av.open(str(video_path)) as c:
            s = c.streams.video[0]
            frames = [(float(f.pts * s.time_base), f.to_ndarray(format="rgb24"))
                      for f in c.decode(s)]
        ts = np.array([t for t, _ in frames])
        out = []
        for q in timestamps:
            i = int(np.argmin(np.abs(ts - q)))
            if abs(ts[i] - q) > tolerance_s:
                raise RuntimeError(f"{video_path}: no frame within {tolerance_s} s of {q}")
            out.append(torch.from_numpy(frames[i][1]).permute(2, 0, 1).float() / 255)
        return torch.stack(out)

    vu.decode_video_frames = decode
    lds.decode_video_frames = decode  # type: ignore[attr-defined]
    print("note: decoding with PyAV (this torchvision has no VideoReader)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robot-rl", required=True, help="our robot-rl executable")
    ap.add_argument("--work", type=Path, default=Path("/tmp/lerobot_interop"))
    args = ap.parse_args()
    from lerobot.datasets import dataset_tools as tools
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    patch_decoding()
    rr, w = args.robot_rl, args.work
    shutil.rmtree(w, ignore_errors=True)
    w.mkdir(parents=True)

    def load(name: str) -> LeRobotDataset:
        return LeRobotDataset(f"local/{name.replace('/', '_')}", root=w / name,
                              video_backend="pyav")

    # 1. ours, read by LeRobot
    for name, n, seed in (("ours", 4, "0"), ("ours2", 2, "7")):
        p = ours(rr, "record", "--task", "push", "--teleop", "expert", "--episodes", str(n),
                 "--episode-length", "60", "--cameras", "front", "--camera-size", "48", "64",
                 "--seed", seed, "--out", str(w / name), "--no-progress")
        check(f"robot-rl record {name}", p.returncode == 0, p.stderr[-300:])
    ds = load("ours")
    item = ds[100]
    check("LeRobot loads ours", len(ds) == 240 and ds.num_episodes == 4 and
          tuple(item["observation.images.front"].shape) == (3, 48, 64),
          f"{len(ds)} frames, frame 100 of episode {int(item['episode_index'])}")
    check("LeRobot stats have q01/q99", all(q in ds.meta.stats["action"] for q in
                                            ("q01", "q99")))
    chunked = LeRobotDataset("local/ours_c", root=w / "ours", video_backend="pyav",
                             delta_timestamps={"action": [i / 50 for i in range(8)]})
    check("LeRobot delta_timestamps chunks", tuple(chunked[10]["action"].shape) == (8, 7))

    # 2. LeRobot's edit tools, then us
    tools.delete_episodes(ds, [1], output_dir=w / "edited")
    tools.split_dataset(ds, {"a": [0, 1], "b": [2, 3]}, output_dir=w / "split")
    tools.merge_datasets([ds, load("ours2")], output_repo_id="local/merged",
                         output_dir=w / "merged")
    for name, eps in (("edited", 3), ("split/a", 2), ("split/b", 2), ("merged", 6)):
        check(f"LeRobot reloads {name}", load(name).num_episodes == eps)
        p = ours(rr, "data", "validate", str(w / name))
        check(f"robot-rl data validate {name}", p.returncode == 0,
              p.stdout.strip().splitlines()[-1] if p.stdout else p.stderr[-300:])
    p = ours(rr, "data", "info", str(w / "edited"))
    check("robot-rl data info edited says what was lost", "lost" in p.stdout and
          "push" in p.stdout, p.stderr[-300:])

    # 3. we append to what LeRobot edited
    shutil.copytree(w / "edited", w / "appended")
    p = ours(rr, "record", "--task", "push", "--teleop", "expert", "--episodes", "5",
             "--episode-length", "60", "--cameras", "front", "--camera-size", "48", "64",
             "--out", str(w / "appended"), "--resume", "--no-progress")
    check("robot-rl record --resume onto edited", p.returncode == 0, p.stderr[-300:])
    p = ours(rr, "data", "validate", str(w / "appended"))
    check("robot-rl data validate appended", p.returncode == 0, p.stdout.strip()[-200:])
    check("LeRobot reloads appended", load("appended").num_episodes == 5)

    # 4. LeRobot writes, we read, import and learn
    names = [f"joint{i}.pos" for i in range(1, 8)]
    feats = {"observation.state": {"dtype": "float32", "shape": (7,), "names": names},
             "action": {"dtype": "float32", "shape": (7,), "names": names},
             "observation.images.wrist": {"dtype": "video", "shape": (48, 64, 3),
                                          "names": ["height", "width", "channels"]}}
    theirs = LeRobotDataset.create("local/theirs", fps=50, features=feats,
                                   root=w / "theirs", robot_type="my_arm", use_videos=True)
    rng = np.random.default_rng(0)
    for e in range(10):
        phase = rng.uniform(0, 2 * np.pi, 7)
        for t in range(60):
            q = (30 * np.sin(2 * np.pi * 1.5 * t / 50 + phase)).astype(np.float32)
            theirs.add_frame({"observation.state": q,
                              "action": (q + 3 * np.tanh(q / 10)).astype(np.float32),
                              "observation.images.wrist":
                                  np.full((48, 64, 3), 10 * e + 2 * t % 100, np.uint8),
                              "task": "move the arm"})
        theirs.save_episode()
    theirs.finalize()
    for cmd in (["data", "validate", str(w / "theirs")], ["data", "info", str(w / "theirs")],
                ["data", "import", str(w / "theirs"), "--task", "reach", "--goal", "0.5",
                 "-0.15", "0.3", "--angle-unit", "deg", "--out", str(w / "imported")],
                ["data", "validate", str(w / "imported")],
                ["bc", "--demos", str(w / "theirs"), "--steps", "600", "--eval-every", "300",
                 "--policy.horizon", "1", "--runs-dir", str(w / "runs"), "--no-progress"]):
        p = ours(rr, *cmd)
        last = (p.stdout.strip().splitlines() or [""])[-1]
        check(f"robot-rl {' '.join(cmd[:2])} {Path(cmd[2]).name}", p.returncode == 0,
              last[-160:] if p.returncode == 0 else p.stderr[-300:])
    failed = [n for n, ok, _ in RESULTS if not ok]
    print(f"{len(RESULTS) - len(failed)}/{len(RESULTS)} checks passed" +
          (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
