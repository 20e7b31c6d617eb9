"""What the learning benchmarks read off their runs: the learning curve's milestones and
push episodes measured one by one (a chunked artifact's call latency: ``bench.latency``)."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch


def curve_summary(run: Path, targets: tuple[int, ...] = (80, 90, 95)) -> dict[str, Any]:
    """Env steps and seconds to each target success (%), the first, last and best success,
    cumulative training cost and its rate per 1,000 env steps, from a run's eval.csv
    (``env_steps_to_80`` is None where no evaluation reached 80%)."""
    from robot_rl.checkpoint import read_curve

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


def push_episodes(env: Any, act: Callable[[torch.Tensor], torch.Tensor],
                  start: Callable[[torch.Tensor], object], rounds: int, seed: int
                  ) -> list[dict[str, float]]:
    """Per episode of ``act`` (observations (E, O) -> actions (E, A)) in a push ``env``
    (``rounds`` x num_envs episodes, each round reset with seed ``seed + round``; ``start``
    gets the (E,) mask of envs that begin an episode): the push's length [m] and direction
    [deg, 0: away from the robot], how far the puck moved [m], how close it came to the
    goal [m] and how far from it it ended [m], the first step the success test held (-1:
    none), and whether it held at the episode's end (1 / 0: the last step taken, the
    episode's second-to-last, since its last would reset the env)."""
    rows: list[dict[str, float]] = []
    for r in range(rounds):
        obs = env.reset(seed=seed + r)
        start(torch.ones(env.num_envs, dtype=torch.bool))
        s = env.state
        puck0, goal = s.sensors["puck_pos"][:, :2].clone(), s.buffers["goal"][:, :2].clone()
        closest = torch.full((env.num_envs,), math.inf)
        moved = torch.zeros(env.num_envs)
        first = torch.full((env.num_envs,), -1)
        end = torch.zeros(env.num_envs, dtype=torch.bool)
        with torch.no_grad():
            for t in range(env.max_episode_length - 1):  # the last step would reset
                obs, _, _, _, _, info = env.step(act(obs))
                puck = env.state.sensors["puck_pos"][:, :2]
                closest = torch.minimum(closest, torch.linalg.vector_norm(goal - puck, dim=1))
                moved = torch.maximum(moved, torch.linalg.vector_norm(puck - puck0, dim=1))
                first = torch.where(info["success"].bool() & (first < 0), t, first)
                end = info["success"].bool()
        final = torch.linalg.vector_norm(goal - env.state.sensors["puck_pos"][:, :2], dim=1)
        line = goal - puck0
        for i in range(env.num_envs):
            rows.append({"length": float(line[i].norm()),
                         "direction": math.degrees(math.atan2(float(line[i, 1]),
                                                              float(line[i, 0]))),
                         "moved": float(moved[i]), "closest": float(closest[i]),
                         "first": int(first[i]), "end": int(end[i]),
                         "final": float(final[i])})
    return rows
