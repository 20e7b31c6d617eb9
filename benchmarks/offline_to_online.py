"""Offline-to-online learning on push: recording demonstrations, then learning from them.

    python benchmarks/offline_to_online.py --part recording     # a minute or two
    python benchmarks/offline_to_online.py --part learning      # SAC, RLPD, WSRL: ~2 hours
    python benchmarks/offline_to_online.py --part learning --sac-run runs/bench/push

Learning (one run each, one after the other, same seed, same networks and update rate):
env steps and wall clock until an evaluation (deterministic policy, 32 episodes) reaches 80%
success on push, for SAC from scratch and for RLPD and WSRL (``robot-rl finetune``) given 20
scripted-expert demonstrations (recorded first with ``robot-rl record --teleop expert
--success-only``, or taken from ``--demos``). All three share SAC's networks (2 LayerNorm
critics, 256x256), 16 envs and ``--updates-per-step`` gradient steps per vector step, and the
safety critic (``--safety both``); they differ only in how the demonstrations are used.
Target: RLPD or WSRL at most 1/3 of SAC's env steps. ``--sac-run DIR`` takes SAC's curve
from a finished ``robot-rl train`` run with the same settings instead of training it again
(SAC alone needs 45 minutes or more here).

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
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
import tyro
from rich.console import Console
from rich.table import Table

from robot_rl.recording.record import RecordConfig, make_recording_env, record


@dataclasses.dataclass
class Args:
    part: Literal["recording", "learning"] = "recording"
    episodes: int = 4
    """Recording: episodes recorded per row."""
    camera_size: tuple[int, int] = (240, 320)
    """Recording: height and width of the camera."""
    methods: tuple[Literal["sac", "rlpd", "wsrl"], ...] = ("sac", "rlpd", "wsrl")
    """Learning: which learners to run."""
    budget: float = 2700.0
    """Learning: wall-clock budget of each learner [s]."""
    target: float = 0.8
    """Learning: the success rate that stops a learner's clock."""
    demos: Path | None = None
    """Learning: dataset of demonstrations (default: record 20 expert demos into --out)."""
    num_demos: int = 20
    """Learning: expert episodes to record when --demos is not given."""
    sac_run: Path | None = None
    """Learning: SAC's curve from this finished run instead of training SAC again."""
    reuse: bool = False
    """Learning: print the table from the runs already in --out instead of training."""
    num_envs: int = 16
    updates_per_step: int = 1
    """Learning: gradient steps per vector step of --num-envs envs, for every learner."""
    eval_every: int = 20_000
    """Learning: env steps between evaluations."""
    offline_steps: int = 10_000
    """Learning: WSRL's gradient steps on the demonstrations."""
    warmup_steps: int = 5_000
    """Learning: WSRL's env steps by the frozen pre-trained policy."""
    out: Path = Path("runs/bench/offline_to_online")
    seed: int = 0


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


def _demos(args: Args, console: Console) -> Path:
    if args.demos is not None:
        return args.demos
    out = args.out / "demos"
    if not (out / "meta" / "info.json").is_file():
        console.print(f"recording {args.num_demos} expert demonstrations into {out}...")
        record(RecordConfig(task="push", teleop="expert", episodes=args.num_demos, out=out,
                            success_only=True, progress=False), console=Console(quiet=True))
    return out


def _learner(args: Args, method: str, demos: Path) -> list[dict[str, float]]:
    from robot_rl.algos import SACConfig
    from robot_rl.finetune import FinetuneConfig, FinetuneRunner
    from robot_rl.runner import Runner, TrainConfig

    common: dict[str, Any] = dict(
        task="push", safety="both", num_envs=args.num_envs, seed=args.seed,
        time_budget=args.budget, target_success=args.target, eval_every=args.eval_every,
        eval_episodes=32, runs_dir=args.out, run_name=method, save_replay=False,
        checkpoint_every=1e9, progress=False)
    if method == "sac":
        sac = SACConfig(updates_per_step=args.updates_per_step)
        return Runner(TrainConfig(sac=sac, **common)).train()  # type: ignore[arg-type]
    # the same networks and update rate as SAC; learning starts at once from the demos
    sac = SACConfig(updates_per_step=args.updates_per_step, learning_starts=0)
    cfg = FinetuneConfig(demos=demos, method=method, sac=sac,  # type: ignore[arg-type]
                         offline_steps=args.offline_steps, warmup_steps=args.warmup_steps,
                         **common)
    return FinetuneRunner(cfg).train()


def _reached(hist: list[dict[str, float]], target: float) -> tuple[float, float] | None:
    """(env steps, seconds) of the first evaluation at or above ``target``."""
    for row in hist:
        if row["success_rate"] >= target:
            return row["env_steps"], row["seconds"]
    return None


def learning(args: Args, console: Console) -> None:
    from robot_rl.data.reader import Dataset
    from robot_rl.plot import plot_curves
    from robot_rl.runner import read_curve

    demos = _demos(args, console)
    ds = Dataset(demos)
    console.print(f"demonstrations: {ds.num_episodes} episodes, {ds.num_frames} frames, "
                  f"{sum(bool(r['robot_rl/success']) for r in ds.episodes)} successful")
    curves: dict[str, list[dict[str, float]]] = {}
    for method in args.methods:
        if method == "sac" and args.sac_run is not None:
            curves[method] = read_curve(args.sac_run)
            continue
        if args.reuse:
            curves[method] = read_curve(args.out / method)
            continue
        console.print(f"[bold]{method}[/bold]: up to {args.budget:g} s or "
                      f"{args.target:.0%} success...")
        curves[method] = _learner(args, method, demos)
    names = {"sac": "SAC from scratch", "rlpd": "RLPD (20 demos)", "wsrl": "WSRL (20 demos)"}
    png = plot_curves(args.out / "offline_to_online.png",
                      [(names[m], h) for m, h in curves.items()],
                      title=f"push: eval success (target {args.target:.0%})")
    t = Table(title=f"push to {args.target:.0%} success: env steps and wall clock, one run "
                    f"each ({args.num_envs} envs, {args.updates_per_step} update per vector "
                    f"step, safety both)", title_justify="left")
    for col in ("learner", "env steps to target", "wall clock", "final success",
                "best success (env steps)", "evaluations", "steps / SAC's", "target <= 1/3"):
        t.add_column(col, justify="left" if col == "learner" else "right")
    sac_hit = _reached(curves["sac"], args.target) if "sac" in curves else None
    sac_steps = sac_hit[0] if sac_hit else (curves["sac"][-1]["env_steps"] if "sac" in curves
                                            else math.nan)
    for m, hist in curves.items():
        hit = _reached(hist, args.target)
        last = hist[-1]
        steps = f"{hit[0]:,.0f}" if hit else f"> {last['env_steps']:,.0f}"
        clock = f"{hit[1]:,.0f} s" if hit else f"> {last['seconds']:,.0f} s"
        ratio = verdict = ""
        if m != "sac" and hit and not math.isnan(sac_steps):
            bound = "<" if sac_hit is None else ""  # SAC's steps are only bounded below
            ratio = f"{bound}{hit[0] / sac_steps:.2f}"
            verdict = "yes" if hit[0] <= sac_steps / 3 else "no"
        elif m != "sac":
            verdict = "no"
        name = names[m] + (f" ({args.sac_run})" if m == "sac" and args.sac_run else "")
        best = max(hist, key=lambda r: r["success_rate"])
        t.add_row(name, steps, clock, f"{last['success_rate']:.0%}",
                  f"{best['success_rate']:.0%} ({best['env_steps']:,.0f})", str(len(hist)),
                  ratio, verdict)
    console.print(t)
    console.print(f"learning curves: {png}")


def main(args: Args) -> None:
    console = Console(width=max(Console().width, 120))
    if args.part == "recording":
        torch.set_num_threads(1)
        recording(args, console)
    else:
        learning(args, console)


if __name__ == "__main__":
    main(tyro.cli(Args))
    sys.exit(0)
