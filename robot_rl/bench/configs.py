"""The configs of ``robot-rl bench sim`` and ``bench controllers``, importable without
MuJoCo or torch (``--help`` reads them)."""

from __future__ import annotations

import dataclasses
from typing import Literal


@dataclasses.dataclass(kw_only=True)
class BenchSimConfig:
    """Simulation throughput: ours vs EnvPool vs gymnasium vs the physical limit.

    Example: robot-rl bench sim --num-envs 16 64 256 --seconds 2
             robot-rl bench sim --backend warp --tasks reach      (GPU table, sim_gpu.py)
    """

    backend: Literal["cpu", "warp"] = "cpu"
    """cpu: the tables below. warp: the GPU table of benchmarks/sim_gpu.py for each of
    --tasks (Warp backend vs MuJoCo Warp alone vs the CPU backend; needs the gpu extra)."""
    device: str = "cuda"
    """Device of the warp backend (cuda, cuda:N, or cpu for Warp's CPU device)."""
    num_envs: tuple[int, ...] | None = None
    """Batch sizes to measure (default: 16 64 256 on cpu; 1024 2048 4096 8192 16384 on
    warp)."""
    seconds: float = 2.0
    """Measuring time per figure (after warm-up) [s]."""
    repeats: int = 3
    """Measurements per figure; the best is reported (machines here are shared and noisy)."""
    threads: int | None = None
    """Physics threads for ours and EnvPool (default: all cores)."""
    tasks: tuple[str, ...] = ("reach", "push", "lift")
    """Our tasks for the second table (empty to skip)."""
    peers: bool = True
    """Measure EnvPool and gymnasium (skipped with a note when not installed)."""


@dataclasses.dataclass(kw_only=True)
class BenchControllersConfig:
    """Controller and shield latency (one sample) and overhead (batched).

    Example: robot-rl bench controllers --samples 20000 --num-envs 64 1024
    """

    samples: int = 20000
    """Single-sample calls timed per row."""
    num_envs: tuple[int, ...] = (64, 256, 1024)
    """Batch sizes for the overhead table."""
    steps: int = 40
    """Control steps timed per batched figure."""
    tasks: tuple[str, ...] = ("reach", "push", "lift")
    """Tasks for the shield on/off throughput table (empty to skip)."""
    throughput_envs: tuple[int, ...] = (64, 256)
    """Batch sizes of the shield on/off table."""
    seconds: float = 2.0
    """Measuring time per throughput figure [s]."""
    repeats: int = 3
    """Throughput measurements per figure; the best is reported."""
