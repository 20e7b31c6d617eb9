"""Scale-out on Ray: env steps collected by env-runners, and the learner's update rate.

    python benchmarks/online.py --part scale         # about 12 minutes here
    python benchmarks/online.py --part reach         # reach to 95%: one process vs 2 runners

Scale (reach, 16 envs per runner, the default SAC with its safety critic; each row trains
for ``--seconds`` of wall clock and reads the learner's totals, ``dist_stats.json``):

  one process        ``Runner``: the single-process loop (env step, act, store, learn)
  Ray, N runners     ``robot-rl train --ray local --env-runners N``: a learner actor and N
                     env-runner actors of 1 thread each on this machine
  Ray cluster        the same on a ``ray.cluster_utils.Cluster`` of two nodes (processes on
                     this machine: it shows placement and transport, not more cores)

each with collection only (``--sac.updates-per-step 0``) and with learning (1 update per
vector step of 16 envs, the config's update-to-data ratio). The learner's updates/s alone
(no actors, a filled buffer) are the reference for "with actors feeding it".

Reach: wall clock until an evaluation reaches 95% success, in one process and with 2
env-runners (same config, seed and update-to-data ratio).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

import torch
import tyro
from rich.console import Console
from rich.table import Table

from robot_rl.dist.learner import DIST_STATS
from robot_rl.ray_options import RayOptions
from robot_rl.runner import Runner, TrainConfig


@dataclasses.dataclass
class Args:
    part: Literal["scale", "reach"] = "scale"
    seconds: float = 40.0
    """Scale: wall clock of each row's training [s]."""
    runners: tuple[int, ...] = (1, 2, 4)
    """Scale: env-runner counts on this machine."""
    cluster_runners: tuple[int, ...] = (2, 4)
    """Scale: env-runner counts on the two-node cluster."""
    num_envs: int = 16
    """Envs per runner (and of the single process)."""
    reach_budget: float = 900.0
    """Reach: wall-clock budget of each run [s]."""
    out: Path | None = None
    """Also write the rows as JSON here."""


def _cfg(tmp: Path, name: str, args: Args, learn: bool, **kw: Any) -> TrainConfig:
    base = TrainConfig(task="reach", num_envs=args.num_envs, total_steps=10**9,
                       time_budget=args.seconds, eval_every=10**9, eval_episodes=4,
                       checkpoint_every=10**9, save_replay=False, runs_dir=tmp, run_name=name,
                       progress=False, dist=RayOptions(collect_steps=16))
    sac = dataclasses.replace(base.sac, updates_per_step=1 if learn else 0,
                              learning_starts=0 if not learn else base.sac.learning_starts)
    return dataclasses.replace(base, sac=sac, **kw)


def learner_alone(tmp: Path, args: Args, updates: int = 300) -> float:
    """Updates/s of the learner on a filled buffer, nothing else running."""
    runner = Runner(_cfg(tmp, "alone", args, learn=True), console=Console(quiet=True))
    n, D, A = 20_000, runner.env.obs_dim, runner.env.act_dim
    runner.buffer.add(torch.randn(n, D), torch.rand(n, A) * 2 - 1, torch.randn(n),
                      torch.zeros(n), torch.randn(n, D), torch.zeros(n))
    runner.agent.observe(torch.randn(n, D))
    for _ in range(20):
        runner.learn()
    t0 = time.perf_counter()
    for _ in range(updates):
        runner.learn()
    return updates / (time.perf_counter() - t0)


def one_process(tmp: Path, args: Args, learn: bool) -> dict[str, float]:
    runner = Runner(_cfg(tmp, f"single_{learn}", args, learn), console=Console(quiet=True))
    runner.train()
    return {"env_steps_per_second": runner.env_steps / runner.elapsed,
            "updates_per_second": runner.agent.updates / runner.elapsed}


def on_ray(tmp: Path, args: Args, n: int, learn: bool, where: str) -> dict[str, float]:
    from robot_rl.dist.cluster import train_on_ray

    # a fresh run directory per row (one that holds a checkpoint would be resumed)
    name = f"ray{n}_{learn}_{where.replace(' ', '_')}"
    cfg = _cfg(tmp, name, args, learn, ray="auto", env_runners=n)
    _, run_dir = train_on_ray(cfg, Console(quiet=True))
    return json.loads((run_dir / DIST_STATS).read_text())


def scale(args: Args, console: Console) -> list[dict[str, Any]]:
    import ray
    from ray.cluster_utils import Cluster

    rows: list[dict[str, Any]] = []
    tmp = Path(tempfile.mkdtemp(prefix="online_bench_"))

    def add(where: str, n: int | str, learn: bool, r: dict[str, float]) -> None:
        row = {"where": where, "runners": n, "learning": learn,
               "env_steps_per_second": r["env_steps_per_second"],
               "updates_per_second": r["updates_per_second"],
               "runner_env_steps_per_second": r.get("runner_env_steps_per_second"),
               "wait_seconds": r.get("wait_seconds"), "learn_seconds": r.get("learn_seconds"),
               "seconds": r.get("seconds", args.seconds)}
        rows.append(row)
        console.print(f"{where:>12} {n!s:>3} runners, learning {learn!s:5}: "
                      f"{row['env_steps_per_second']:8,.0f} env steps/s, "
                      f"{row['updates_per_second']:6.1f} updates/s", highlight=False)

    try:
        alone = learner_alone(tmp, args)
        rows.append({"where": "learner alone", "updates_per_second": alone})
        console.print(f"learner alone: {alone:.1f} updates/s", highlight=False)
        for learn in (False, True):
            add("one process", "-", learn, one_process(tmp, args, learn))
        # Ray on this machine: logical CPUs as many as the actors reserve (they share cores)
        need = max(args.runners) + 1
        ray.init(address="local", num_cpus=max(need, os.cpu_count() or 1),
                 include_dashboard=False, log_to_driver=False)
        for n in args.runners:
            for learn in (False, True):
                add("ray local", n, learn, on_ray(tmp, args, n, learn, "local"))
        ray.shutdown()
        # two Ray nodes (processes on this machine), the runners spread over them
        half = max(max(args.cluster_runners) // 2, 1) + 1
        cluster = Cluster(initialize_head=True, head_node_args={
            "num_cpus": half, "include_dashboard": False})
        cluster.add_node(num_cpus=half)
        ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
        cluster.wait_for_nodes()
        try:
            for n in args.cluster_runners:
                for learn in (False, True):
                    add("ray 2 nodes", n, learn, on_ray(tmp, args, n, learn, "nodes"))
        finally:
            ray.shutdown()
            cluster.shutdown()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    t = Table(title=f"scale-out on Ray: reach, {args.num_envs} envs per runner, "
                    f"{args.seconds:g} s per row, {os.cpu_count()} cores")
    for c in ("where", "runners", "learning", "env steps/s", "per runner while collecting",
              "updates/s", "learner waited", "learner busy"):
        t.add_column(c, justify="right")
    for r in rows:
        if r["where"] == "learner alone":
            t.add_row("learner alone", "-", "yes", "-", "-", f"{r['updates_per_second']:.1f}",
                      "-", "-")
            continue
        per = r["runner_env_steps_per_second"]
        wait, busy = r["wait_seconds"], r["learn_seconds"]
        t.add_row(r["where"], str(r["runners"]), "yes" if r["learning"] else "no",
                  f"{r['env_steps_per_second']:,.0f}",
                  "-" if per is None else f"{per:,.0f}",
                  f"{r['updates_per_second']:.1f}",
                  "-" if wait is None else f"{wait / r['seconds']:.0%}",
                  "-" if busy is None else f"{busy / r['seconds']:.0%}")
    console.print(t)
    return rows


def reach(args: Args, console: Console) -> list[dict[str, Any]]:
    rows = []
    tmp = Path(tempfile.mkdtemp(prefix="online_reach_"))
    try:
        for n in (0, 2):
            cfg = TrainConfig(task="reach", time_budget=args.reach_budget, target_success=0.95,
                              eval_every=20_000, runs_dir=tmp, run_name=f"reach{n}",
                              progress=False)
            t0 = time.perf_counter()
            if n == 0:
                runner = Runner(cfg)
                history = runner.train()
            else:
                from robot_rl.dist.cluster import train_on_ray

                history, _ = train_on_ray(dataclasses.replace(cfg, ray="local",
                                                              env_runners=n))
            wall = time.perf_counter() - t0
            hit = next((h for h in history if h["success_rate"] >= 0.95), None)
            rows.append({"runners": n, "reached": hit is not None,
                         "seconds": None if hit is None else hit["seconds"],
                         "env_steps": None if hit is None else hit["env_steps"],
                         "best": max(h["success_rate"] for h in history), "wall": wall})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    t = Table(title="reach to 95% success: one process vs env-runners on Ray "
                    f"({os.cpu_count()} cores)")
    for c in ("collection", "reached 95%", "training seconds", "env steps", "best", "wall"):
        t.add_column(c, justify="right")
    for r in rows:
        t.add_row("one process" if r["runners"] == 0 else f"{r['runners']} env-runners",
                  "yes" if r["reached"] else "no",
                  "-" if r["seconds"] is None else f"{r['seconds']:.0f}",
                  "-" if r["env_steps"] is None else f"{r['env_steps']:,.0f}",
                  f"{r['best']:.0%}", f"{r['wall']:.0f} s")
    console.print(t)
    return rows


def main() -> None:
    args = tyro.cli(Args)
    console = Console(width=max(Console().width, 130))
    rows = scale(args, console) if args.part == "scale" else reach(args, console)
    if args.out is not None:
        args.out.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
