"""Simulation throughput: ours vs EnvPool vs gymnasium vs the physical limit, in one run.

    robot-rl bench sim                       (same as: python benchmarks/sim_throughput.py)
    robot-rl bench sim --num-envs 64 --seconds 1

Table 1 runs gymnasium's Pusher-v5 model (7-DoF arm, frame skip 5) with random actions:
  ours       the ``pusher`` task in the batched env: physics in C threads plus Pusher's
             observation and reward terms and our four safety-cost terms (torch, batched)
  EnvPool    ``Pusher-v4`` (C++ threads, same thread count), sync mode, batch = num_envs
  gymnasium  ``SyncVectorEnv`` of ``Pusher-v5`` (one Python loop over envs)
  limit      threads x single-thread mj_step rate / frame skip: physics alone, no overhead.
             The single-thread rate is measured in C (``mujoco.batch``, one thread) on the
             same workload: the controls of 8 random-action episodes of the env, recorded,
             then replayed with each held for frame-skip substeps
Table 2 runs our reach/push/lift tasks (built-in arm, 2 ms physics, 50 Hz control), whole
env step included, and the memory each env adds.
Figures are env steps per second (control steps summed over envs), best of ``repeats``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import mujoco
import numpy as np
import torch
from mujoco.batch import Batch
from rich.console import Console
from rich.table import Table

from robot_rl.bench.configs import BenchSimConfig
from robot_rl.bench.rate import best_rate
from robot_rl.work_progress import WorkProgress


def _cycling(step: Callable[[Any], object], actions: list[Any]) -> Callable[[], None]:
    """A no-argument step that feeds ``actions`` round and round (made before timing)."""
    i = 0

    def run() -> None:
        nonlocal i
        step(actions[i % len(actions)])
        i += 1

    return run


def single_thread_step_rate(task: str, seconds: float, repeats: int, episodes: int = 8) -> float:
    """mj_step calls per second on one thread, in C, on ``task``'s own workload: the controls
    of ``episodes`` random-action episodes of the env, replayed one simulation after another."""
    from robot_rl.sim import make_env

    env = make_env(task, episodes, nthread=1)
    env.reset(seed=0)
    gen = torch.Generator().manual_seed(0)
    start = [t.numpy().copy() for t in (env.state.qpos, env.state.qvel, env.backend.mocap_pos)]
    ctrls = []
    for _ in range(env.cfg.episode_length - 1):  # stop short of the auto-reset
        env.step(2 * torch.rand(episodes, env.act_dim, generator=gen) - 1)
        ctrls.append(env.state.ctrl.numpy().copy())
    dec = env.cfg.decimation
    control = np.repeat(np.stack(ctrls, axis=1), dec, axis=1)  # (episodes, steps * dec, nu)
    nstep = control.shape[1]
    batch = Batch(env.model, episodes, nthread=1)

    def replay() -> None:
        batch.reset()
        batch.qpos[:], batch.qvel[:], batch.mocap_pos[:] = start
        batch.rollout(nstep, control=control, record=("qpos",))

    return best_rate(replay, episodes * nstep, seconds, repeats)


def ours(task: str, num_envs: int, threads: int, seconds: float, repeats: int,
         numpy_control: bool = True, **overrides: Any) -> float:
    """Env-steps/s of our env on ``task`` with random actions (config ``overrides``);
    ``numpy_control`` False: the control path on torch tensors (``BatchedEnv.numpy_control``,
    the CPU's path before its layers were compiled)."""
    from robot_rl.sim import make_env

    env = make_env(task, num_envs, nthread=min(threads, num_envs), **overrides)
    env.numpy_control = numpy_control
    env.reset(seed=0)
    gen = torch.Generator().manual_seed(0)
    actions = [2 * torch.rand(num_envs, env.act_dim, generator=gen) - 1 for _ in range(64)]
    return best_rate(_cycling(env.step, actions), num_envs, seconds, repeats)


def envpool_pusher(num_envs: int, threads: int, seconds: float, repeats: int) -> float | None:
    try:
        import envpool
    except ImportError:
        return None
    env = envpool.make_gymnasium("Pusher-v4", num_envs=num_envs, batch_size=num_envs,
                                 num_threads=threads, seed=0)
    env.reset()
    rng = np.random.default_rng(0)
    actions = [rng.uniform(-2, 2, (num_envs, 7)).astype(np.float32) for _ in range(64)]
    return best_rate(_cycling(env.step, actions), num_envs, seconds, repeats)


def gymnasium_sync_pusher(num_envs: int, seconds: float, repeats: int) -> float | None:
    import gymnasium

    try:
        env = gymnasium.make_vec("Pusher-v5", num_envs=num_envs, vectorization_mode="sync")
    except Exception:  # gymnasium[mujoco] not installed
        return None
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    actions = [rng.uniform(-2, 2, (num_envs, 7)).astype(np.float32) for _ in range(64)]
    rate = best_rate(_cycling(env.step, actions), num_envs, seconds, repeats)
    env.close()
    return rate


_RSS_PROBE = """
import sys
from robot_rl.sim import make_env
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1])
env = make_env(sys.argv[1], 1, nthread=1)
before = rss()
env = make_env(sys.argv[1], int(sys.argv[2]), nthread=1)
env.reset(seed=0)
for _ in range(5):
    env.step(env.random_action())
print(rss() - before)
"""


def memory_per_env(task: str, num_envs: int = 256) -> float:
    """MiB of resident memory each env adds, measured in fresh processes (an env of
    ``num_envs`` against one of 1, both stepped: MuJoCo's arenas are resident once touched)."""
    page = os.sysconf("SC_PAGE_SIZE")

    def pages(n: int) -> int:
        out = subprocess.run([sys.executable, "-c", _RSS_PROBE, task, str(n)], check=True,
                             capture_output=True, text=True)
        return int(out.stdout.split()[-1])

    return (pages(num_envs) - pages(1)) * page / 2**20 / (num_envs - 1)


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:,.0f}"


def run(cfg: BenchSimConfig) -> dict:
    """Measure and print both tables (or, with backend warp, the GPU table of each task);
    returns the figures (for scripts and tests)."""
    if cfg.backend == "warp":
        from robot_rl.bench.sim_gpu import BenchSimGPUConfig
        from robot_rl.bench.sim_gpu import run as run_gpu

        sizes = cfg.num_envs or BenchSimGPUConfig().num_envs
        # On Warp's CPU device (a smoke run) the CPU backend runs the same sizes.
        cpu_envs = sizes if cfg.device == "cpu" else BenchSimGPUConfig().cpu_envs
        return {task: run_gpu(BenchSimGPUConfig(task=task, num_envs=sizes, device=cfg.device,
                                          cpu_envs=cpu_envs, threads=cfg.threads,
                                          seconds=cfg.seconds, repeats=cfg.repeats))
                for task in cfg.tasks or ("reach",)}
    num_envs = cfg.num_envs or (16, 64, 256)

    console = Console()
    threads = cfg.threads or os.cpu_count() or 1
    console.print(f"[bold]Simulation throughput[/bold]  threads={threads}  "
                  f"cpu={os.cpu_count()}  mujoco {mujoco.__version__}  torch {torch.__version__}")
    # Each figure takes repeats x seconds after its env is built; the task table adds a
    # single-thread figure, two figures per size and two memory probes (fresh processes).
    peers = 3 if cfg.peers else 1
    total = 1 + peers * len(num_envs) + len(cfg.tasks) * (2 + 2 * len(num_envs))
    with WorkProgress(console, "bench sim", total, "figures") as work:
        return _measure(cfg, num_envs, threads, console, work)


def _measure(cfg: BenchSimConfig, num_envs: tuple[int, ...], threads: int, console: Console,
             work: WorkProgress) -> dict:
    from robot_rl.sim import make_task_config

    frame_skip = make_task_config("pusher").decimation
    work.start("pusher: single-thread mj_step in C")
    single = single_thread_step_rate("pusher", cfg.seconds, cfg.repeats)
    work.advance()
    limit = threads * single / frame_skip
    console.print(f"Pusher-v5 model: single-thread mj_step {single:,.0f}/s -> limit "
                  f"{limit:,.0f} env-steps/s ({threads} threads, frame skip {frame_skip})")

    results: dict = {"threads": threads, "single_thread_mj_step": single, "limit": limit,
                     "pusher": {}, "tasks": {}}
    table = Table(title="Pusher-v5 model, random actions (env steps/s)", title_justify="left")
    for col in ("envs", "ours", "EnvPool Pusher-v4", "gymnasium Sync Pusher-v5", "limit",
                "ours / limit", "ours / EnvPool"):
        table.add_column(col, justify="right")
    for n in num_envs:
        work.start(f"pusher, {n} envs: ours")
        o = ours("pusher", n, threads, cfg.seconds, cfg.repeats)
        work.advance()
        e = g = None
        if cfg.peers:
            work.start(f"pusher, {n} envs: EnvPool")
            e = envpool_pusher(n, threads, cfg.seconds, cfg.repeats)
            work.advance()
            work.start(f"pusher, {n} envs: gymnasium")
            g = gymnasium_sync_pusher(n, cfg.seconds, cfg.repeats)
            work.advance()
        results["pusher"][n] = {"ours": o, "envpool": e, "gymnasium": g}
        table.add_row(str(n), _fmt(o), _fmt(e), _fmt(g), _fmt(limit), f"{o / limit:.2f}",
                      "n/a" if e is None else f"{o / e:.2f}x")
    console.print(table)
    if cfg.peers and results["pusher"] and all(v["envpool"] is None
                                               for v in results["pusher"].values()):
        console.print("EnvPool is not installed (pip install 'robot-rl[bench]').")

    if cfg.tasks:
        t2 = Table(title="Our tasks, built-in arm, random actions, whole env step "
                         "(env steps/s, and / limit); control: compiled on numpy views (the "
                         "CPU's path) or arrays on torch tensors (before)",
                   title_justify="left")
        t2.add_column("task")
        t2.add_column("control")
        for n in num_envs:
            t2.add_column(f"{n} envs", justify="right")
        t2.add_column("limit (per-env physics)", justify="right")
        t2.add_column("MiB / env", justify="right")
        for task in cfg.tasks:
            work.start(f"{task}: single-thread mj_step in C")
            task_limit = threads * single_thread_step_rate(task, cfg.seconds, cfg.repeats) \
                / make_task_config(task).decimation
            work.advance()
            rates, before = [], []
            for n in num_envs:
                work.start(f"{task}, {n} envs: compiled control")
                rates.append(ours(task, n, threads, cfg.seconds, cfg.repeats))
                work.advance()
                work.start(f"{task}, {n} envs: torch control")
                before.append(ours(task, n, threads, cfg.seconds, cfg.repeats,
                                   numpy_control=False))
                work.advance()
            work.start(f"{task}: memory per env (two fresh processes)")
            mem = memory_per_env(task)
            work.advance()
            results["tasks"][task] = {"rates": dict(zip(num_envs, rates, strict=True)),
                                      "torch_control": dict(zip(num_envs, before, strict=True)),
                                      "limit": task_limit, "mib_per_env": mem}
            for label, row in (("compiled", rates), ("torch", before)):
                t2.add_row(task if label == "compiled" else "", label,
                           *(f"{_fmt(r)} ({r / task_limit:.2f})" for r in row),
                           _fmt(task_limit) if label == "compiled" else "",
                           f"{mem:.3f}" if label == "compiled" else "")
        console.print(t2)
    return results
