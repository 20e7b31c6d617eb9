"""Where a flow policy fails on push, and a residual run on it: per episode the final
puck-to-goal distance, whether the puck moved, whether it ended farther than it started,
whether it was within the success radius at some decision and left it, and whether it
was still moving at the end (the episode's time ran out on a push under way); with a
residual, its critics' value at each episode's end of its own action and of the full
residual toward the goal (where the puck stopped short: do they know a push pays?).

    python benchmarks/push_failures.py RUN_BC                      # the flow at zero noise
    python benchmarks/push_failures.py RUN_BC --residual RUN_RES   # the residual's mean on it

Both act through the residual env (the flow's zero-noise chunks, as its artifact and the
residual's base run them; the residual's mean on top, or zero), ``--num-envs`` episodes at a
time from ``--seed``, until ``--episodes``. Episodes of the two runs are not paired: an
episode that ends early shifts the env's later resets. Per-episode rows go to ``--out``
(JSON) beside the printed summary.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import torch
import tyro

from robot_rl.bc import bc_env, load_bc_policy
from robot_rl.finetune.residual import ResidualEnv, load_residual


@dataclasses.dataclass
class Args:
    """The push failure census (module docstring)."""

    bc: tyro.conf.Positional[Path]
    """The flow policy's run (robot-rl bc)."""
    residual: Path | None = None
    """A residual run on it (robot-rl residual): its actor's mean acts on the flow."""
    episodes: int = 200
    num_envs: int = 25
    seed: int = 777
    threads: int = 2
    near: float = 0.08
    """A failure ending within this puck-to-goal distance counts as a near miss [m]."""
    out: Path | None = None
    """Per-episode rows as JSON (default: none written)."""


def census(args: Args) -> list[dict[str, float | bool]]:
    """One row per finished episode: start and final puck-to-goal distance in the table
    plane, the puck's displacement, success (the task's, at the episode's last step)."""
    torch.set_num_threads(args.threads)
    agent = None
    if args.residual is None:
        policy, _, state = load_bc_policy(args.bc)
        env = ResidualEnv(bc_env(state, args.bc, "the census", args.num_envs, args.seed),
                          policy, 0.1)
    else:
        agent, _, env = load_residual(args.residual, args.num_envs, args.seed)
    cols, o = {}, 0
    for name, width in env.env.obs_layout:
        cols[name] = slice(o, o + width)
        o += width

    def planar(obs: torch.Tensor, term: str) -> torch.Tensor:
        return obs[:, cols[term]][:, :2]

    obs = env.reset(seed=args.seed)
    start = torch.linalg.vector_norm(planar(obs, "puck_to_goal"), dim=1)
    puck0 = prev = planar(obs, "puck_pos")  # replaced, never written in place
    closest, reached = start.clone(), torch.zeros_like(start, dtype=torch.bool)
    rows: list[dict[str, float | bool]] = []
    while len(rows) < args.episodes:
        with torch.no_grad():
            residual = torch.zeros(env.num_envs, env.act_dim) if agent is None else \
                agent.act(obs, deterministic=True, gate=False).action
        obs, _, _, terminated, truncated, info = env.step(residual)
        final = info["final_obs"]  # = obs where no episode ended
        done = terminated | truncated
        now = torch.linalg.vector_norm(planar(final, "puck_to_goal"), dim=1)
        # at each decision's last control step: the task's success test there
        closest, reached = torch.minimum(closest, now), reached | info["success"]
        # the puck's speed over the last decision (one env step: ``every`` control steps)
        speed = torch.linalg.vector_norm(planar(final, "puck_pos") - prev, dim=1) / env.control_dt
        ended = torch.nonzero(done).flatten()
        # with a residual: its critics at the episodes' ends, only where some episode ended
        probe = _probe(agent, final[ended], planar(final, "puck_to_goal")[ended]) \
            if agent is not None and len(ended) else None
        for j, i in enumerate(ended.tolist()):
            row: dict[str, float | bool] = {} if probe is None else {
                "q_actor": float(probe[0][j]), "q_push": float(probe[1][j])}
            rows.append(row | {
                "start": float(start[i]),
                "final": float(now[i]),
                "closest": float(closest[i]),
                "reached": bool(reached[i]),
                "final_speed": float(speed[i]),
                "moved": float(torch.linalg.vector_norm(planar(final, "puck_pos")[i]
                                                        - puck0[i])),
                "success": bool(info["episode"]["success"][i]),
                "terminated": bool(terminated[i])})
        fresh = torch.linalg.vector_norm(planar(obs, "puck_to_goal"), dim=1)
        start = torch.where(done, fresh, start)
        closest = torch.where(done, fresh, closest)
        reached = reached & ~done
        puck0 = torch.where(done[:, None], planar(obs, "puck_pos"), puck0)
        prev = planar(obs, "puck_pos")
    return rows[:args.episodes]


@torch.no_grad()
def _probe(agent: Any, obs: torch.Tensor, to_goal: torch.Tensor
           ) -> tuple[torch.Tensor, torch.Tensor]:
    """(E,) each: the residual's critics (mean of the ensemble) at ``obs`` for its own
    deterministic action and for the full residual toward the goal in the table plane
    (an end-effector offset, the same in every chunk step the decision holds)."""
    x = agent.normalize(obs)
    own = agent.act(obs, deterministic=True, gate=False).action
    push = torch.zeros_like(own)
    push[:, :2] = to_goal / torch.linalg.vector_norm(to_goal, dim=1, keepdim=True).clamp_min(1e-6)
    return agent.critic(x, own).mean(0), agent.critic(x, push).mean(0)


def summary(rows: list[dict[str, float | bool]], near: float) -> str:
    ok = np.array([r["success"] for r in rows])
    final = np.array([r["final"] for r in rows], dtype=float)
    start = np.array([r["start"] for r in rows], dtype=float)
    moved = np.array([r["moved"] for r in rows], dtype=float)
    reached = np.array([r["reached"] for r in rows])
    speed = np.array([r["final_speed"] for r in rows], dtype=float)
    fail = ~ok
    short = (speed <= 0.02) & ~reached & (final < near)
    probe = ""
    if short.any() and "q_push" in rows[0]:
        gap = np.array([r["q_push"] - r["q_actor"] for r in rows], dtype=float)[short]
        probe = (f"; at the stopped-short ends the critics value a push toward the goal above "
                 f"the residual's own action in {np.mean(gap > 0):.0%} of them (Q gap p50 "
                 f"{np.median(gap):+.2f}, p10 / p90 {np.quantile(gap, 0.1):+.2f} / "
                 f"{np.quantile(gap, 0.9):+.2f})")
    q = np.quantile(final[fail], [0.1, 0.5, 0.9]) * 100 if fail.any() else [np.nan] * 3
    return (f"{len(rows)} episodes: success {ok.mean():.1%}; failures {int(fail.sum())}: final "
            f"puck-to-goal distance p10 / p50 / p90 {q[0]:.1f} / {q[1]:.1f} / {q[2]:.1f} cm, "
            f"within {near * 100:.0f} cm {np.mean(final[fail] < near):.1%}, puck never moved "
            f"5 mm {np.mean(moved[fail] < 0.005):.1%}, ended farther than it started "
            f"{np.mean(final[fail] > start[fail]):.1%}, reached the goal and lost it "
            f"{np.mean(reached[fail]):.1%}, puck still moving at the end (> 2 cm/s) "
            f"{np.mean(speed[fail] > 0.02):.1%}, stopped short (still, never reached, within "
            f"{near * 100:.0f} cm) {np.mean(short[fail]):.1%}" + probe)


def main(args: Args) -> None:
    rows = census(args)
    print(summary(rows, args.near))
    if args.out is not None:
        args.out.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main(tyro.cli(Args))
