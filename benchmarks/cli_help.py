"""How long ``robot-rl COMMAND --help`` takes, for every command, as a person starts it: a
fresh process of the installed entry point, stdout to a pipe.

    python benchmarks/cli_help.py                 # ~1 min on 2 cores
    python benchmarks/cli_help.py --repeats 5 --commands train "sim rollout"

Each figure is the median of ``--repeats`` runs of wall-clock time (process start to exit).
``python -c pass`` and ``robot-rl --help`` (which imports no command) are the floor they
are compared with. Run it alone on the machine: a second job beside it slows every figure.
"""

from __future__ import annotations

import dataclasses
import statistics
import subprocess
import sys
import time
from pathlib import Path

import tyro
from rich.console import Console
from rich.table import Table

from robot_rl.cli import every_command


@dataclasses.dataclass(kw_only=True)
class Config:
    repeats: int = 3
    """Runs per command; the median is reported."""
    commands: tuple[str, ...] = ()
    """Commands to time (``train``, ``"sim info"``; default: every command)."""
    limit: float = 1.0
    """The target [s]; rows over it are marked."""


def seconds(argv: list[str], repeats: int) -> float:
    """Median wall-clock seconds of running ``argv`` to its end."""
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True)
        runs.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr[-500:]}")
    return statistics.median(runs)


def main(cfg: Config) -> None:
    # the entry point beside this interpreter (the .venv's), as `make setup` installs it
    entry = str(Path(sys.executable).with_name("robot-rl"))
    if not Path(entry).is_file():
        sys.exit(f"{entry} is not installed (make setup)")
    console = Console()
    commands = [tuple(c.split()) for c in cfg.commands] or every_command()
    floor = seconds([sys.executable, "-c", "pass"], cfg.repeats)
    top = seconds([entry, "--help"], cfg.repeats)
    table = Table(title=f"robot-rl COMMAND --help, median of {cfg.repeats} (python -c pass "
                        f"{floor:.2f} s, robot-rl --help {top:.2f} s)", title_justify="left")
    for col in ("command", "seconds", f"under {cfg.limit:g} s"):
        table.add_column(col, justify="right" if col != "command" else "left")
    times = {}
    for words in commands:
        times[words] = seconds([entry, *words, "--help"], cfg.repeats)
        table.add_row(" ".join(words), f"{times[words]:.2f}",
                      "yes" if times[words] < cfg.limit else "[bold red]no[/]")
    console.print(table)
    worst = max(times, key=times.__getitem__)
    console.print(f"slowest: {' '.join(worst)} {times[worst]:.2f} s; median "
                  f"{statistics.median(times.values()):.2f} s; "
                  f"{sum(t < cfg.limit for t in times.values())}/{len(times)} under "
                  f"{cfg.limit:g} s")


if __name__ == "__main__":
    main(tyro.cli(Config))
