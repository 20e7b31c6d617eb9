"""Controller and shield cost: one sample at deploy rate, batched in training.

Table 1, one sample (the deploy loop's path, numpy): the arm's state from MuJoCo (ArmModel),
then shield + OSC (action layers, ee_pose targets, target layers, OSC law, torque layers) and
shield + joint targets (action layers, joint_delta targets, target layers), as latency
percentiles over many random states and actions. The same code on torch tensors (E = 1) is
the comparison; the budget is the 50 us target and the 1 kHz period.

Table 2, batched (training): per control step, the time of the shield and controller work
next to the physics step time at 64, 256 and 1024 envs, for joint PD and differential IK
(shield at the control rate) and OSC (law + torque layers at every physics step): as arrays
on torch tensors (a GPU's path; the CPU's before the layers were compiled) and compiled on
numpy views (the CPU env's path).

Table 3: env-steps/s of ``robot-rl bench sim``'s task table with the shield on and off.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from rich.console import Console
from rich.table import Table

from robot_rl.bench.configs import BenchControllersConfig
from robot_rl.bench.sim_throughput import ours
from robot_rl.controllers import (
    ArmState,
    EEPoseConfig,
    JointDeltaConfig,
    OperationalSpace,
    OSCConfig,
    ShieldConfig,
)
from robot_rl.controllers.arm_model import ArmModel
from robot_rl.work_progress import WorkProgress


def _percentiles(samples: list[float]) -> tuple[float, float, float]:
    a = np.asarray(samples) * 1e6
    return float(np.percentile(a, 50)), float(np.percentile(a, 99)), float(a.max())


def _time_each(fn: Callable[[int], object], n: int) -> list[float]:
    out = []
    for i in range(n):
        t = time.perf_counter()
        fn(i)
        out.append(time.perf_counter() - t)
    return out


def _torch_state(s: ArmState) -> ArmState:
    return ArmState(**{k: None if getattr(s, k) is None else torch.from_numpy(getattr(s, k))
                       for k in ("q", "qd", "ee_pos", "ee_rot", "jac", "mass", "drift")})


def single_sample(samples: int) -> dict[str, tuple[float, float, float]]:
    """Latency percentiles (p50, p99, max) in microseconds of the deploy-side paths."""
    from robot_rl.sim import make_env

    env_osc = make_env("reach", 1, action=EEPoseConfig(gripper=False), controller=OSCConfig())
    env_layers = make_env("reach", 1, action=EEPoseConfig(gripper=False),
                          controller=OSCConfig())
    env_layers.pipeline.fused = False  # the compiled layers one call each
    env_ref = make_env("reach", 1, action=EEPoseConfig(gripper=False), controller=OSCConfig())
    osc_ref = env_ref.pipeline.controller
    assert isinstance(osc_ref, OperationalSpace)
    env_ref.pipeline.shield.compiled = False  # the law and the torque layer as array
    osc_ref.compiled = False  # operations (the reference)
    env_ik = make_env("reach", 1, action=EEPoseConfig(gripper=False))  # differential IK
    env_jd = make_env("reach", 1, action=JointDeltaConfig(gripper=False))
    env_jd_ref = make_env("reach", 1, action=JointDeltaConfig(gripper=False))
    env_jd_ref.pipeline.shield.compiled = False
    arm = ArmModel(env_osc.model, env_osc.robot)
    rng = np.random.default_rng(0)
    lo, hi = np.asarray(env_osc.robot.q_min), np.asarray(env_osc.robot.q_max)
    home = np.asarray(env_osc.robot.home)
    qs = [np.clip(home + rng.uniform(-0.4, 0.4, 7), lo, hi) for _ in range(256)]
    qds = [rng.uniform(-1.0, 1.0, 7) for _ in range(256)]
    acts = [rng.uniform(-1.2, 1.2, (1, 6)) for _ in range(256)]  # ee_pose: 6 actions
    acts7 = [rng.uniform(-1.2, 1.2, (1, 7)) for _ in range(256)]  # joint_delta: 7
    states = [arm.state(q, qd, mass=True) for q, qd in zip(qs, qds, strict=True)]

    def osc_path(env: Any, s: ArmState, a: Any, prev: Any) -> Any:
        pipe = env.pipeline
        return pipe.command(pipe.act(a, prev, s).targets, s, "effort")[0]

    def joint_path(env: Any, s: ArmState, a: Any, prev: Any) -> Any:
        pipe = env.pipeline
        return pipe.command(pipe.act(a, prev, s).targets, s, "position")[0]

    prev_np, prev7 = np.zeros((1, 6)), np.zeros((1, 7))
    prev_t = torch.zeros(1, 6, dtype=torch.float64)
    t_states = [_torch_state(s) for s in states]
    t_acts = [torch.from_numpy(a) for a in acts]
    k = len(states)
    rows = {
        "state from MuJoCo (ArmModel, with M)":
            lambda i: arm.state(qs[i % k], qds[i % k], mass=True),
        "shield + OSC (numpy, act and command fused: one compiled call each)":
            lambda i: osc_path(env_osc, states[i % k], acts[i % k], prev_np),
        "shield + OSC (numpy, the compiled layers one call each)":
            lambda i: osc_path(env_layers, states[i % k], acts[i % k], prev_np),
        "shield + OSC (numpy, the layers and law as arrays)":
            lambda i: osc_path(env_ref, states[i % k], acts[i % k], prev_np),
        "shield + OSC (torch eager)":
            lambda i: osc_path(env_osc, t_states[i % k], t_acts[i % k], prev_t),
        "shield + joint targets (numpy, compiled layers)":
            lambda i: joint_path(env_jd, states[i % k], acts7[i % k], prev7),
        "shield + joint targets (numpy, the layers as arrays)":
            lambda i: joint_path(env_jd_ref, states[i % k], acts7[i % k], prev7),
        "shield + differential IK (numpy)":
            lambda i: joint_path(env_ik, states[i % k], acts[i % k], prev_np),
    }
    out = {}
    for name, fn in rows.items():
        for i in range(200):  # warm-up
            fn(i)
        n = samples if "torch" not in name else max(samples // 10, 500)
        out[name] = _percentiles(_time_each(fn, n))
    return out


def _mean_time(fn: Callable[[], object], n: int) -> float:
    fn()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) / n


def batched(num_envs: int, steps: int) -> dict[str, dict[str, float]]:
    """Per control step (ms): the physics, and the shield + controller work timed directly on
    the env's live state: the arm's state, action layers, action space and target layers
    once, plus for a torque controller the state, the law and the torque layers at each of
    its evaluations; both as arrays on torch tensors (a GPU's path, and the CPU's before the
    layers were compiled) and as the CPU env runs it now (numpy views, compiled layers)."""
    return {"joint PD": _batched_path(JointDeltaConfig(gripper=False), num_envs, steps),
            "diff IK": _batched_path(EEPoseConfig(gripper=False), num_envs, steps),
            "OSC": _batched_path(EEPoseConfig(gripper=False), num_envs, steps, OSCConfig())}


def _batched_path(action: Any, num_envs: int, steps: int, controller: Any = None
                  ) -> dict[str, float]:
    from robot_rl.sim import make_env

    env = make_env("reach", num_envs, action=action, controller=controller)
    env.reset(seed=0)
    for _ in range(5):
        env.step(env.random_action())
    act = env.random_action()
    state, pipe = env.state, env.pipeline
    inner = pipe.torque_loop
    evals = env.cfg.decimation // pipe.substeps if inner else 1

    def control_time(numpy: bool) -> float:
        a, prev = (act.numpy(), state.action.numpy()) if numpy else (act, state.action)

        def control_rate() -> Any:
            arm = state.arm_state(mass=inner, numpy=numpy)
            return pipe.act(a, prev, arm).targets

        targets = control_rate()

        def torque_rate() -> object:
            arm = state.arm_state(mass=True, numpy=numpy)
            return pipe.command(targets, arm, "effort")

        t = _mean_time(control_rate, steps)
        return t + evals * _mean_time(torque_rate, steps) if inner else t

    arrays = control_time(numpy=False)
    compiled = control_time(numpy=True)
    env.reset(seed=0)  # the pipeline's memory back to the env's own kind
    sub = pipe.substeps if inner else env.cfg.decimation

    def physics() -> None:
        for _ in range(env.cfg.decimation // sub):
            env.backend.step(sub, current_sensors=True)

    phys = _mean_time(physics, steps)
    return {"physics_ms": phys * 1e3, "arrays_ms": arrays * 1e3,
            "compiled_ms": compiled * 1e3, "overhead_arrays": arrays / phys,
            "overhead": compiled / phys, "evaluations": float(evals)}


def _fmt(x: float) -> str:
    return f"{x:,.1f}"


def run(cfg: BenchControllersConfig) -> dict:
    """Measure and print the three tables; returns the figures."""
    console = Console()
    console.print(f"[bold]Controllers and shield[/bold]  cpu={os.cpu_count()}  "
                  f"torch {torch.__version__}  threads={torch.get_num_threads()}")
    total = 1 + len(cfg.num_envs) + 2 * len(cfg.tasks) * len(cfg.throughput_envs)
    with WorkProgress(console, "bench controllers", total, "figures") as work:
        return _measure(cfg, console, work)


def _measure(cfg: BenchControllersConfig, console: Console, work: WorkProgress) -> dict:
    work.start(f"one sample: {cfg.samples} calls per path")
    results: dict = {"single": single_sample(cfg.samples), "batched": {}, "throughput": {}}
    work.advance()
    t1 = Table(title="One sample, deploy path (microseconds)", title_justify="left")
    for col in ("path", "p50", "p99", "max", "target p99", "1 kHz period"):
        t1.add_column(col, justify="right")
    for name, (p50, p99, mx) in results["single"].items():
        target = "50" if name.startswith("shield + OSC (numpy, act and command") else ""
        t1.add_row(name, _fmt(p50), _fmt(p99), _fmt(mx), target, "1000")
    console.print(t1)

    t2 = Table(title="Batched, reach, per control step (ms); overhead = shield + controller "
                     "time / physics time; arrays: torch tensors (a GPU's path, the CPU's "
                     "before); compiled: numpy views (the CPU env's path)",
               title_justify="left")
    for col in ("envs", "path", "physics", "arrays", "compiled", "evaluations / step",
                "overhead arrays", "overhead compiled", "target"):
        t2.add_column(col, justify="right")
    for n in cfg.num_envs:
        work.start(f"batched, {n} envs")
        res = batched(n, cfg.steps)
        work.advance()
        results["batched"][n] = res
        for label, r in res.items():
            t2.add_row(str(n), label, f"{r['physics_ms']:.2f}", f"{r['arrays_ms']:.2f}",
                       f"{r['compiled_ms']:.2f}", f"{r['evaluations']:.0f}",
                       f"{100 * r['overhead_arrays']:.0f}%", f"{100 * r['overhead']:.0f}%",
                       "15% at 64" if n == 64 else "")
    console.print(t2)

    if cfg.tasks:
        t3 = Table(title="Env steps/s, random actions, shield on vs off", title_justify="left")
        t3.add_column("task")
        for n in cfg.throughput_envs:
            t3.add_column(f"{n} envs on", justify="right")
            t3.add_column(f"{n} envs off", justify="right")
            t3.add_column("on / off", justify="right")
        threads = os.cpu_count() or 1
        for task in cfg.tasks:
            cells = []
            results["throughput"][task] = {}
            for n in cfg.throughput_envs:
                work.start(f"{task}, {n} envs: shield on")
                on = ours(task, n, threads, cfg.seconds, cfg.repeats)
                work.advance()
                work.start(f"{task}, {n} envs: shield off")
                off = ours(task, n, threads, cfg.seconds, cfg.repeats,
                           shield=ShieldConfig(enabled=False))
                work.advance()
                results["throughput"][task][n] = {"on": on, "off": off}
                cells += [f"{on:,.0f}", f"{off:,.0f}", f"{on / off:.2f}"]
            t3.add_row(task, *cells)
        console.print(t3)
    return results
