"""Camera render rates for policies: frames per second per camera image, by size and renderer.

    python benchmarks/vision.py                              # 64, 96, 128 px; push; 8 envs
    python benchmarks/vision.py --sizes 96 --warp-device cuda   # where a GPU is lent

Renderers (``sim.cameras.SimCameras``, one camera of every env per call, after a step):

- ``default``: MuJoCo's OpenGL renderer in the video mode (its defaults: the model's shadow
  map, 4x MSAA, reflections, skybox, fine tessellation);
- ``policy``: the same renderer in the policy mode (none of those, coarser tessellation);
- ``warp``: MuJoCo Warp's batch ray tracer over all envs' worlds in one launch, on
  ``--warp-device`` (Warp's CPU device here; ``cuda`` on a GPU).

Target (issue 20): policy mode >= 8x the default mode, >= 300 frames/s at 96x96 on 2 cores.
Each cell: the median of ``--repeats`` timings of ``--seconds`` each, after a warm-up call.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import time
from pathlib import Path

import tyro
from rich.console import Console
from rich.table import Table


@dataclasses.dataclass
class Args:
    sizes: tuple[int, ...] = (64, 96, 128)
    """Square image sizes [px]."""
    task: str = "push"
    camera: str = "front"
    num_envs: int = 8
    renderers: tuple[str, ...] = ("default", "policy", "warp")
    warp_device: str = "cpu"
    seconds: float = 2.0
    repeats: int = 3
    depth: bool = False
    """Render depth too."""
    out: Path = Path("runs/bench/vision.json")


def frames_per_second(args: Args, renderer: str, size: int) -> float:
    from robot_rl.sim import make_env
    from robot_rl.sim.cameras import CameraConfig, SimCameras

    backend = {"backend": "warp", "device": args.warp_device} if renderer == "warp" else {}
    env = make_env(args.task, args.num_envs, seed=0, **backend)  # type: ignore[arg-type]
    env.reset(seed=0)
    cfg = CameraConfig(names=(args.camera,), height=size, width=size, depth=args.depth,
                       mode="video" if renderer == "default" else "policy")
    rates = []
    with SimCameras(env, cfg) as cams:
        cams.render()  # warm-up: GL context, kernels, BVH
        for _ in range(args.repeats):
            n, t0 = 0, time.perf_counter()
            while time.perf_counter() - t0 < args.seconds:
                frames = cams.render()
                frames[args.camera].rgb.sum().item()  # wait for the device
                n += 1
            rates.append(n * args.num_envs / (time.perf_counter() - t0))
    return statistics.median(rates)


def main(args: Args) -> None:
    console = Console()
    results: dict[str, dict[str, float]] = {}
    for size in args.sizes:
        for r in args.renderers:
            fps = frames_per_second(args, r, size)
            results.setdefault(str(size), {})[r] = fps
            console.print(f"{size}x{size} {r}: {fps:,.0f} frames/s", highlight=False)
    table = Table(title=f"camera frames/s per image ({args.task}, camera {args.camera}, "
                        f"{args.num_envs} envs{', with depth' if args.depth else ''}; "
                        f"warp on {args.warp_device})")
    table.add_column("size")
    for r in args.renderers:
        table.add_column(r, justify="right")
    if {"default", "policy"} <= set(args.renderers):
        table.add_column("policy / default", justify="right")
    for size, row in results.items():
        cells = [f"{row[r]:,.0f}" for r in args.renderers]
        if "default" in row and "policy" in row:
            cells.append(f"{row['policy'] / row['default']:.1f}x")
        table.add_row(f"{size}x{size}", *cells)
    console.print(table)
    target = results.get("96", {})
    if "policy" in target and "default" in target:
        met = target["policy"] >= 300 and target["policy"] >= 8 * target["default"]
        console.print(f"target (policy >= 300 frames/s and >= 8x default at 96x96): "
                      f"{'met' if met else 'not met'}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    console.print(f"results: {args.out}")


if __name__ == "__main__":
    main(tyro.cli(Args))
