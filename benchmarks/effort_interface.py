"""Joint targets on an effort interface: the joint PD law evaluated on the host once a tick
(``controllers.servo.pd_effort``, as on a Franka's torque interface) against the position
servo that evaluates it inside the physics, for reach's cloned expert on the simulated arm.

    python benchmarks/effort_interface.py                     # ~3 min on 2 cores
    python benchmarks/effort_interface.py --robot so5 --episodes 32

Every episode runs in simulated time (``SimRobot.step``: the host's timing plays no part;
the physics step is 2 ms or the largest below it that divides the tick period),
from home to a goal the runtime draws (seed = episode), for ``--seconds``; success is the
task's at the end. The deploy runtime refuses a tick rate slower than
``controllers.servo.host_pd_min_rate``; this sweep lifts that refusal to measure what it
guards against. Each row also gives ``period * max(kd / m)``, the quantity the refusal bounds
(``HOST_PD_DAMPING_STEP``). Columns: T*kd/m, that quantity; final mm, the median over the
episodes of the final hand-goal distance; spread mm, the largest over the episodes of the
distance's range over the last 0.5 s (an oscillating arm shows here).
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path

import numpy as np
import tyro
from rich.console import Console
from rich.table import Table

from robot_rl.bench.markdown import table_markdown
from robot_rl.controllers.joint import home_joint_inertia
from robot_rl.controllers.servo import HOST_PD_DAMPING_STEP, host_pd_min_rate
from robot_rl.export import load_policy
from robot_rl.hardware.configs import DeployConfig, SimRobotConfig
from robot_rl.hardware.runtime import DeployRuntime
from robot_rl.hardware.sim_robot import SimRobot

PHYSICS_DT = 0.002
"""The simulated arm's physics step; a tick period it does not divide gets the largest step
below it that does (200 Hz: 1.67 ms), so every tick lasts exactly its period."""


@dataclasses.dataclass(kw_only=True)
class Args:
    robot: str = "arm7"
    rates: tuple[float, ...] = (100.0, 150.0, 200.0, 250.0, 500.0, 1000.0)
    """Tick rates of the effort interface [Hz] (whole multiples of 50 Hz)."""
    position_rate: float = 500.0
    """Tick rate of the position-servo baseline [Hz]."""
    episodes: int = 16
    seconds: float = 3.0
    out: Path = Path("runs/bench/effort_interface")


def artifact(robot: str, out: Path) -> Path:
    """reach's scripted expert cloned on ``robot`` and exported (as the tests make it)."""
    from robot_rl.distill import clone_expert
    from robot_rl.distill.configs import DaggerConfig, DistillConfig
    from robot_rl.export.artifact import artifact_meta, export_artifact

    cfg = DistillConfig(run=Path("-"), dagger=DaggerConfig(
        iterations=4, grad_steps=300, num_envs=16, dr="off", progress=False))
    student, env = clone_expert("reach", cfg, robot=robot)
    return export_artifact(out / f"reach_{robot}", student, artifact_meta(
        env, student, None, {"source": "expert clone (benchmark)"}))


def episode(path: Path, robot: str, interface: str, rate: float, seed: int,
            seconds: float) -> tuple[bool, float, float]:
    """(success at the end, final hand-goal distance [m], its spread over the last 0.5 s)."""
    period = 1.0 / rate
    per_tick = max(1, math.ceil(period / PHYSICS_DT - 1e-9))
    sim = SimRobot(SimRobotConfig(robot=robot, interface=interface,  # type: ignore[arg-type]
                                  physics_dt=period / per_tick))
    rt = DeployRuntime(load_policy(path), sim,
                       DeployConfig(rate_hz=rate, sliced_policy=False, seed=seed))
    t0 = sim.observe().stamp  # type: ignore[union-attr]
    dist = []
    for k in range(round(seconds * rate)):
        if k == 0:
            rt.tick(sim.observe(), now=t0)
            rt.start(now=t0)
        rt.tick(sim.observe(), now=t0 + k / rate)
        sim.step(per_tick)
        dist.append(float(np.linalg.norm(sim.ee_pos() - np.asarray(rt.goal))))
    tail = dist[-round(0.5 * rate):]
    return bool(rt.succeeded), dist[-1], max(tail) - min(tail)


def main(args: Args) -> None:
    console = Console()
    args.out.mkdir(parents=True, exist_ok=True)
    path = artifact(args.robot, args.out)
    policy = load_policy(path)
    rt = DeployRuntime(policy, SimRobot(SimRobotConfig(robot=args.robot)), DeployConfig())
    kd = np.asarray(rt.pipeline.controller.kd)
    inertia = home_joint_inertia(rt.observer.robot)
    lowest = host_pd_min_rate(kd, inertia)
    DeployRuntime._check_host_pd_rate = lambda *a, **k: None  # type: ignore[method-assign]
    table = Table(title=f"reach's cloned expert on {args.robot}: joint targets on an effort "
                        f"interface ({args.episodes} episodes, {args.seconds:g} s each, "
                        f"simulated time)")
    for col in ("interface", "Hz", "T*kd/m", "refused", "success", "final mm",
                "spread mm", "wall s"):
        table.add_column(col)
    runs = [("position", args.position_rate)] + [("effort", r) for r in args.rates]
    for interface, rate in runs:
        t = time.monotonic()
        rows = [episode(path, args.robot, interface, rate, e, args.seconds)
                for e in range(args.episodes)]
        ok, final, spread = (np.array(c) for c in zip(*rows, strict=True))
        table.add_row(interface, f"{rate:g}",
                      "-" if interface == "position" else f"{np.max(kd / inertia) / rate:.3f}",
                      "-" if interface == "position" else ("yes" if rate < lowest else "no"),
                      f"{ok.mean():.0%}", f"{1e3 * np.median(final):.1f}",
                      f"{1e3 * spread.max():.2f}", f"{time.monotonic() - t:.0f}")
        console.print(f"{interface} {rate:g} Hz: {ok.mean():.0%}")
    console.print(table)
    console.print(f"the runtime refuses effort below {lowest:.0f} Hz on {args.robot} "
                  f"(period * max(kd/m) <= {HOST_PD_DAMPING_STEP})")
    (args.out / "table.md").write_text(table_markdown(table))


if __name__ == "__main__":
    main(tyro.cli(Args))
