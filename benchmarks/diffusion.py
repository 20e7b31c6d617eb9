"""Diffusion policies from demonstrations: one table, 2 cores, one learner at a time.

    python benchmarks/diffusion.py --part bc                     # MLP-BC vs flow-BC
    python benchmarks/diffusion.py --part bc --tasks push --demos 20 --styles multimodal
    python benchmarks/diffusion.py --part finetune               # flow-BC + DSRL, RLPD, SAC
    python benchmarks/diffusion.py --part student                # one-step student vs teacher
    python benchmarks/diffusion.py --part table                  # print what was measured

Every cell's result goes into ``--out``/results.json as it finishes, so a part can be run
in pieces (or again, with ``--redo``) and ``--part table`` prints all of them.

* **Demonstrations**: 50 successful episodes per task and expert style, recorded once into
  ``--out``/data with ``robot-rl record --teleop expert --expert-style STYLE --success-only``
  (push episodes 300 steps, lift 200: the styles take longer than the scripted expert); a
  cell with N demos learns from the first N.
* **bc**: ``robot-rl bc --algo bc-mlp`` and ``--algo bc-flow`` with the same network width,
  chunking and gradient steps; success of the final EMA policy over ``--eval-episodes``
  episodes (deterministic seeds). Target: flow-BC >= MLP-BC + 15 points on the multimodal
  sets.
* **finetune** (push, ``--finetune-demos`` demos of ``--finetune-style``): flow-BC then
  ``robot-rl dsrl``; RLPD (``robot-rl finetune --method rlpd``) and SAC from scratch, each
  for ``--budget`` seconds: env steps and wall clock to 90% success (80% for RLPD's
  target), final success, cumulative training cost. Targets: fine-tuning >= 95% within
  300k env steps and 30 min with training cost no higher than SAC's; RLPD 80% in <= 1/3 of
  SAC's env steps.
* **student**: ``robot-rl distill`` of the fine-tuned (or the BC) flow policy into a
  one-step student; success of both and single-call latency of the exported graphs
  (onnxruntime, one thread, p50/p99 over ``--latency-calls``). Target: student >= 95% of
  its teacher's success, >= 10x lower latency, <= 50 us p99.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any, Literal

import numpy as np
import tyro
from rich.console import Console
from rich.table import Table

EPISODE_LENGTH = {"push": 300, "lift": 200}


@dataclasses.dataclass
class Args:
    part: Literal["data", "bc", "finetune", "student", "table"] = "bc"
    tasks: tuple[str, ...] = ("push", "lift")
    styles: tuple[str, ...] = ("multimodal", "multimodal-human")
    demos: tuple[int, ...] = (20, 50)
    """Demonstration counts of the bc part."""
    bc_steps: int = 10_000
    """Gradient steps of every BC run."""
    lr: float = 1e-3
    """Learning rate of every BC run."""
    width: int = 256
    """Residual width of both BC networks."""
    blocks: int = 2
    horizon: int = 8
    execute: int = 4
    eval_episodes: int = 50
    budget: float = 1800.0
    """finetune: wall-clock budget of each learner [s]."""
    finetune_demos: int = 20
    finetune_style: str = "multimodal-human"
    methods: tuple[str, ...] = ("dsrl", "rlpd", "sac")
    """finetune: the learners, one after the other."""
    latency_calls: int = 2000
    out: Path = Path("runs/bench/diffusion")
    redo: bool = False
    """Run cells again even if results.json has them."""
    seed: int = 0


def _results(args: Args) -> dict[str, Any]:
    path = args.out / "results.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def _save(args: Args, key: str, value: dict[str, Any]) -> None:
    res = _results(args)
    res[key] = value
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(res, indent=2) + "\n")


def dataset(args: Args, task: str, style: str, console: Console) -> Path:
    """50 successful demonstrations of ``task`` in ``style`` (recorded once)."""
    from robot_rl.recording.record import RecordConfig, record

    out = args.out / "data" / f"{task}-{style}"
    if not (out / "meta" / "info.json").is_file():
        console.print(f"recording 50 {style} demonstrations of {task} into {out}...")
        t0 = time.perf_counter()
        record(RecordConfig(task=task, teleop="expert", expert_style=style,  # type: ignore[arg-type]
                            episodes=50, out=out, episode_length=EPISODE_LENGTH[task],
                            success_only=True, seed=args.seed, progress=False),
               console=Console(quiet=True))
        console.print(f"  {time.perf_counter() - t0:.0f} s")
    return out


def bc_cell(args: Args, task: str, style: str, n: int, algo: str, console: Console
            ) -> dict[str, Any]:
    from robot_rl.bc import BCConfig, BCRunner
    from robot_rl.policies import PolicyConfig

    data = dataset(args, task, style, console)
    cfg = BCConfig(demos=data, algo=algo, max_episodes=n,  # type: ignore[arg-type]
                   policy=PolicyConfig(horizon=args.horizon, execute=args.execute,
                                       width=args.width, blocks=args.blocks),
                   steps=args.bc_steps, lr=args.lr, eval_every=args.bc_steps,
                   eval_episodes=args.eval_episodes, seed=args.seed, runs_dir=args.out / "runs",
                   run_name=f"{task}-{style}-{n}-{algo}", progress=False,
                   checkpoint_every=1e9)
    t0 = time.perf_counter()
    history = BCRunner(cfg, console=Console(file=sys.stderr)).train()
    last = history[-1]
    return {"success": last["success_rate"], "cost": last["episode_cost"],
            "train_seconds": last["seconds"], "wall_seconds": time.perf_counter() - t0,
            "steps": args.bc_steps, "run": str(args.out / "runs" / cfg.run_name)}  # type: ignore[operator]


def part_bc(args: Args, console: Console) -> None:
    done = _results(args)
    for task in args.tasks:
        for style in args.styles:
            for n in args.demos:
                for algo in ("bc-mlp", "bc-flow"):
                    key = f"bc/{task}/{style}/{n}/{algo}"
                    if key in done and not args.redo:
                        continue
                    console.print(f"[bold]{key}[/bold]")
                    res = bc_cell(args, task, style, n, algo, console)
                    console.print(f"  success {res['success']:.1%} in {res['wall_seconds']:.0f} s")
                    _save(args, key, res)
    table(args, console)


def table(args: Args, console: Console) -> None:
    res = _results(args)
    t = Table(title="behaviour cloning from demonstrations: final success (EMA weights, "
                    f"{args.eval_episodes} episodes)", title_justify="left")
    for col in ("task", "expert style", "demos", "MLP-BC", "flow-BC", "flow - MLP",
                "target (multimodal) >= +15 pts", "seconds (MLP / flow)"):
        t.add_column(col, justify="left" if col in ("task", "expert style") else "right")
    for key in sorted(k for k in res if k.startswith("bc/") and k.endswith("/bc-flow")):
        _, task, style, n, _ = key.split("/")
        mlp = res.get(f"bc/{task}/{style}/{n}/bc-mlp")
        flow = res[key]
        if mlp is None:
            continue
        gap = 100 * (flow["success"] - mlp["success"])
        t.add_row(task, style, n, f"{mlp['success']:.0%}", f"{flow['success']:.0%}",
                  f"{gap:+.0f} pts", "met" if gap >= 15 else "not met",
                  f"{mlp['wall_seconds']:.0f} / {flow['wall_seconds']:.0f}")
    console.print(t)
    for part in ("finetune", "student"):
        rows = {k: v for k, v in res.items() if k.startswith(part + "/")}
        if rows:
            t = Table(title=part, title_justify="left")
            cols = sorted({c for v in rows.values() for c in v if c != "run"})
            t.add_column("cell", justify="left")
            for c in cols:
                t.add_column(c, justify="right")
            for k, v in rows.items():
                t.add_row(k, *(_fmt(v.get(c)) for c in cols))
            console.print(t)


def _fmt(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.3g}" if abs(x) < 1e4 else f"{x:,.0f}"
    return str(x)


def part_data(args: Args, console: Console) -> None:
    for task in args.tasks:
        for style in args.styles:
            dataset(args, task, style, console)


def part_finetune(args: Args, console: Console) -> None:
    from robot_rl.finetune import DSRLConfig, DSRLRunner, FinetuneConfig, FinetuneRunner
    from robot_rl.runner import Runner, TrainConfig
    from robot_rl.sim import make_task_config

    style, n = args.finetune_style, args.finetune_demos
    key = f"bc/push/{style}/{n}/bc-flow"
    res = _results(args)
    if key not in res:
        res[key] = bc_cell(args, "push", style, n, "bc-flow", console)
        _save(args, key, res[key])
    common: dict[str, Any] = dict(
        time_budget=args.budget, eval_every=20_000, eval_episodes=32,
        runs_dir=args.out / "runs", save_replay=False, checkpoint_every=1e9, progress=False,
        seed=args.seed)
    env = make_task_config("push", episode_length=EPISODE_LENGTH["push"])
    for method in args.methods:
        cell = f"finetune/push/{style}/{n}/{method}"
        if cell in _results(args) and not args.redo:
            continue
        name = f"push-{style}-{n}-{method}"
        console.print(f"[bold]{cell}[/bold]: up to {args.budget:g} s")
        if method == "dsrl":
            runner: Runner = DSRLRunner(DSRLConfig(policy=Path(res[key]["run"]),
                                                   target_success=0.95, run_name=name,
                                                   **common), console=Console(file=sys.stderr))
        elif method == "rlpd":  # RLPD's own recipe: 4 envs, UTD 2, 10 LayerNorm critics
            runner = FinetuneRunner(FinetuneConfig(
                demos=dataset(args, "push", style, console), task="push", env=env,
                method="rlpd", max_episodes=n, target_success=0.95, run_name=name,
                **common),
                console=Console(file=sys.stderr))
        else:
            runner = Runner(TrainConfig(task="push", env=env, target_success=0.95,
                                        run_name=name, **common),
                            console=Console(file=sys.stderr))
        history = runner.train()
        _save(args, cell, _curve_summary(history, 0.9, str(runner.run_dir)))
    table(args, console)


def _curve_summary(history: list[dict[str, float]], target: float, run: str) -> dict[str, Any]:
    hit = next((h for h in history if h["success_rate"] >= target), None)
    last = history[-1]
    return {"env_steps_to_target": None if hit is None else hit["env_steps"],
            "seconds_to_target": None if hit is None else hit["seconds"],
            "final_success": last["success_rate"], "env_steps": last["env_steps"],
            "seconds": last["seconds"], "train_cost": last["train_cumulative_cost"], "run": run}


def part_student(args: Args, console: Console) -> None:
    from robot_rl.cli.learn import ExportConfig, export_cmd
    from robot_rl.distill import DistillConfig
    from robot_rl.export import load_policy
    from robot_rl.finetune.onestep import distill_chunked

    res = _results(args)
    style, n = args.finetune_style, args.finetune_demos
    dsrl = res.get(f"finetune/push/{style}/{n}/dsrl")
    run = Path(dsrl["run"] if dsrl else res[f"bc/push/{style}/{n}/bc-flow"]["run"])
    _, report = distill_chunked(DistillConfig(run=run, hidden=(256, 256), iterations=6,
                                              num_envs=16, grad_steps=2000, batch_size=256,
                                              dr="off", eval_episodes=args.eval_episodes,
                                              progress=False), Console(file=sys.stderr))
    lat = {}
    for which in ("teacher", "student"):
        out = args.out / "artifacts" / f"{run.name}-{which}"
        export_cmd(ExportConfig(run=run, policy=which, out=out))  # type: ignore[arg-type]
        lat[which] = _latency(load_policy(out), args.latency_calls)
    assert report.teacher is not None and report.student is not None
    _save(args, f"student/{run.name}", {
        "teacher_success": report.teacher.success_rate,
        "student_success": report.student.success_rate,
        "teacher_p50_us": lat["teacher"][0], "teacher_p99_us": lat["teacher"][1],
        "student_p50_us": lat["student"][0], "student_p99_us": lat["student"][1]})
    table(args, console)


def _latency(policy: Any, calls: int) -> tuple[float, float]:
    """p50 / p99 [us] of one chunk call of the exported graph (onnxruntime, one sample)."""
    rng = np.random.default_rng(0)
    hist = rng.standard_normal((1, policy.obs_history, policy.obs_dim)).astype(np.float32)
    times = []
    for i in range(calls + 100):
        t0 = time.perf_counter()
        policy.chunk(hist)
        if i >= 100:
            times.append(time.perf_counter() - t0)
    return float(np.percentile(times, 50) * 1e6), float(np.percentile(times, 99) * 1e6)


def main(args: Args) -> None:
    console = Console()
    {"data": part_data, "bc": part_bc, "finetune": part_finetune, "student": part_student,
     "table": table}[args.part](args, console)


if __name__ == "__main__":
    main(tyro.cli(Args))
