"""Reach artifacts on the arms they will meet: nominal, under the randomization presets, and
on a held-out arm without and with actuation delay (issue 87).

    python benchmarks/latency.py runs/demo/reach/export                 # 256 episodes a row
    python benchmarks/latency.py A B --episodes 512 --deploy-episodes 200 --out docs/x.md

Rows, each artifact evaluated through ONNX as ``robot-rl eval`` runs it, in batched
simulation, every row from the same seeds:

  nominal         the artifact's training task, no randomization (``--dr off``)
  dr default      ``--dr default`` (``robot_rl.sim.configs.DRPreset`` says what each holds)
  dr strong       ``--dr strong``
  held-out arm    ``--arm``'s dynamics (default: links 1.5x as heavy, 1.5x the joint damping,
                  servo gains 0.6x, 0.5 Nm of dry friction per joint), no delay
  + N ms delay    the same arm with exactly ``--delay`` of actuation delay in every env
                  (40 ms: two control steps at 50 Hz)
  real time       (``--deploy-episodes`` > 0) ``robot-rl deploy --robot sim`` of the same
                  arm and delay in real time: the runtime, its shield and the simulated arm
                  in their own thread, one episode after another

``kept`` is a row's success over the nominal row's; ``rate limit`` the share of control
steps on which the shield's rate limiter changed the action.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import tyro
from rich.console import Console
from rich.table import Table

from robot_rl.hardware.configs import SimRobotConfig

sys.path.insert(0, str(Path(__file__).resolve().parent))
from online_rehearsal import held_out_env  # noqa: E402

ARM = SimRobotConfig(mass_scale=1.5, damping_scale=1.5, frictionloss=0.5)
"""The held-out arm's dynamics (servo gains: ``Args.gain`` of the robot's own)."""


@dataclasses.dataclass
class Args:
    artifacts: tyro.conf.Positional[tuple[Path, ...]]
    """Exported reach artifacts (``robot-rl export``)."""
    episodes: int = 256
    """Episodes per batched row."""
    num_envs: int = 64
    delay: float = 0.04
    """Actuation delay of the held-out arm's delayed rows [s]."""
    gain: float = 0.6
    """The held-out arm's servo stiffness and damping, as a share of the robot's."""
    deploy_episodes: int = 0
    """Real-time episodes on the simulated arm (0: none; about 2.5 s each)."""
    seed: int = 100
    out: Path | None = None
    """Also write the table here as Markdown (and its figures beside it as JSON)."""


def held_out(a: Args, delay: float) -> SimRobotConfig:
    """The held-out arm with ``delay`` seconds of actuation delay."""
    from robot_rl.robots import get_robot

    robot = get_robot(ARM.robot)
    kp, kd = ARM.servo_gains(robot)
    return dataclasses.replace(ARM, kp=tuple(a.gain * kp), kd=tuple(a.gain * kd),
                               actuation_delay=delay)


def batched_row(a: Args, path: Path, dr: str | None, arm: SimRobotConfig | None
                ) -> dict[str, Any]:
    """Success and the rate limiter's share of steps over ``a.episodes`` episodes."""
    from robot_rl.evaluate import evaluate
    from robot_rl.export import load_policy
    from robot_rl.hardware.observation import task_config_from_meta
    from robot_rl.kinds.eval_config import EvalConfig
    from robot_rl.kinds.evaluation import artifact_policy

    cfg = EvalConfig(path=path, episodes=a.episodes, num_envs=a.num_envs, seed=a.seed,
                     dr=dr)  # type: ignore[arg-type]
    env = None
    if arm is not None:
        task = task_config_from_meta(load_policy(path).meta)
        env = held_out_env(task, a.num_envs, arm, seed=a.seed, exact_delay=True)
    env, act, _, loaded = artifact_policy(cfg, env=env)
    r = evaluate(act, env, a.episodes, seed=a.seed, gate_rejected=act.rejected,
                 episode_start=lambda done: loaded.reset(done.numpy()))
    return {"success": r.success_rate, "episodes": r.episodes,
            "rate_limit": r.interventions.get("rate_limit", 0.0) / max(r.length_mean, 1.0)}


def deploy_row(a: Args, path: Path, arm: SimRobotConfig, console: Console) -> dict[str, Any]:
    """``robot-rl deploy --robot sim --episodes N`` on the held-out arm, in real time."""
    summary = Path(f"/tmp/latency_{path.parent.name}_{int(time.time())}.json")
    flags = ["--sim.mass-scale", str(arm.mass_scale), "--sim.damping-scale",
             str(arm.damping_scale), "--sim.frictionloss", str(arm.frictionloss),
             "--sim.actuation-delay", str(arm.actuation_delay),
             "--sim.kp", *[f"{k:g}" for k in arm.kp or ()],
             "--sim.kd", *[f"{k:g}" for k in arm.kd or ()]]
    cmd = [sys.executable, "-m", "robot_rl.cli", "deploy", str(path), "--robot", "sim",
           "--episodes", str(a.deploy_episodes), "--deploy.seed", str(a.seed),
           "--summary-json", str(summary), *flags]
    console.print("$ robot-rl " + " ".join(cmd[3:]), markup=False)
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"deploy failed:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    s = json.loads(summary.read_text())
    steps = max(s["policy_steps"], 1)
    return {"success": s["episode_success_rate"], "episodes": len(s["episodes"]),
            "rate_limit": s["shield"].get("rate_limit", 0) / steps,
            "sense_to_act_ms": s.get("sense_to_act_ms")}


def main(a: Args) -> None:
    console = Console(width=160)
    ms = f"{1e3 * a.delay:g} ms"
    rows: list[dict[str, Any]] = []
    for path in a.artifacts:
        plan: list[tuple[str, Any]] = [
            ("nominal", lambda p=path: batched_row(a, p, "off", None)),
            ("dr default", lambda p=path: batched_row(a, p, "default", None)),
            ("dr strong", lambda p=path: batched_row(a, p, "strong", None)),
            ("held-out arm", lambda p=path: batched_row(a, p, None, held_out(a, 0.0))),
            (f"held-out arm + {ms}", lambda p=path: batched_row(a, p, None,
                                                                 held_out(a, a.delay)))]
        if a.deploy_episodes:
            plan.append((f"held-out arm + {ms}, real time",
                         lambda p=path: deploy_row(a, p, held_out(a, a.delay), console)))
        nominal = None
        for name, measure in plan:
            t0 = time.monotonic()
            row = {"artifact": str(path), "arm": name, **measure()}
            nominal = row["success"] if nominal is None else nominal
            row["kept"] = row["success"] / max(nominal, 1e-9)
            rows.append(row)
            console.print(f"{path} {name}: {row['success']:.1%} of {row['episodes']} "
                          f"(kept {row['kept']:.0%}, rate limit {row['rate_limit']:.1%} of "
                          f"steps) in {time.monotonic() - t0:.0f} s", highlight=False)
    table = Table(title="reach artifacts on the arms they meet", title_justify="left")
    for col in ("artifact", "arm", "episodes", "success", "kept", "rate limit"):
        table.add_column(col, justify="left" if col in ("artifact", "arm") else "right")
    for r in rows:
        table.add_row(r["artifact"], r["arm"], str(r["episodes"]), f"{r['success']:.1%}",
                      f"{r['kept']:.0%}", f"{r['rate_limit']:.1%}")
    console.print(table)
    if a.out is not None:
        lines = ["| artifact | arm | episodes | success | kept | rate limit |",
                 "|---|---|---:|---:|---:|---:|"]
        lines += [f"| {r['artifact']} | {r['arm']} | {r['episodes']} | {r['success']:.1%} | "
                  f"{r['kept']:.0%} | {r['rate_limit']:.1%} |" for r in rows]
        a.out.write_text("\n".join(lines) + "\n")
        a.out.with_suffix(".json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main(tyro.cli(Args, description=__doc__))
