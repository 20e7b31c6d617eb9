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
* **finetune** (push): flow-BC of ``--finetune-demos`` ``--finetune-style`` demos then
  ``robot-rl dsrl`` for ``--budget`` seconds; RLPD (``robot-rl finetune --method rlpd``) from
  ``--rlpd-style`` demos with a BC warm start and critic warm-up, to 90% or the budget; SAC
  from scratch to 3x RLPD's env steps to 80% (or the budget). Env steps and seconds to
  80/90/95% success, first/best/final success, cumulative training cost and its rate per
  1,000 env steps. Targets: fine-tuning >= 95% within 300k env steps and 30 min with
  training cost no higher than SAC's; RLPD 80% in <= 1/3 of SAC's env steps.
* **student**: ``robot-rl distill`` of the fine-tuned (or the BC) flow policy into a
  one-step student; success of both and single-call latency of the exported graphs
  (onnxruntime, one thread, p50/p99 over ``--latency-calls`` in a process of its own, the
  median of three: ``robot_rl.bench.latency``). Target: student >= 95% of
  its teacher's success, >= 10x lower latency, <= 50 us p99.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any, Literal

import tyro
from rich.console import Console
from rich.table import Table

from robot_rl.bench.latency import chunk_latency
from robot_rl.bench.learning import curve_summary

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
    finetune_style: str = "multimodal"
    methods: tuple[str, ...] = ("dsrl", "rlpd", "sac")
    """finetune: the learners, one after the other."""
    rlpd_style: str = "scripted"
    """finetune: expert style of RLPD's demonstrations (its Gaussian actor has one mode)."""
    rlpd_bc_steps: int = 5_000
    """finetune: RLPD's behaviour-cloning warm start of the actor [gradient steps]."""
    rlpd_critic_warmup: int = 5_000
    """finetune: RLPD's critic-only steps on the demos after the warm start."""
    student_hidden: tuple[int, ...] = (128,)
    """student: the one-step student's width and depth (width W, len - 1 residual blocks)."""
    student_iterations: int = 8
    """student: DAgger iterations of the distillation."""
    student_grad_steps: int = 2000
    """student: gradient steps per DAgger iteration."""
    latency_calls: int = 10_000
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
    from robot_rl.recording.config import RecordConfig
    from robot_rl.recording.record import record

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
    from robot_rl.bc import BCRunner
    from robot_rl.bc.config import BCConfig
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
    finetune_table(res, console)
    student_table(res, console)


def _table(title: str, columns: tuple[str, ...]) -> Table:
    """A table whose first column is left-aligned and the rest right-aligned."""
    t = Table(title=title, title_justify="left")
    for i, col in enumerate(columns):
        t.add_column(col, justify="left" if i == 0 else "right")
    return t


def finetune_table(res: dict[str, Any], console: Console) -> None:
    rows = {k: v for k, v in res.items() if k.startswith("finetune/")}
    if not rows:
        return
    t = _table("fine-tuning on push: env steps (seconds) to success, 32 evaluation episodes",
               ("learner", "start", "to 80%", "to 90%", "to 95%", "best", "final",
                "env steps", "seconds", "training cost", "cost / 1k steps"))

    def to(v: dict[str, Any], pct: int) -> str:
        n = v.get(f"env_steps_to_{pct}")
        return f"> {v['env_steps']:,.0f}" if n is None else \
            f"{n:,.0f} ({v[f'seconds_to_{pct}']:.0f} s)"

    for k, v in rows.items():
        _, _, style, n, method = k.split("/")
        label = "SAC from scratch" if method == "sac" else \
            f"{'flow-BC + DSRL' if method == 'dsrl' else method.upper()}, {n} {style} demos"
        t.add_row(label, f"{v['first_success']:.0%}", to(v, 80),
                  to(v, 90), to(v, 95), f"{v['best_success']:.0%}",
                  f"{v['final_success']:.0%}", f"{v['env_steps']:,.0f}",
                  f"{v['seconds']:.0f}", f"{v['train_cost']:,.0f}",
                  f"{v['cost_per_1k_steps']:.2f}")
    console.print(t)


def student_table(res: dict[str, Any], console: Console) -> None:
    rows = {k: v for k, v in res.items() if k.startswith("student/")}
    if not rows:
        return
    t = _table("one-step student vs its teacher: success and one chunk call (onnxruntime, "
               "1 thread)", ("run", "teacher", "student", "kept", "teacher p50 / p99 [us]",
                            "student p50 / p99 [us]", "speed-up (p50)"))
    for k, v in rows.items():
        kept = v["student_success"] / max(v["teacher_success"], 1e-9)
        t.add_row(k.split("/", 1)[1], f"{v['teacher_success']:.0%}",
                  f"{v['student_success']:.0%}", f"{kept:.1%}",
                  f"{v['teacher_p50_us']:.0f} / {v['teacher_p99_us']:.0f}",
                  f"{v['student_p50_us']:.1f} / {v['student_p99_us']:.1f}",
                  f"{v['teacher_p50_us'] / v['student_p50_us']:.1f}x")
    console.print(t)


def part_data(args: Args, console: Console) -> None:
    for task in args.tasks:
        for style in args.styles:
            dataset(args, task, style, console)


def part_finetune(args: Args, console: Console) -> None:
    from robot_rl.finetune import DSRLRunner, FinetuneRunner
    from robot_rl.finetune.configs import DSRLConfig, FinetuneConfig
    from robot_rl.runner import Runner
    from robot_rl.sim import make_task_config
    from robot_rl.train_config import TrainConfig

    style, n = args.finetune_style, args.finetune_demos
    common: dict[str, Any] = dict(
        time_budget=args.budget, eval_every=20_000, eval_episodes=32,
        runs_dir=args.out / "runs", save_replay=False, checkpoint_every=1e9, progress=False,
        seed=args.seed)
    env = make_task_config("push", episode_length=EPISODE_LENGTH["push"])
    for method in args.methods:
        demo_style = "none" if method == "sac" else args.rlpd_style if method == "rlpd" else style
        cell = f"finetune/push/{demo_style}/{0 if method == 'sac' else n}/{method}"
        if cell in _results(args) and not args.redo:
            continue
        console.print(f"[bold]{cell}[/bold]: up to {args.budget:g} s")
        if method == "dsrl":  # of the flow-BC cell of the same demonstrations
            key = f"bc/push/{style}/{n}/bc-flow"
            if key not in _results(args):
                _save(args, key, bc_cell(args, "push", style, n, "bc-flow", console))
            runner: Runner = DSRLRunner(DSRLConfig(policy=Path(_results(args)[key]["run"]),
                                                   target_success=0.95,
                                                   run_name=f"push-{style}-{n}-dsrl",
                                                   **common), console=Console(file=sys.stderr))
        elif method == "rlpd":  # RLPD's recipe: 4 envs, UTD 2, 10 LayerNorm critics, warm start
            runner = FinetuneRunner(FinetuneConfig(
                demos=dataset(args, "push", args.rlpd_style, console), task="push", env=env,
                method="rlpd", max_episodes=n, bc_steps=args.rlpd_bc_steps,
                critic_warmup=args.rlpd_critic_warmup, target_success=0.9,
                run_name=f"push-{args.rlpd_style}-{n}-rlpd",
                **{**common, "eval_every": 5_000}),  # UTD 2: ~10x fewer env steps/s
                console=Console(file=sys.stderr))
        else:
            # SAC from scratch runs until 3x the env steps RLPD took to 80% (enough to
            # tell the target) or the budget
            rlpd = _results(args).get(f"finetune/push/{args.rlpd_style}/{n}/rlpd", {})
            steps = 3 * rlpd["env_steps_to_80"] if rlpd.get("env_steps_to_80") else 2_000_000
            runner = Runner(TrainConfig(task="push", env=env, target_success=0.95,
                                        run_name="push-sac", total_steps=steps, **common),
                            console=Console(file=sys.stderr))
        runner.train()
        _save(args, cell, curve_summary(runner.run_dir))
    table(args, console)


def part_student(args: Args, console: Console) -> None:
    from robot_rl.distill.chunked import distill_chunked
    from robot_rl.distill.configs import DaggerConfig, DistillConfig
    from robot_rl.kinds.base import ExportConfig
    from robot_rl.kinds.export import export_path

    res = _results(args)
    style, n = args.finetune_style, args.finetune_demos
    dsrl = res.get(f"finetune/push/{style}/{n}/dsrl")
    run = Path(dsrl["run"] if dsrl else res[f"bc/push/{style}/{n}/bc-flow"]["run"])
    dagger = DaggerConfig(iterations=args.student_iterations, num_envs=16,
                          grad_steps=args.student_grad_steps, batch_size=256, dr="off",
                          eval_episodes=args.eval_episodes, progress=False)
    _, report = distill_chunked(DistillConfig(run=run, hidden=args.student_hidden, dagger=dagger),
                                Console(file=sys.stderr))
    size = f"w{max(args.student_hidden)}x{len(args.student_hidden)}"
    lat = {}
    for which in ("teacher", "student"):
        out = args.out / "artifacts" / f"{run.name}-{which}" / size
        export_path(ExportConfig(run=run, policy=which, out=out))  # type: ignore[arg-type]
        lat[which] = chunk_latency(out, args.latency_calls)
    assert report.teacher is not None and report.student is not None
    _save(args, f"student/{run.name}/{size}", {
        "teacher_success": report.teacher.success_rate,
        "student_success": report.student.success_rate,
        "teacher_p50_us": lat["teacher"][0], "teacher_p99_us": lat["teacher"][1],
        "student_p50_us": lat["student"][0], "student_p99_us": lat["student"][1]})
    table(args, console)


def main(args: Args) -> None:
    console = Console()
    {"data": part_data, "bc": part_bc, "finetune": part_finetune, "student": part_student,
     "table": table}[args.part](args, console)


if __name__ == "__main__":
    main(tyro.cli(Args))
