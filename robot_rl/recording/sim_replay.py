"""Replay a recorded episode's actions in simulation from its recorded initial state.

The episode row keeps the seed of the env reset that began it, and info.json how the env was
made; the replay remakes that env, resets it with the seed and applies the recorded actions.
On the CPU backend the simulation is deterministic, so the replayed joint states equal the
recorded ones (the test of the recorder); a difference means the dataset and the simulator
disagree (another MuJoCo version, a changed task).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from robot_rl.data.format import DatasetError
from robot_rl.data.reader import Dataset


@dataclasses.dataclass
class ReplayResult:
    episode: int
    frames: int
    max_joint_error: float
    """Largest |replayed - recorded| joint position over the episode [rad]."""
    max_obs_error: float
    """Largest |replayed - recorded| observation element."""
    success: bool
    """The task's success test at the last replayed step (the episode's success)."""
    recorded_success: bool


def replay_episode(ds: Dataset, index: int, video: Path | None = None,
                   camera: str = "corner",
                   on_step: Callable[[int, dict[str, Any]], None] | None = None
                   ) -> ReplayResult:
    """Replay episode ``index`` of ``ds`` (see module docstring); optionally film it.
    ``on_step(t, info)`` gets each replayed step's info (reward and cost terms, shield
    flags, ...)."""
    from robot_rl.recording.record import dataset_spec, making_overrides
    from robot_rl.sim import make_env

    rows = [r for r in ds.episodes if r["episode_index"] == index]
    if not rows:
        raise DatasetError(f"{ds.root} has no episode {index}")
    spec = ds.require_spec("replay in simulation")
    seed = int(rows[0].get("robot_rl/seed", -1))
    if seed < 0 or not spec.env:
        lost = " (" + "; ".join(ds.notes) + ")" if ds.notes else ""
        raise DatasetError(f"episode {index} has no reset seed or env making: it was not "
                           f"recorded in simulation, or they were lost{lost}; there is no "
                           f"initial state to replay it from")
    env = make_env(spec.task, 1, dr=spec.env.get("dr", "off"),
                   **making_overrides(spec.env))
    ds.check(dataset_spec(env))
    frames = ds.episode(index)
    env.reset(seed=seed)
    writer = renderer = None
    if video is not None:
        from robot_rl.sim.render import EnvRenderer, VideoWriter

        renderer = EnvRenderer(env, camera=camera)
        writer = VideoWriter(video, ds.fps)
    joint_err = obs_err = 0.0
    success = False
    try:
        for t in range(len(frames["action"])):
            q = env.state.joint_pos[0].numpy()
            obs = env.observe(noise=False)[0].numpy()  # draws nothing from the env RNG
            joint_err = max(joint_err, float(np.abs(q - frames["observation.joint_pos"][t])
                                             .max()))
            obs_err = max(obs_err, float(np.abs(obs - frames["observation.state"][t]).max()))
            if renderer is not None and writer is not None:
                writer.write(renderer.render())
            action = torch.as_tensor(frames["action"][t], dtype=torch.float32)[None]
            _, _, _, _, _, info = env.step(action)
            success = bool(info["success"][0])
            if on_step is not None:
                on_step(t, info)
    finally:
        if writer is not None:
            writer.close()
        if renderer is not None:
            renderer.close()
    return ReplayResult(index, len(frames["action"]), joint_err, obs_err, success,
                        bool(rows[0].get("robot_rl/success", False)))


def replayed_terms(ds: Dataset, index: int) -> dict[str, np.ndarray]:
    """What the dataset does not store, from a replay of episode ``index``: per frame, each
    reward and cost term (``reward_terms/{name}``, ``cost_terms/{name}``) and each shield
    layer's intervention flag (``safety/{layer}``)."""
    out: dict[str, list[float]] = {}

    def take(_: int, info: dict[str, Any]) -> None:
        for group in ("reward_terms", "cost_terms", "safety"):
            for k, v in info.get(group, {}).items():
                out.setdefault(f"{group}/{k}", []).append(float(v[0]))

    replay_episode(ds, index, on_step=take)
    return {k: np.asarray(v) for k, v in out.items()}
