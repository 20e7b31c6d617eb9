"""Tiny behaviour-cloning runs the fine-tuning tests start from."""

from __future__ import annotations

import sys
from pathlib import Path

from rich.console import Console

from robot_rl.bc import BCConfig, BCRunner
from robot_rl.policies import PolicyConfig
from robot_rl.recording.record import RecordConfig, record


def tiny_bc_runs(root: Path, task: str, episode_length: int, horizon: int,
                 execute: int | None = None, algos: tuple[str, ...] = ("bc-flow",),
                 obs_history: int = 1, flow_steps: int = 2) -> None:
    """Two scripted-expert episodes of ``task`` recorded into ``root/demos`` and a few BC
    steps of each of ``algos`` on them (tiny networks), as runs ``root/<algo>``: the flow
    policies the fine-tuning tests start from."""
    record(RecordConfig(task=task, teleop="expert", episodes=2, out=root / "demos",
                        episode_length=episode_length, progress=False))
    for algo in algos:
        BCRunner(BCConfig(demos=root / "demos", algo=algo,  # type: ignore[arg-type]
                          policy=PolicyConfig(horizon=horizon, execute=execute, width=16,
                                              blocks=1, obs_history=obs_history,
                                              flow_steps=flow_steps),
                          steps=5, eval_episodes=0, runs_dir=root, run_name=algo,
                          progress=False), console=Console(file=sys.stderr)).train()
