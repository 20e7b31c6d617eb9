"""How policies move the arm: shield interventions per layer, joint speed, acceleration and
jerk, and success, for the scripted experts and exported artifacts, with the motion profile
of joint targets (``controllers/motion.py``) off and on.

    python benchmarks/behaviour.py                                   # the experts
    python benchmarks/behaviour.py --artifacts runs/demo/reach/export --tasks
    python benchmarks/behaviour.py --tasks --hold runs/demo/reach/export   # + the hold test

Each row is ``--rounds`` x ``--num-envs`` episodes (seeds 70,000 + round). Experts run with
the profile off and on; an artifact runs as it was trained (``--toggle``: also with the
profile the other way, which measures the env and not a policy trained for it). The table is
also written to ``--out`` as JSON.

The hold test (``--hold ARTIFACT``, reach): ``robot-rl deploy ARTIFACT --robot sim`` in real
time for ``--hold-seconds`` (30) to each of ``--hold-goals`` (16) goals (``--deploy.seed``
0..15), on the nominal arm and on the held-out arm of ``--held-out`` (the simulated arm's
flags); a goal is held when the end effector is within the success radius at the end. That
is 16 minutes per artifact on 2 cores.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import tyro
from rich.console import Console
from rich.table import Table

from robot_rl.bench.behaviour import Act, Behaviour, expert_policy, measure


@dataclasses.dataclass
class Args:
    """The behaviour benchmark (module docstring)."""

    tasks: tuple[str, ...] = ("reach", "push", "lift")
    """Tasks whose scripted experts are measured."""
    styles: tuple[str, ...] = ("scripted", "multimodal-human")
    """Expert styles (a task without a style is skipped, with a note)."""
    push_actions: tuple[str, ...] = ("task", "ee-position")
    """Push's experts also act in these spaces (the learners' tables use both)."""
    artifacts: tuple[Path, ...] = ()
    """Exported artifacts (``robot-rl export``) to measure in their training env."""
    toggle: bool = False
    """Artifacts: also with the motion profile the other way than trained."""
    target_box: bool = False
    """Push's experts in an end-effector space clip their targets into the task's box
    (``robot-rl record --target-box``)."""
    control_hz: float | None = None
    """The experts' control rate [Hz] (default: each task's own, 50)."""
    ramp: bool = False
    """The experts' joint commands ramped over each control step (``--env.motion.ramp``)."""
    episode_length: int | None = None
    """The experts' episodes in control steps (default: each task's own; the learners'
    tables run push for 300 and lift for 200)."""
    hold: tuple[Path, ...] = ()
    """Reach artifacts for the real-time hold test on the simulated arm (module docstring)."""
    hold_env: tuple[Path, ...] = ()
    """Reach artifacts for the hold test in the batched env (not in real time: the goals at
    once, ``--hold-seconds`` of control steps, the artifact's training env; seconds each)."""
    hold_goals: int = 16
    hold_seconds: float = 30.0
    held_out: str = ("--sim.mass-scale 1.5 --sim.damping-scale 0.7 --sim.frictionloss 2.0 "
                     "--sim.actuation-delay 0.015")
    """The held-out arm of the hold test: links 1.5x as heavy, 0.7x the damping, 2 Nm of
    friction in every joint, 15 ms actuation delay."""
    rounds: int = 2
    num_envs: int = 32
    threads: int = 2
    out: Path = Path("runs/bench/behaviour.json")


def _trained_env(path: Path) -> dict[str, Any]:
    """The task config an exported artifact was trained in (its policy.json's ``env``)."""
    return json.loads((path / "policy.json").read_text())["env"]


def artifact_policy(path: Path, num_envs: int, seed: int, **overrides: Any
                    ) -> tuple[Any, Act, Callable[[torch.Tensor], None]]:
    """(env, act, start) of an exported artifact in its training env, with task config
    fields replaced by ``overrides``."""
    from robot_rl.kinds.eval_config import EvalConfig
    from robot_rl.kinds.evaluation import artifact_policy as load

    env, act, _, loaded = load(EvalConfig(path=path, episodes=num_envs, num_envs=num_envs,
                                          seed=seed), overrides)
    return env, act, lambda done: loaded.reset(done.numpy())


def _row(t: Table, name: str, motion: str, b: Behaviour) -> None:
    top = sorted(b.layers.items(), key=lambda kv: -kv[1])[:3]
    layers = ", ".join(f"{k} {v:.1%}" for k, v in top)
    t.add_row(name, motion, f"{b.success:.1%}", f"{b.any_layer:.1%}", layers or "-",
              f"{b.speed_mean:.2f}", f"{b.accel_p99:.1f}", f"{b.jerk_rms:.0f}")


def main(args: Args) -> None:
    from robot_rl.controllers import MotionConfig
    from robot_rl.errors import ConfigError
    from robot_rl.recording.record import named_action

    torch.set_num_threads(args.threads)
    console = Console()
    if console.width < 170:  # a log file or a narrow terminal: the table's rows stay whole
        console = Console(width=170)
    t = Table(title=f"behaviour: {args.rounds} x {args.num_envs} episodes per row; shares of "
                    "control steps", title_justify="left")
    for col in ("policy", "motion profile", "success", "any shield layer", "top layers",
                "joint speed, mean [rad/s]", "joint accel, p99 [rad/s²]",
                "jerk, rms [rad/s³]"):
        t.add_column(col, justify="left" if col in ("policy", "top layers") else "right")
    rows: list[dict] = []
    Made = tuple[Any, Act, Callable[[torch.Tensor], None]]
    cases: list[tuple[str, str, Callable[[], Made]]] = []  # (policy, profile, its env)
    for task in args.tasks:
        for space in args.push_actions if task == "push" else ("task",):
            for style in args.styles:
                for motion in (False, True):
                    box = args.target_box and space != "task"
                    cases.append((
                        f"{task} expert, {style}" + ("" if space == "task" else f", {space}")
                        + (", target box" if box else "")
                        + ("" if args.control_hz is None else f", {args.control_hz:g} Hz")
                        + (", ramped" if args.ramp else ""),
                        "on" if motion else "off",
                        lambda t=task, st=style, m=motion, sp=space, b=box: expert_policy(
                            t, st, m, args.num_envs, 0, named_action(t, sp, b),
                            args.episode_length, args.control_hz, args.ramp)))
    for path in args.artifacts:
        made = _trained_env(path).get("motion", {})
        trained = bool(made.get("enabled", False))
        ramp = bool(made.get("ramp", False))  # a toggle keeps the ramp as trained
        on, off = ("on", "off") if trained else ("off", "on")
        cases.append((str(path), f"{on} (as trained)",
                      lambda p=path: artifact_policy(p, args.num_envs, 0)))
        if args.toggle:
            cases.append((str(path), f"{off} (toggled)", lambda p=path, m=not trained, r=ramp:
                          artifact_policy(p, args.num_envs, 0,
                                          motion=MotionConfig(enabled=m, ramp=r))))
    for name, label, make in cases:
        t0 = time.perf_counter()
        try:
            env, act, start = make()
        except ConfigError as err:
            console.print(f"[yellow]skipped {name}: {err}[/yellow]")
            continue
        b = measure(env, act, start, args.rounds, 70_000)
        _row(t, name, label, b)
        rows.append({"policy": name, "motion": label, **dataclasses.asdict(b)})
        console.print(f"  {name} ({label}): {time.perf_counter() - t0:.0f} s", style="dim")
    if t.row_count:
        console.print(t)
    holds = [(path, "env", lambda p=path: env_hold(p, args.hold_goals, args.hold_seconds))
             for path in args.hold_env]
    holds += [(path, arm, lambda p=path, f=flags: hold_test(
        p, args.hold_goals, args.hold_seconds, f.split(), console))
        for path in args.hold for arm, flags in (("nominal", ""), ("held-out", args.held_out))]
    for path, arm, test in holds:
        h = test()
        rows.append({"policy": str(path), "hold": arm, **h})
        console.print(f"hold, {path}, {arm}: {h['held']}/{h['goals']} goals held after "
                      f"{args.hold_seconds:g} s; end-effector error {_cm(h['distance_m'])} "
                      f"cm; shield interventions per policy step {h['shield_per_step']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows, indent=2) + "\n")
    md = args.out.with_suffix(".md")
    md.write_text(_markdown(rows))
    console.print(f"written: {args.out}, {md} (the table for the docs)")


def _cm(d: list[float]) -> str:
    return ", ".join(f"{x * 100:.1f}" for x in d)


def env_hold(path: Path, goals: int, seconds: float) -> dict[str, Any]:
    """The hold test in the batched env (``--hold-env``): one episode of ``seconds`` per
    goal, all goals at once; the same figures as ``hold_test``."""
    from robot_rl.bench.behaviour import hold

    made = _trained_env(path)
    steps = round(seconds / (made["physics_dt"] * made["decimation"])) + 1  # the last resets
    env, act, start = artifact_policy(path, goals, 0, episode_length=steps)
    h = hold(env, act, start, 4242,
             lambda e: torch.linalg.vector_norm(e.state.buffers["target"]
                                                - e.state.sensors["ee_pos"], dim=1))
    return {"goals": h.goals, "held": h.held, "distance_m": h.final_error,
            "shield_per_step": h.layers}


def hold_test(path: Path, goals: int, seconds: float, sim_flags: list[str], console: Console
              ) -> dict[str, Any]:
    """``robot-rl deploy PATH --robot sim`` in real time to ``goals`` goals (seeds 0..goals-1)
    for ``seconds`` each: how many end within the success radius, the end effector's final
    distances [m], and the shield's interventions per policy step by layer."""
    import subprocess
    import sys
    import tempfile

    held, dist, shield, steps = 0, [], {}, 0
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(goals):
            out = Path(tmp) / f"{seed}.json"
            cmd = [sys.executable, "-m", "robot_rl.cli", "deploy", str(path), "--robot", "sim",
                   "--duration", str(seconds), "--deploy.seed", str(seed), "--summary-json",
                   str(out), *sim_flags]
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            s = json.loads(out.read_text())
            held += bool(s["success"])
            dist.append(float(s["ee_goal_distance_m"]))
            steps += int(s["policy_steps"])
            for k, v in s["shield"].items():
                shield[k] = shield.get(k, 0) + int(v)
            console.print(f"  hold {path} seed {seed}: {'held' if s['success'] else 'lost'} "
                          f"at {dist[-1] * 100:.1f} cm", style="dim")
    return {"goals": goals, "held": held, "distance_m": dist,
            "shield_per_step": {k: round(v / max(steps, 1), 4) for k, v in shield.items() if v}}


def _markdown(rows: list[dict]) -> str:
    """The table as markdown (the docs' copy)."""
    out = [] if all("hold" in r for r in rows) else [
        "| policy | motion profile | success | any shield layer | top layers | joint speed, "
        "mean [rad/s] | joint accel, p99 [rad/s²] | jerk, rms [rad/s³] |",
        "|---|---|---:|---:|---|---:|---:|---:|"]
    for r in rows:
        if "hold" in r:
            continue
        top = sorted(r["layers"].items(), key=lambda kv: -kv[1])[:3]
        layers = ", ".join(f"{k} {v:.1%}" for k, v in top) or "-"
        out.append(f"| {r['policy']} | {r['motion']} | {r['success']:.1%} | "
                   f"{r['any_layer']:.1%} | {layers} | {r['speed_mean']:.2f} | "
                   f"{r['accel_p99']:.1f} | {r['jerk_rms']:.0f} |")
    holds = [r for r in rows if "hold" in r]
    if holds and out:
        out.append("")
    if holds:
        out += ["| artifact | arm | goals held | end-effector error at the end [cm] | "
                "shield interventions per policy step |", "|---|---|---:|---|---|"]
        for r in holds:
            shield = ", ".join(f"{k} {v:.1%}" for k, v in r["shield_per_step"].items()) or "-"
            out.append(f"| {r['policy']} | {r['hold']} | {r['held']}/{r['goals']} | "
                       f"{_cm(r['distance_m'])} | {shield} |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    main(tyro.cli(Args))
