"""GPU simulation throughput: the Warp backend vs MuJoCo Warp alone vs the CPU backend.

    python benchmarks/sim_gpu.py            (robot-rl bench sim --backend warp: the same)
    python benchmarks/sim_gpu.py --task push --num-envs 4096 8192
    python benchmarks/sim_gpu.py --device cpu --num-envs 4 --cpu-envs 4 --seconds 0.5
                                            (Warp's CPU device: a smoke run)

Rows, per number of worlds (env steps/s = control steps summed over worlds, best of repeats):
  physics      our backend's ``step``: one control step of physics (decimation substeps,
               sensors current at the end), the CUDA graph replayed; random controls held
  mjw alone    the limit: ``mujoco_warp.step`` x decimation in one CUDA graph on a fresh
               ``mjw.Data`` of the same model and size, nothing of ours around it
  end to end   ``agent.act(obs)`` (SAC actor with the safety-critic gate, the default
               networks) then ``env.step``: actions, shield, controller, physics,
               observation, reward, cost, success, auto-resets with randomization
  memory       device memory the env adds per world (free memory before and after building
               it and stepping it; the Warp arrays' own bytes in brackets)
The CPU backend (MuJoCo C threads, all cores) runs the same task in the same table.
Targets on one H100: >= 1M physics env-steps/s on reach at 8192 worlds, >= 300k end to end.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable
from typing import Any

import mujoco
import torch
from rich.console import Console
from rich.table import Table

from robot_rl.bench.rate import best_rate


@dataclasses.dataclass(kw_only=True)
class BenchSimGPUConfig:
    """GPU simulation throughput: Warp backend vs MuJoCo Warp alone vs the CPU backend.

    Example: robot-rl bench sim --backend warp --num-envs 1024 8192
    """

    task: str = "reach"
    """Task to simulate."""
    num_envs: tuple[int, ...] = (1024, 2048, 4096, 8192, 16384)
    """Numbers of worlds to measure on the Warp backend."""
    device: str = "cuda"
    """Device of the Warp backend (cuda, cuda:N, or cpu for Warp's CPU device)."""
    cpu_envs: tuple[int, ...] = (1024, 4096)
    """Batch sizes for the CPU backend's rows (empty to skip)."""
    threads: int | None = None
    """Threads of the CPU backend (default: all cores)."""
    seconds: float = 2.0
    """Measuring time per figure (after warm-up) [s]."""
    repeats: int = 3
    """Measurements per figure; the best is reported."""
    end_to_end: bool = True
    """Also measure SAC action selection + env.step."""
    dr: str | None = "default"
    """Domain randomization preset of the end-to-end rows (off, default, strong)."""


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _timed(step: Callable[[], None], batch: int, device: torch.device, seconds: float,
           repeats: int) -> float:
    """Env-steps/s of ``step`` with the device drained before the clock stops (``best_rate``
    warms up with a few untimed bursts)."""
    # Several calls per clock reading, so one synchronization is spread over them.
    inner = 1 if device.type == "cpu" else 10

    def burst() -> None:
        for _ in range(inner):
            step()
        _sync(device)

    return best_rate(burst, batch * inner, seconds, repeats)


def _free_bytes(device: torch.device) -> int | None:
    if device.type != "cuda":
        return None
    torch.cuda.synchronize(device)
    return int(torch.cuda.mem_get_info(device)[0])


def physics_rate(env: Any, seconds: float, repeats: int) -> float:
    """Our backend's control-step physics: the reset's hold targets, each moved by a random
    5% of its actuator's range, held."""
    backend, dec = env.backend, env.cfg.decimation
    gen = torch.Generator(device=env.device).manual_seed(0)
    span = env.model.actuator_ctrlrange[:, 1] - env.model.actuator_ctrlrange[:, 0]
    span = torch.as_tensor(span, dtype=backend.dtype, device=env.device)
    u = torch.rand(backend.ctrl.shape, generator=gen, device=env.device, dtype=backend.dtype)
    backend.ctrl.add_(0.05 * span * (u - 0.5))

    def step() -> None:
        backend.step(dec, current_sensors=True)

    return _timed(step, env.num_envs, env.device, seconds, repeats)


def mjw_alone_rate(model: mujoco.MjModel, num_envs: int, device: str, decimation: int,
                   nconmax: int, njmax: int, seconds: float, repeats: int) -> float:
    """``mujoco_warp.step`` x decimation as one CUDA graph (launched directly on the CPU)."""
    from robot_rl.sim.backends.warp_setup import import_warp, warp_device

    wp, mjw = import_warp()
    dev = warp_device(wp, device)
    with wp.ScopedDevice(dev):
        m = mjw.put_model(model)
        d = mjw.make_data(model, nworld=num_envs, nconmax=nconmax, njmax=njmax)

        def substeps() -> None:
            for _ in range(decimation):
                mjw.step(m, d)

        if dev.is_cuda:
            with wp.ScopedCapture() as capture:
                substeps()
            graph = capture.graph

            def step() -> None:
                wp.capture_launch(graph)
        else:
            step = substeps
        return _timed(step, num_envs, torch.device(wp.device_to_torch(dev)), seconds, repeats)


def end_to_end_rate(env: Any, seconds: float, repeats: int) -> float:
    """SAC action selection (actor + safety-critic gate) and env.step, per control step."""
    from robot_rl.algos.configs import SACConfig, SafetyConfig
    from robot_rl.algos.sac import SAC

    agent = SAC(env.obs_dim, env.act_dim, SACConfig(gamma=0.99), SafetyConfig(mode="both"),
                device=str(env.device), seed=0)
    obs = [env.reset(seed=0)]

    @torch.no_grad()
    def step() -> None:
        act = agent.act(obs[0])
        obs[0] = env.step(act.action, act.hold)[0]

    return _timed(step, env.num_envs, env.device, seconds, repeats)


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:,.0f}"


def run(cfg: BenchSimGPUConfig) -> dict:
    """Measure and print the table; returns the figures."""
    from robot_rl.sim import make_env
    from robot_rl.sim.backends.warp_setup import import_warp

    console = Console(width=max(Console().width, 120))
    wp, mjw = import_warp()
    threads = cfg.threads or os.cpu_count() or 1
    gpu = torch.cuda.get_device_name(0) if cfg.device.startswith("cuda") and \
        torch.cuda.is_available() else "none"
    console.print(f"[bold]GPU simulation throughput[/bold]  task={cfg.task}  device="
                  f"{cfg.device} ({gpu})  warp {wp.__version__}  mujoco_warp "
                  f"{getattr(mjw, '__version__', '?')}  mujoco {mujoco.__version__}  "
                  f"torch {torch.__version__}  cpu threads={threads}")
    table = Table(title=f"{cfg.task}: env steps/s (control steps summed over worlds)",
                  title_justify="left")
    for col in ("backend", "worlds", "physics", "mjw alone (limit)", "physics / limit",
                "end to end", "memory / world"):
        table.add_column(col, justify="right")
    results: dict = {"warp": {}, "cpu": {}}
    t_start = time.perf_counter()

    def say(msg: str) -> None:
        # Each figure as it is measured: the first build compiles Warp's kernels (minutes on
        # a fresh machine), and a run cut short still shows what it had measured.
        console.print(f"[{time.perf_counter() - t_start:6.0f} s] {msg}", highlight=False)

    for n in cfg.num_envs:
        free0 = _free_bytes(torch.device(cfg.device))
        say(f"warp {n:,} worlds: building the env (compiles kernels on first use)")
        env = make_env(cfg.task, n, backend="warp", device=cfg.device, seed=0,
                       dr=cfg.dr)  # type: ignore[arg-type]
        phys = physics_rate(env, cfg.seconds, cfg.repeats)
        say(f"warp {n:,} worlds: physics {_fmt(phys)} env steps/s")
        e2e = end_to_end_rate(env, cfg.seconds, cfg.repeats) if cfg.end_to_end else None
        if e2e is not None:
            say(f"warp {n:,} worlds: end to end {_fmt(e2e)} env steps/s")
        free1 = _free_bytes(env.device)
        own = env.backend.memory_bytes() / n  # type: ignore[attr-defined]
        per_world = None if free0 is None or free1 is None else (free0 - free1) / n
        cap = env.backend.capacity  # type: ignore[attr-defined]
        limit = mjw_alone_rate(env.model, n, cfg.device, env.cfg.decimation, cap.nconmax,
                               cap.njmax, cfg.seconds, cfg.repeats)
        say(f"warp {n:,} worlds: mjw alone {_fmt(limit)} env steps/s")
        results["warp"][n] = {"physics": phys, "limit": limit, "end_to_end": e2e,
                              "bytes_per_world": per_world, "array_bytes_per_world": own}
        mem = (f"{per_world / 1024:,.1f} KiB " if per_world is not None else "") + \
            f"[{own / 1024:,.1f} KiB]"
        table.add_row("warp", f"{n:,}", _fmt(phys), _fmt(limit), f"{phys / limit:.2f}",
                      _fmt(e2e), mem)
        del env
    for n in cfg.cpu_envs:
        env = make_env(cfg.task, n, backend="cpu", seed=0, nthread=min(threads, n),
                       dr=cfg.dr)  # type: ignore[arg-type]
        phys = physics_rate(env, cfg.seconds, cfg.repeats)
        e2e = end_to_end_rate(env, cfg.seconds, cfg.repeats) if cfg.end_to_end else None
        say(f"cpu {n:,} envs: physics {_fmt(phys)}, end to end {_fmt(e2e)} env steps/s")
        results["cpu"][n] = {"physics": phys, "end_to_end": e2e}
        table.add_row(f"cpu ({threads} threads)", f"{n:,}", _fmt(phys), "", "", _fmt(e2e), "")
    console.print(table)
    if cfg.task == "reach" and 8192 in results["warp"]:
        r = results["warp"][8192]
        console.print(f"targets (one H100, reach, 8192 worlds): physics {_fmt(r['physics'])} "
                      f"vs >= 1,000,000; end to end {_fmt(r['end_to_end'])} vs >= 300,000")
    return results
