"""The safety critic at work: constraint cost paid during training on reach_hazard.

    python benchmarks/safety.py                     # off, lagrangian, gate; 300 s each
    python benchmarks/safety.py --modes off gate --budget 600

reach_hazard puts a hazard sphere on the straight path to the target (cost 1 per step inside;
the shield does not know it). Each mode trains for the same wall-clock budget, one after the
other, same seed. Reported: cumulative constraint cost of all training transitions, final
evaluation success and episode cost, and the two targets of the issue: cumulative cost of a
safe mode <= 1/5 of off's, at >= 90% of off's final success.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import tyro
from rich.console import Console
from rich.table import Table

from robot_rl.plot import plot_curves
from robot_rl.runner import Runner
from robot_rl.train_config import TrainConfig


@dataclasses.dataclass(kw_only=True)
class Args:
    """Cumulative training cost on reach_hazard: safety off vs lagrangian vs gate."""

    modes: tuple[str, ...] = ("off", "lagrangian", "gate")
    """Safety modes to train, in order (off first: the others are compared to it)."""
    budget: float = 300.0
    """Wall-clock training budget per mode [s]."""
    task: str = "reach_hazard"
    """Task with a hazard."""
    out: Path = Path("runs/bench/safety")
    """Folder of the runs and the figure."""
    seed: int = 0
    """Seed of every run."""


def main(args: Args) -> None:
    console = Console(width=max(120, Console().width))
    results: dict[str, list[dict[str, float]]] = {}
    for mode in args.modes:
        console.print(f"[bold]{args.task}: safety {mode}[/bold] ({args.budget:g} s)")
        cfg = TrainConfig(task=args.task, safety=mode, time_budget=args.budget,  # type: ignore[arg-type]
                          eval_every=16_000, runs_dir=args.out, run_name=mode, seed=args.seed,
                          save_replay=False, checkpoint_every=1e9, progress=False)
        results[mode] = Runner(cfg).train()
    png = plot_curves(args.out / "safety.png", list(results.items()),
                      title=f"{args.task}: eval success and episode cost")

    base = results.get("off")
    table = Table(title=f"{args.task}: {args.budget:g} s of training per mode, one run each",
                  title_justify="left")
    for col in ("safety", "env steps", "final success", "eval episode cost",
                "cumulative training cost", "cost / off", "success / off", "target met"):
        table.add_column(col, justify="left" if col == "safety" else "right")
    for mode, hist in results.items():
        last = hist[-1]
        cost_ratio = success_ratio = None
        if base is not None and mode != "off":
            off = base[-1]
            cost_ratio = last["train_cumulative_cost"] / max(off["train_cumulative_cost"], 1e-9)
            success_ratio = last["success_rate"] / max(off["success_rate"], 1e-9)
        met = "" if cost_ratio is None or success_ratio is None else \
            ("yes" if cost_ratio <= 0.2 and success_ratio >= 0.9 else "no")
        table.add_row(mode, f"{last['env_steps']:,.0f}", f"{last['success_rate']:.0%}",
                      f"{last['episode_cost']:.2f}", f"{last['train_cumulative_cost']:,.0f}",
                      "" if cost_ratio is None else f"{cost_ratio:.2f}",
                      "" if success_ratio is None else f"{success_ratio:.2f}", met)
    console.print(table)
    console.print("target: a safe mode's cumulative cost <= 0.20 of off's at >= 0.90 of its "
                  f"final success.  curves: {png}")


if __name__ == "__main__":
    main(tyro.cli(Args))
