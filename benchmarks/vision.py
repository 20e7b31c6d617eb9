"""Camera render rates for policies, pixel students against their state teachers, and the
success classifier's precision and recall.

    python benchmarks/vision.py                              # 64, 96, 128 px; push; 8 envs
    python benchmarks/vision.py --sizes 96 --warp-device cuda   # where a GPU is lent
    python benchmarks/vision.py --part students              # push: expert -> pixel student
    python benchmarks/vision.py --part reward                # lift: success classifier

Renderers (``sim.cameras.SimCameras``, one camera of every env per call, after a step):

- ``default``: MuJoCo's OpenGL renderer in the video mode (its defaults: the model's shadow
  map, 4x MSAA, reflections, skybox, fine tessellation);
- ``policy``: the same renderer in the policy mode (none of those, coarser tessellation);
- ``warp``: MuJoCo Warp's batch ray tracer over all envs' worlds in one launch, on
  ``--warp-device`` (Warp's CPU device here; ``cuda`` on a GPU).

Target (issue 20): policy mode >= 8x the default mode, >= 300 frames/s at 96x96 on 2 cores.
Each cell: the median of ``--repeats`` timings of ``--seconds`` each, after a warm-up call.

``--part students``: ``robot-rl distill-pixels`` on each of ``--student-tasks`` with the
scripted expert as the state teacher (``--student`` options), then both evaluated under the
same dynamics and visual randomization. Target: the student keeps >= 85% of the teacher's
success on push.

``--part reward``: records ``--reward-episodes`` of lift with the scripted expert (the first
three quarters with little action noise, the rest with much: failures and drops) on the
``--reward-cameras`` at 96x96, trains ``robot-rl reward train`` on them (``--reward``
options) and reports precision and recall on the held-out episodes. Target: >= 0.95 / >= 0.9.
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

from robot_rl.vision.dagger import PixelDistillConfig
from robot_rl.vision.reward_training import RewardTrainConfig


@dataclasses.dataclass
class Args:
    part: tuple[str, ...] = ("render",)
    """render: frames/s table; students: pixel students vs their teachers; reward: the
    success classifier."""
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
    student_tasks: tuple[str, ...] = ("push",)
    student: PixelDistillConfig = dataclasses.field(default_factory=PixelDistillConfig)
    """Options of the distillation (its task and output are set per task)."""
    reward_task: str = "lift"
    reward_episodes: int = 40
    reward_cameras: tuple[str, ...] = ("front", "wrist")
    reward: RewardTrainConfig = dataclasses.field(
        default_factory=lambda: RewardTrainConfig(dataset=Path("runs/bench/reward_data"),
                                                  size=96))
    """Options of the classifier's training (its dataset is recorded here)."""


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


def students(args: Args, console: Console) -> dict[str, dict[str, float]]:
    from robot_rl.vision.dagger import distill_pixels

    table = Table(title="pixel students vs their state teachers (scripted experts)")
    for col in ("task", "cameras", "size", "teacher success", "student success",
                "student / teacher", "samples", "wall clock"):
        table.add_column(col)
    out = {}
    for task in args.student_tasks:
        cfg = dataclasses.replace(args.student, task=task,
                                  out=args.out.parent / f"pixel_student_{task}.pt")
        _, r = distill_pixels(cfg, console)
        assert r.teacher is not None and r.student is not None
        out[task] = {"teacher": r.teacher.success_rate, "student": r.student.success_rate,
                     "ratio": r.success_ratio, "seconds": r.seconds, "samples": r.samples}
        table.add_row(task, " ".join(cfg.cameras), f"{cfg.size}", f"{r.teacher.success_rate:.1%}",
                      f"{r.student.success_rate:.1%}", f"{r.success_ratio:.2f}",
                      f"{r.samples:,}", f"{r.seconds:.0f} s")
    console.print(table)
    if "push" in out:
        met = out["push"]["ratio"] >= 0.85
        console.print(f"target (push student >= 85% of its teacher): {'met' if met else 'not met'}")
    return out


def reward(args: Args, console: Console) -> dict[str, float]:
    import shutil

    from robot_rl.recording.record import RecordConfig, record
    from robot_rl.vision.reward_training import print_report, train_reward_classifier

    data = args.reward.dataset
    shutil.rmtree(data, ignore_errors=True)
    clean = args.reward_episodes * 3 // 4
    t0 = time.perf_counter()
    for episodes, noise, seed, resume in ((clean, 0.05, 0, False),
                                          (args.reward_episodes, 0.3, 5, True)):
        record(RecordConfig(task=args.reward_task, teleop="expert", episodes=episodes, out=data,
                            cameras=args.reward_cameras, camera_size=(96, 96),
                            expert_noise=noise, seed=seed, resume=resume, progress=False))
    recorded = time.perf_counter() - t0
    cfg = dataclasses.replace(args.reward, out=args.out.parent / "reward_classifier.pt")
    _, r = train_reward_classifier(cfg, console)
    print_report(console, r, f"held-out episodes ({r.episodes})")
    table = Table(title=f"success classifier ({args.reward_task}, cameras "
                        f"{' '.join(args.reward_cameras)} at {cfg.size}x{cfg.size}, "
                        f"{args.reward_episodes} expert episodes)")
    for col in ("precision", "recall", "accuracy", "held-out frames (success)",
                "episodes agreeing", "recording", "training"):
        table.add_column(col, justify="right")
    trained = time.perf_counter() - t0 - recorded
    table.add_row(f"{r.precision:.3f}", f"{r.recall:.3f}", f"{r.accuracy:.3f}",
                  f"{r.frames:,} ({r.positives:,})", f"{r.episodes_agree}/{r.episodes}",
                  f"{recorded:.0f} s", f"{trained:.0f} s")
    console.print(table)
    met = r.precision >= 0.95 and r.recall >= 0.9
    console.print(f"target (precision >= 0.95, recall >= 0.9): {'met' if met else 'not met'}")
    return {**r.row(), "record_s": recorded, "train_s": trained}


def main(args: Args) -> None:
    console = Console()
    results: dict[str, dict[str, float]] = {}
    if "students" in args.part:
        results["students"] = students(args, console)  # type: ignore[assignment]
    if "reward" in args.part:
        results["reward"] = reward(args, console)
    if "render" not in args.part:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_name("vision_learning.json").write_text(json.dumps(results, indent=2))
        return
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
