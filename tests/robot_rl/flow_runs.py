"""Tiny runs tests start from: behaviour-cloning runs (the fine-tuning tests) and the
config of a tiny pixel student (the vision and camera-deploy tests)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from robot_rl.bc import BCRunner
from robot_rl.bc.config import BCConfig
from robot_rl.policies import PolicyConfig
from robot_rl.recording.config import RecordConfig
from robot_rl.recording.record import record


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


def tiny_pixel_config(out: Path, rollout_steps: int) -> Any:
    """A ``PixelDistillConfig`` of push through two 24-px cameras (front and wrist, with
    depth) that distils in seconds: one DAgger iteration, two gradient steps, no
    evaluation; the student written to ``out``."""
    from robot_rl.distill.configs import DaggerConfig, PixelDistillConfig
    from robot_rl.vision.configs import PixelInputs, PixelPolicyConfig

    return PixelDistillConfig(task="push", action_steps=2, policy_iterations=0, action_batch=8,
                              out=out, policy=PixelPolicyConfig(features=8, hidden=(16,)),
                              inputs=PixelInputs(cameras=("front", "wrist"), size=24, depth=True),
                              dagger=DaggerConfig(iterations=1, num_envs=2,
                                                  rollout_steps=rollout_steps, grad_steps=2,
                                                  batch_size=8, eval_episodes=0, progress=False))
