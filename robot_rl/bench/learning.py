"""What the learning benchmarks read off their runs: the learning curve's milestones and a
chunked artifact's call latency."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np


def curve_summary(run: Path, targets: tuple[int, ...] = (80, 90, 95)) -> dict[str, Any]:
    """Env steps and seconds to each target success (%), the first, last and best success,
    cumulative training cost and its rate per 1,000 env steps, from a run's eval.csv
    (``env_steps_to_80`` is None where no evaluation reached 80%)."""
    from robot_rl.runner import read_curve

    history = read_curve(run)
    out: dict[str, Any] = {}
    for target in targets:
        hit = next((h for h in history if h["success_rate"] >= target / 100), None)
        out[f"env_steps_to_{target}"] = None if hit is None else hit["env_steps"]
        out[f"seconds_to_{target}"] = None if hit is None else hit["seconds"]
    last = history[-1]
    return {**out, "first_success": history[0]["success_rate"],
            "final_success": last["success_rate"],
            "best_success": max(h["success_rate"] for h in history),
            "env_steps": last["env_steps"], "seconds": last["seconds"],
            "train_cost": last["train_cumulative_cost"],
            "cost_per_1k_steps": 1000 * last["train_cumulative_cost"] / max(last["env_steps"], 1),
            "run": str(run)}


def chunk_latency(policy: Any, calls: int) -> tuple[float, float]:
    """p50 / p99 [us] of one chunk call of an exported chunked policy (``load_policy``; one
    sample, after 100 calls of warm-up)."""
    rng = np.random.default_rng(0)
    hist = rng.standard_normal((1, policy.obs_history, policy.obs_dim)).astype(np.float32)
    times = []
    for i in range(calls + 100):
        t0 = time.perf_counter()
        policy.chunk(hist)
        if i >= 100:
            times.append(time.perf_counter() - t0)
    return float(np.percentile(times, 50) * 1e6), float(np.percentile(times, 99) * 1e6)
