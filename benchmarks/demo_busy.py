"""``make demo`` as a new user meets it on a shared machine: each run with other processes busy.

    python benchmarks/demo_busy.py                       # 5 runs, about 25 minutes on 2 cores
    python benchmarks/demo_busy.py --seeds 0 --busy 0    # one run on an idle machine

For each seed it starts ``--busy`` processes that spin on a core each, runs ``make demo
DEMO_SEED=<seed>`` from the repository root with its output in ``<out>/seed<seed>.log``, stops
the busy processes, and reads from the log: why training stopped (the target success, the
env-step cap or the time budget), its env steps and seconds, the teacher's evaluation, the
student over the teacher, the exported artifact's success under domain randomization (the
figure the demo promises: >= 95%), and the whole demo's wall clock (the target: 10 minutes).
``make demo`` reinstalls nothing when the environment is set up. The table and
``results.json`` go to ``<out>``. Run it alone: another learner or benchmark on the machine
adds to the load it sets.
"""

from __future__ import annotations

import dataclasses
import json
import multiprocessing as mp
import re
import subprocess
import time
from pathlib import Path

import tyro
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent


@dataclasses.dataclass
class Args:
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    """DEMO_SEED of each run (make demo's default is 0)."""
    busy: int = 1
    """Processes spinning on a core each while the demo runs (0: an idle machine)."""
    out: Path = Path("runs/bench/demo_busy")
    """Folder of the logs, the table and results.json."""
    limit: float = 600.0
    """The demo's wall-clock target [s]."""
    target: float = 0.95
    """The artifact's success target."""
    from_logs: bool = False
    """Run nothing: the table from the logs and results.json of an earlier run in ``out``
    (its statuses and wall clocks)."""


def _spin() -> None:
    while True:
        pass


# the stop line wraps at the log's width (its checkpoint path is on a line of its own)
_STOP = re.compile(r"stopped:\s+(.+?)\.\s+([\d,]+)\s+env\s+steps\s+in\s+(\d+)\s+s;\s+last\s+eval"
                   r"\s+success\s+(\d+)%", re.S)
_SUCCESS = re.compile(r"success rate\s*\S\s*([\d.]+)%")
_CHECK = re.compile(r"success ([\d.]+)% (?:meets|is below) the required")
_RATIO = re.compile(r"student / teacher\s*\S\s*([\d.]+)")


def parse_demo_log(text: str) -> dict[str, object]:
    """What one ``make demo`` log says: training's stop reason, env steps, seconds and last
    evaluation; the teacher's evaluation (the first ``robot-rl eval``), the student over the
    teacher, and the exported artifact's success (its ``--min-success`` check). Missing:
    None."""
    out: dict[str, object] = {"stop": None, "env_steps": None, "train_s": None,
                              "train_success": None, "teacher_success": None,
                              "student_over_teacher": None, "artifact_success": None}
    if m := _STOP.search(text):
        out.update(stop=" ".join(m.group(1).split()), env_steps=int(m.group(2).replace(",", "")),
                   train_s=int(m.group(3)), train_success=int(m.group(4)) / 100)
    if m := _SUCCESS.search(text):
        out["teacher_success"] = float(m.group(1)) / 100
    if m := _CHECK.search(text):
        out["artifact_success"] = float(m.group(1)) / 100
    if m := _RATIO.search(text):
        out["student_over_teacher"] = float(m.group(1))
    return out


def run_demo(seed: int, busy: int, log: Path) -> tuple[int, float]:
    """``make demo DEMO_SEED=seed`` with ``busy`` spinning processes; (status, seconds)."""
    spinners = [mp.Process(target=_spin, daemon=True) for _ in range(busy)]
    for p in spinners:
        p.start()
    t0 = time.perf_counter()
    try:
        with open(log, "w") as f:
            status = subprocess.run(["make", "demo", f"DEMO_SEED={seed}"], cwd=ROOT,
                                    stdout=f, stderr=subprocess.STDOUT).returncode
    finally:
        for p in spinners:
            p.terminate()
            p.join()
    return status, time.perf_counter() - t0


def _short_stop(reason: object) -> str:
    """A stop reason for the table: 'target 97% x2', 'env steps', 'time budget'."""
    text = str(reason)
    if m := re.match(r"target success (\d+)% reached(?: in (\d+) evaluations)?", text):
        return f"target {m.group(1)}% x{m.group(2) or 1}"
    return {"total_steps reached": "env steps"}.get(text, text)


def _pct(x: object) -> str:
    return "-" if x is None else f"{float(x):.1%}"  # type: ignore[arg-type]


def main(args: Args) -> None:
    console = Console(width=max(132, Console().width))  # a log file gets the whole table
    out = args.out if args.out.is_absolute() else ROOT / args.out
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    earlier = {}
    if args.from_logs:
        saved = json.loads((out / "results.json").read_text())
        args = dataclasses.replace(args, busy=saved["busy"])
        earlier = {r["seed"]: r for r in saved["runs"]}
    for i, seed in enumerate(args.seeds):
        log = out / f"seed{seed}.log"
        if args.from_logs:
            status, seconds = earlier[seed]["status"], earlier[seed]["seconds"]
        else:
            console.print(f"[{i + 1}/{len(args.seeds)}] make demo DEMO_SEED={seed} with "
                          f"{args.busy} busy process(es); log: {log}", highlight=False,
                          soft_wrap=True)
            status, seconds = run_demo(seed, args.busy, log)
        row = {"seed": seed, "status": status, "seconds": seconds,
               **parse_demo_log(log.read_text())}
        art = row["artifact_success"]
        row["met"] = status == 0 and art is not None and float(art) >= args.target \
            and seconds <= args.limit  # type: ignore[arg-type]
        rows.append(row)
        console.print(f"    status {status}, {seconds:.0f} s, artifact success "
                      f"{_pct(art)}", highlight=False)
    (out / "results.json").write_text(json.dumps({"busy": args.busy, "runs": rows},
                                                 indent=2) + "\n")
    table = Table(title=f"make demo with {args.busy} other busy process(es) on "
                        f"{mp.cpu_count()} cores (targets: artifact >= {args.target:.0%}, "
                        f"<= {args.limit:.0f} s)", title_justify="left")
    for col in ("seed", "training stopped", "env steps", "train s", "teacher eval",
                "student / teacher", "artifact (dr default)", "make demo s", "met"):
        table.add_column(col, justify="left" if col == "training stopped" else "right")
    for r in rows:
        table.add_row(str(r["seed"]), _short_stop(r["stop"]),
                      "-" if r["env_steps"] is None else f"{r['env_steps']:,}",
                      str(r["train_s"]), _pct(r["teacher_success"]),
                      "-" if r["student_over_teacher"] is None
                      else f"{r['student_over_teacher']:.3f}",
                      _pct(r["artifact_success"]), f"{r['seconds']:.0f}",
                      "yes" if r["met"] else "no")
    console.print(table)
    met = sum(bool(r["met"]) for r in rows)
    console.print(f"{met} of {len(rows)} runs met both targets; logs and results.json in {out}")


if __name__ == "__main__":
    main(tyro.cli(Args))
