"""Wall-clock to 95% reach success: robot_rl SAC vs Stable-Baselines3 SAC, then the student.

    python benchmarks/sac_reach.py                      # ours, SB3, distill + export + latency
    python benchmarks/sac_reach.py --budget 600 --skip-sb3

One run each, on this machine, one after the other (never concurrently: two trainers on two
cores slow each other down far more than 2x). Both learners are evaluated the same way:
deterministic policy, 32 episodes of the batched reach env. Ours counts its evaluation time
against itself; SB3's evaluations are excluded from its clock. SB3 runs at its defaults
(``SAC("MlpPolicy", env)``) on our gymnasium wrapper ``robot_rl/Reach-v0``.

Afterwards our run is distilled (DAgger, default domain randomization) and exported; the table
reports student vs teacher success and the exported policy's per-call latency (load_policy's
default backend, one sample, as the deploy loop calls it).
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
import tyro
from rich.console import Console
from rich.table import Table

from robot_rl.controllers import MotionConfig
from robot_rl.evaluate import evaluate
from robot_rl.plot import plot_curves, time_to
from robot_rl.runner import Runner
from robot_rl.sim import make_env
from robot_rl.train_config import TrainConfig


@dataclasses.dataclass(kw_only=True)
class Args:
    """Wall-clock to 95% reach success: ours vs SB3 SAC; student vs teacher."""

    budget: float = 600.0
    """Wall-clock budget of each learner [s]."""
    target: float = 0.95
    """Success rate that stops the clock."""
    safety: str = "both"
    """Our safety mode (default: the product default)."""
    eval_episodes: int = 32
    """Episodes per evaluation."""
    sb3_eval_every: float = 20.0
    """Seconds of SB3 training between its evaluations."""
    skip_sb3: bool = False
    """Only run ours (and the student)."""
    skip_student: bool = False
    """Skip distillation, export and the latency table."""
    reuse: bool = False
    """Reuse our finished run in ``out`` (its learning curve) instead of training again."""
    reuse_student: bool = False
    """With --reuse: keep the run's distilled student and export, measure latency only."""
    out: Path = Path("runs/bench/sac_reach")
    """Folder of the runs, curves and figure."""
    seed: int = 0
    """Seed of both learners."""
    recipe: Literal["default", "demo"] = "default"
    """Our SAC: default (256-unit networks, one gradient step per 16 env steps, learning rates
    3e-4) or demo (make demo's: 128-unit networks, two gradient steps, learning rates 1e-3)."""
    threads: int | None = 1
    """Our learner's CPU threads (TrainConfig.threads; None: one per core, as before
    2026-11-25)."""


DEMO_SAC = {"actor_hidden": (128, 128), "critic_hidden": (128, 128), "updates_per_step": 2,
            "actor_lr": 1e-3, "critic_lr": 1e-3}
"""make demo's SAC settings (the Makefile's DEMO_SAC, as flags; a test keeps them equal)."""
DEMO_SAFETY_HIDDEN = (128, 128)
"""make demo's safety-critic hidden sizes."""
DEMO_REWARD_WEIGHTS = {"joint_vel": 0.05}
"""make demo's env (the Makefile's DEMO_ENV, as flags; a test keeps them equal): the motion
profile of joint targets on, and these of reach's reward weights (its joint-speed
penalty)."""


def demo_env_flags() -> list[str]:
    """The ``robot-rl train`` flags of the demo's env."""
    flags = ["--env.motion.enabled"]
    for name, weight in DEMO_REWARD_WEIGHTS.items():
        flags += [f"--env.reward-weights.{name.replace('_', '-')}", str(weight)]
    return flags


def demo_flags() -> list[str]:
    """The ``robot-rl train`` flags of the demo recipe."""
    flags = []
    for name, value in DEMO_SAC.items():
        flags += [f"--sac.{name.replace('_', '-')}",
                  *(str(v) for v in (value if isinstance(value, tuple) else (value,)))]
    return flags + ["--safety-critic.hidden", *(str(v) for v in DEMO_SAFETY_HIDDEN)]


def run_ours(args: Args) -> tuple[list[dict[str, float]], Path]:
    cfg = TrainConfig(task="reach", safety=args.safety, time_budget=args.budget,  # type: ignore[arg-type]
                      target_success=args.target, eval_every=16_000,
                      eval_episodes=args.eval_episodes, runs_dir=args.out, run_name="ours",
                      seed=args.seed, save_replay=False, checkpoint_every=1e9,
                      threads=args.threads)
    if args.recipe == "demo":
        cfg.sac = dataclasses.replace(cfg.sac, **DEMO_SAC)  # type: ignore[arg-type]
        cfg.safety_critic = dataclasses.replace(cfg.safety_critic, hidden=DEMO_SAFETY_HIDDEN)
        cfg.env = dataclasses.replace(cfg.env, motion=MotionConfig(enabled=True),
                                      reward_weights={**cfg.env.reward_weights,
                                                      **DEMO_REWARD_WEIGHTS})
    runner = Runner(cfg)
    return runner.train(), runner.run_dir


def run_sb3(args: Args, console: Console) -> list[dict[str, float]]:
    import gymnasium
    from stable_baselines3 import SAC as SB3SAC
    from stable_baselines3.common.callbacks import BaseCallback

    import robot_rl  # noqa: F401  (registers robot_rl/Reach-v0)

    eval_env = make_env("reach", min(args.eval_episodes, 32), seed=args.seed + 10_000)
    history: list[dict[str, float]] = []

    class Clock(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.train_time = 0.0
            self.mark = time.perf_counter()
            self.next_eval = 0.0

        def _on_step(self) -> bool:
            now = time.perf_counter()
            self.train_time += now - self.mark
            if self.train_time >= self.next_eval:
                self.next_eval = self.train_time + args.sb3_eval_every
                model = self.model

                def policy(obs: torch.Tensor) -> tuple[torch.Tensor, None]:
                    a, _ = model.predict(obs.numpy(), deterministic=True)
                    return torch.as_tensor(a, dtype=torch.float32), None

                res = evaluate(policy, eval_env, args.eval_episodes, seed=args.seed + 10_000)
                history.append({"env_steps": float(self.num_timesteps),
                                "seconds": self.train_time, "success_rate": res.success_rate,
                                "episode_cost": res.cost_mean, "return": res.return_mean})
                console.print(f"  sb3 {self.train_time:6.0f} s  {self.num_timesteps:>8,} steps  "
                              f"success {res.success_rate:.0%}")
                if res.success_rate >= args.target:
                    return False
            self.mark = time.perf_counter()
            return self.train_time < args.budget

    env = gymnasium.make("robot_rl/Reach-v0")
    model = SB3SAC("MlpPolicy", env, seed=args.seed, verbose=0)
    model.learn(total_timesteps=10**9, callback=Clock())
    return history


def student_figures(run_dir: Path, console: Console, reuse: bool) -> dict[str, Any]:
    from robot_rl.distill import distill
    from robot_rl.distill.configs import DaggerConfig, DistillConfig
    from robot_rl.export import load_policy
    from robot_rl.kinds.base import ExportConfig
    from robot_rl.kinds.export import export_path

    if reuse:
        state = torch.load(run_dir / "student.pt", weights_only=False)
        teacher, student = state["teacher_success"], state["student_success"]
    else:
        cfg = DistillConfig(run=run_dir, dagger=DaggerConfig(progress=False))
        _, report = distill(cfg, console)
        assert report.teacher is not None and report.student is not None
        teacher, student = report.teacher.success_rate, report.student.success_rate
        export_path(ExportConfig(run=run_dir))
    policy = load_policy(run_dir / "export")
    obs = np.zeros(policy.obs_dim, np.float32)
    times = []
    for i in range(6000):
        t = time.perf_counter()
        policy(obs)
        if i >= 1000:
            times.append(time.perf_counter() - t)
    lat = np.array(times) * 1e6
    gated = []
    for i in range(2000):
        t = time.perf_counter()
        policy.safe_action(obs)
        if i >= 500:
            gated.append(time.perf_counter() - t)
    glat = np.array(gated) * 1e6
    return {"teacher": teacher, "student": student,
            "ratio": student / max(teacher, 1e-9), "p50": float(np.percentile(lat, 50)),
            "p99": float(np.percentile(lat, 99)), "gate_p50": float(np.percentile(glat, 50)),
            "gate_p99": float(np.percentile(glat, 99)), "candidates": policy.candidates,
            "backend": policy.backend}


def main(args: Args) -> None:
    console = Console(width=max(120, Console().width))
    console.print(f"[bold]reach: wall clock to {args.target:.0%} success[/bold] "
                  f"(budget {args.budget:g} s each; ours: recipe {args.recipe}, threads "
                  f"{args.threads or 'one per core'}; SB3: {torch.get_num_threads()} torch "
                  f"threads)")
    if args.reuse:
        from robot_rl.checkpoint import read_curve

        run_dir = args.out / "ours"
        ours = read_curve(run_dir)
    else:
        ours, run_dir = run_ours(args)
    curves = [(f"robot_rl SAC (safety {args.safety})", ours)]
    sb3: list[dict[str, float]] = []
    if not args.skip_sb3:
        sb3 = run_sb3(args, console)
        curves.append(("SB3 SAC defaults", sb3))
    png = plot_curves(args.out / "sac_reach.png", curves, title="reach: eval success")

    table = Table(title=f"reach to {args.target:.0%} success, one run each, same machine",
                  title_justify="left")
    for col in ("learner", "time to target", "env steps", "final success", "evals"):
        table.add_column(col, justify="left" if col == "learner" else "right")
    rows = [("robot_rl SAC", ours)] + ([("SB3 SAC (defaults)", sb3)] if sb3 else [])
    reached = {}
    for name, hist in rows:
        hit = time_to(hist, args.target)
        reached[name] = hit
        table.add_row(name, f"{hit[0]:.0f} s" if hit else f"> {hist[-1]['seconds']:.0f} s",
                      f"{hit[1]:,.0f}" if hit else f"> {hist[-1]['env_steps']:,.0f}",
                      f"{hist[-1]['success_rate']:.0%}", str(len(hist)))
    console.print(table)
    ours_hit = reached["robot_rl SAC"]
    if sb3 and ours_hit:
        sb3_hit = reached["SB3 SAC (defaults)"]
        if sb3_hit:
            console.print(f"speed-up (SB3 time / ours): {sb3_hit[0] / ours_hit[0]:.1f}x")
        else:
            console.print(f"speed-up (SB3 time / ours): > {sb3[-1]['seconds'] / ours_hit[0]:.1f}x"
                          f" (SB3 did not reach {args.target:.0%} in {sb3[-1]['seconds']:.0f} s)")
    console.print(f"curves: {png}")

    if not args.skip_student:
        s = student_figures(run_dir, console, args.reuse and args.reuse_student)
        t = Table(title="student (64x64 MLP, DAgger under dr=default) vs teacher",
                  title_justify="left")
        for col in ("metric", "value", "target"):
            t.add_column(col, justify="left" if col == "metric" else "right")
        t.add_row("teacher success (dr default)", f"{s['teacher']:.1%}", "")
        t.add_row("student success (dr default)", f"{s['student']:.1%}", "")
        t.add_row("student / teacher", f"{s['ratio']:.3f}", ">= 0.95")
        t.add_row(f"policy call p50 / p99 ({s['backend']}, 1 sample)",
                  f"{s['p50']:.1f} / {s['p99']:.1f} µs", "<= 50 µs p99")
        t.add_row(f"gated call p50 / p99 ({s['candidates']:.0f} candidates + cost critic)",
                  f"{s['gate_p50']:.1f} / {s['gate_p99']:.1f} µs", "")
        console.print(t)


if __name__ == "__main__":
    main(tyro.cli(Args))
