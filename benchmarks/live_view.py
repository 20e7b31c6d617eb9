"""What watching costs: the deploy loop with telemetry and the live view on vs off, and
recording with the view on vs off (issue 24's figures).

    python benchmarks/live_view.py                       # about 4 minutes
    python benchmarks/live_view.py --seconds 30 --reps 3

deploy   ``robot-rl deploy ARTIFACT --robot sim`` at 500 Hz (the arm simulated in real time in
         a process of its own) for ``--seconds``, five ways: plain, ``--telemetry rerun``
         (into an .rrd file), ``--view`` (MuJoCo's viewer in its own process), ``--view``
         without a display (the scene to Rerun's web viewer: the same hand-over, nothing
         rendered here), and telemetry with the view;
         ``--reps`` runs of each, interleaved. Prints the period error's p50/p99 and the
         overruns and skipped ticks (summed over the runs).
record   ``robot-rl record --teleop expert`` (push, as fast as the simulation goes; the
         recording function in this process) without a view, with MuJoCo's viewer, and with
         the view going to Rerun: frames per second of the recording loop.

The view needs a display: without ``DISPLAY`` the script starts Xvfb (Debian's xvfb; Mesa
renders in software on this machine's CPUs, which a desktop's GPU would not). The artifact
is reach's scripted expert cloned into a student (seconds), unless ``--artifact`` is given.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import tyro
from rich.console import Console
from rich.table import Table

ROBOT_RL = [sys.executable, "-m", "robot_rl.cli"]


@dataclasses.dataclass
class Args:
    seconds: float = 20.0
    """Length of each deploy run [s]."""
    reps: int = 2
    """Runs of each deploy variant (interleaved)."""
    episodes: int = 30
    """Recorded episodes per recording run (push: 200 frames each)."""
    part: str = "all"
    """all, deploy or record."""
    artifact: Path | None = None
    """Exported reach artifact (default: the scripted expert cloned into a student)."""


def clone_artifact(out: Path) -> Path:
    from robot_rl.distill import clone_expert
    from robot_rl.distill.configs import DaggerConfig, DistillConfig
    from robot_rl.export.artifact import artifact_meta, export_artifact

    cfg = DistillConfig(run=Path("-"),
                        dagger=DaggerConfig(iterations=4, grad_steps=300, num_envs=16, dr="off",
                                            progress=False))
    student, env = clone_expert("reach", cfg)
    return export_artifact(out, student, artifact_meta(env, student, None,
                                                       {"source": "expert clone (bench)"}))


def start_xvfb() -> tuple[subprocess.Popen | None, str]:
    if os.environ.get("DISPLAY"):
        return None, os.environ["DISPLAY"]
    if shutil.which("Xvfb") is None:
        raise SystemExit("no DISPLAY and no Xvfb: install xvfb (make setup does)")
    r, w = os.pipe()
    proc = subprocess.Popen(["Xvfb", "-displayfd", str(w), "-screen", "0", "1280x800x24",
                             "-nolisten", "tcp"], pass_fds=(w,), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    os.close(w)
    with os.fdopen(r) as f:
        return proc, f":{f.readline().strip()}"


NO_DISPLAY = "-"
"""A variant run without a display: the live view streams to Rerun's web viewer instead (the
same shared-memory hand-over, no rendering here)."""


def deploy(artifact: Path, flags: list[str], seconds: float, env: dict, tmp: Path) -> dict:
    summary = tmp / "summary.json"
    if NO_DISPLAY in flags:
        flags = [f for f in flags if f != NO_DISPLAY]
        env = {k: v for k, v in env.items() if k != "DISPLAY"}
    out = subprocess.run([*ROBOT_RL, "deploy", str(artifact), "--robot", "sim", "--duration",
                          str(seconds), "--deploy.rate-hz", "500", "--summary-json",
                          str(summary), *flags], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"deploy {flags} failed:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    return json.loads(summary.read_text())


def record(view: str, episodes: int, tmp: Path) -> float:
    """Frames per second of the recording loop (its own wall clock: no start-up); ``view``:
    off, mujoco (the viewer on the display) or rerun (no display: Rerun's web viewer)."""
    from robot_rl.recording.config import RecordConfig
    from robot_rl.recording.record import record as run

    display = os.environ.pop("DISPLAY") if view == "rerun" else None
    try:
            res = run(RecordConfig(task="push", teleop="expert", episodes=episodes, progress=False,
                               out=tmp / f"rec{time.monotonic_ns()}", view=view != "off"),
                  console=Console(quiet=True))
    finally:
        if display is not None:
            os.environ["DISPLAY"] = display
    return res.frames / res.seconds


def main(a: Args) -> None:
    console = Console(width=140)
    xvfb, display = start_xvfb()
    os.environ["DISPLAY"] = display
    env = dict(os.environ)
    try:
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d)
            if a.part in ("all", "deploy"):
                deploy_part(a, console, env, tmp, display)
            if a.part in ("all", "record"):
                record_part(a, console, tmp)
    finally:
        if xvfb is not None:
            xvfb.terminate()


def deploy_part(a: Args, console: Console, env: dict, tmp: Path, display: str) -> None:
    artifact = a.artifact or clone_artifact(tmp / "artifact")
    variants = {"plain": [],
                "telemetry": ["--telemetry", "rerun", "--telemetry-out",
                              str(tmp / "t.rrd")],
                "view": ["--view"],
                "view to Rerun (no rendering)": ["--view", NO_DISPLAY],
                "telemetry + view": ["--telemetry", "rerun", "--telemetry-out",
                                     str(tmp / "t.rrd"), "--view"]}
    runs: dict[str, list[dict]] = {k: [] for k in variants}
    for rep in range(a.reps):
        for name, flags in variants.items():
            console.print(f"deploy {name} ({rep + 1}/{a.reps}), {a.seconds:g} s",
                          markup=False)
            runs[name].append(deploy(artifact, flags, a.seconds, env, tmp))
    table = Table(title=f"deploy loop at 500 Hz on the simulated arm, {a.reps} x "
                        f"{a.seconds:g} s each (display {display})",
                  title_justify="left")
    for col in ("variant", "period error p50 [µs]", "p99 [µs]", "max [µs]",
                "overruns", "skipped ticks", "ticks"):
        table.add_column(col, justify="left" if col == "variant" else "right")
    for name, rs in runs.items():
        p50 = np.mean([r["period_error_us"][0] for r in rs])
        p99 = np.mean([r["period_error_us"][1] for r in rs])
        mx = max(r["period_error_us"][2] for r in rs)
        table.add_row(name, f"{p50:.1f}", f"{p99:.1f}", f"{mx:.0f}",
                      str(sum(r["overruns"] for r in rs)),
                      str(sum(r.get("skipped_ticks", 0) for r in rs)),
                      str(sum(r["ticks"] for r in rs)))
    console.print(table)


def record_part(a: Args, console: Console, tmp: Path) -> None:
    kinds = {"view off": "off", "view (MuJoCo viewer)": "mujoco",
             "view to Rerun (no rendering)": "rerun"}
    rates: dict[str, list[float]] = {k: [] for k in kinds}
    for rep in range(a.reps):
        for name, view in kinds.items():
            console.print(f"record {name} ({rep + 1}/{a.reps})", markup=False)
            rates[name].append(record(view, a.episodes, tmp))
    t2 = Table(title=f"robot-rl record --teleop expert (push, {a.episodes} episodes, "
                     f"as fast as it goes; frames over the loop's wall clock)",
               title_justify="left")
    for col in ("variant", "frames / s (each run)", "mean", "vs off"):
        t2.add_column(col, justify="left" if col == "variant" else "right")
    off = float(np.mean(rates["view off"]))
    for name, rs in rates.items():
        t2.add_row(name, ", ".join(f"{r:.0f}" for r in rs), f"{np.mean(rs):.0f}",
                   f"{np.mean(rs) / off - 1:+.1%}")
    console.print(t2)


if __name__ == "__main__":
    main(tyro.cli(Args))
