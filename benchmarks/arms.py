"""The tasks on every built-in arm: make demo's SAC recipe and budget on reach for arm7, ur6
and so5, push on ur6 and lift on so5; then each policy evaluated under randomization.

    python benchmarks/arms.py                                  # ~40 min on 2 cores
    python benchmarks/arms.py --runs reach:so5 --budget 300
    python benchmarks/arms.py --reuse                          # evaluate finished runs again

Each run is ``robot-rl train --task TASK --env.robot ARM`` with make demo's flags (its
128-unit networks, two gradient steps per 16 env steps, the motion profile, on reach its
joint-speed penalty, two evaluations in a row at 97% to stop, ``--budget`` seconds), one
after another; push and lift keep their own reward weights. ``results.json`` keeps every
run's row across invocations. The table's success is the deterministic actor behind the gate over
``--episodes`` episodes with ``--dr`` randomization (the demo's check: ``robot-rl eval
RUN/export --dr default``), with the shield layers' interventions per episode.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import subprocess
import sys
import time
from pathlib import Path

import tyro
from rich.console import Console
from rich.table import Table

from robot_rl.bench.markdown import table_markdown

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sac_reach import demo_env_flags, demo_flags  # noqa: E402


@dataclasses.dataclass(kw_only=True)
class Args:
    runs: tuple[str, ...] = ("reach:arm7", "reach:ur6", "reach:so5", "push:ur6", "lift:so5")
    """TASK:ARM pairs, trained one after another."""
    budget: float = 450.0
    """Training seconds of each run (make demo's DEMO_BUDGET)."""
    episodes: int = 256
    """Evaluation episodes of each policy."""
    dr: str = "default"
    """Randomization preset of the evaluation."""
    seed: int = 0
    out: Path = Path("runs/bench/arms")
    """Runs and the table (table.md)."""
    reuse: bool = False
    """Evaluate runs already in --out instead of training them again."""


def train(task: str, arm: str, args: Args) -> float:
    """Train one run with make demo's recipe; its wall clock [s]."""
    cmd = [sys.executable, "-m", "robot_rl.cli", "train", "--task", task, "--env.robot", arm,
           "--seed", str(args.seed), "--total-steps", "400000", "--time-budget",
           str(args.budget), "--target-success", "0.97", "--target-evals", "2",
           "--eval-episodes", "64", "--eval-every", "10000", *demo_flags(),
           *(demo_env_flags() if task == "reach" else ["--env.motion.enabled"]),
           "--runs-dir", str(args.out), "--run-name", f"{task}_{arm}", "--no-progress"]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True)
    return time.perf_counter() - t0


def evaluate(run: Path, args: Args) -> dict[str, float]:
    """The run's actor (behind its gate) over ``args.episodes`` randomized episodes."""
    from robot_rl.evaluate import evaluate_agent
    from robot_rl.runner import load_agent, make_train_env

    agent, cfg, _ = load_agent(run / "checkpoints" / "latest.pt")
    env = make_train_env(cfg, 32, args.seed + 50_000, dr=args.dr)  # type: ignore[arg-type]
    res = evaluate_agent(agent, env, args.episodes, seed=args.seed + 50_000)
    shield = sum(v for k, v in res.interventions.items() if k != "nan_guard")
    return {"success": res.success_rate, "cost": res.cost_mean, "shield": shield,
            "length": res.length_mean}


def main(args: Args) -> None:
    console = Console(width=max(120, Console().width))
    args.out.mkdir(parents=True, exist_ok=True)
    table = Table(title=f"robot_rl tasks on each arm: make demo's recipe, {args.budget:g} s "
                        f"budget; {args.episodes} eval episodes, dr {args.dr}")
    for col in ("task", "arm", "env steps", "train s", "stop", "last train eval",
                f"success (dr {args.dr})", "episode cost", "shield steps / episode"):
        table.add_column(col)
    saved = args.out / "results.json"
    rows = json.loads(saved.read_text()) if saved.is_file() else []
    for pair in args.runs:
        task, arm = pair.split(":")
        run = args.out / f"{task}_{arm}"
        wall = None
        if not (args.reuse and (run / "checkpoints" / "latest.pt").is_file()):
            console.print(f"[bold]train {task} on {arm}[/bold]")
            wall = train(task, arm, args)
        curve = list(csv.DictReader(open(run / "eval.csv")))
        last = curve[-1]
        stop = "target" if len(curve) >= 2 and all(float(r["success_rate"]) >= 0.97
                                                    for r in curve[-2:]) else "budget"
        got = evaluate(run, args)
        row = {"task": task, "arm": arm, "env_steps": int(float(last["env_steps"])),
               "train_s": float(last["seconds"]), "wall_s": wall, "stop": stop,
               "last_train_eval": float(last["success_rate"]), **got}
        rows = [r for r in rows if (r["task"], r["arm"]) != (task, arm)] + [row]
        table.add_row(task, arm, f"{row['env_steps']:,}", f"{row['train_s']:.0f}", stop,
                      f"{row['last_train_eval']:.1%}", f"{got['success']:.1%}",
                      f"{got['cost']:.2f}", f"{got['shield']:.1f}")
        console.print(f"  {task} on {arm}: {got['success']:.1%} success over "
                      f"{args.episodes} episodes (dr {args.dr})")
        saved.write_text(json.dumps(rows, indent=1))
    console.print(table)
    (args.out / "table.md").write_text(table_markdown(table))
    console.print(f"table: {args.out / 'table.md'}")


if __name__ == "__main__":
    main(tyro.cli(Args))
