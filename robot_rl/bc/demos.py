"""What a behaviour-cloning run learns from, and how it is scored without a simulator.

    demos = load_demos(cfg)                       # training and held-out episodes' frames
    data = chunk_data(demos.train, cfg, device)   # (observation history, action chunk) samples
    rmse, rel = action_error(policy, heldout, mean_action)

A dataset of one of our tasks is evaluated in simulation and holds nothing out by default;
one of no task of ours (a LeRobot dataset of another arm) holds out ``DEFAULT_HOLDOUT`` of its
episodes, on which the action error is the run's evaluation.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

import numpy as np
import torch

from robot_rl.data.format import DatasetError
from robot_rl.data.mirror import dataset_mirror_signs, with_mirror_images
from robot_rl.data.reader import Dataset
from robot_rl.errors import ConfigError
from robot_rl.policies import ChunkData, ChunkPolicy

if TYPE_CHECKING:
    from robot_rl.bc.config import BCConfig

DEFAULT_HOLDOUT = 0.1
"""Held-out fraction of the episodes of a dataset that no simulated task evaluates."""
IDLE_TOL = 1e-6
"""A frame is idle when every element of its action is within this of 0."""


@dataclasses.dataclass
class Demos:
    """What a BC run learns from: the dataset's training frames and held-out frames."""

    dataset: Dataset
    train: dict[str, np.ndarray]
    heldout: dict[str, np.ndarray] | None
    train_episodes: list[int]
    heldout_episodes: list[int]
    idle_dropped: int = 0
    """Idle training frames left out (``BCConfig.drop_idle``)."""
    mirrored: int = 0
    """Mirror images of training episodes added (``BCConfig.mirror``)."""

    @property
    def task(self) -> str | None:
        """Our task the data is of; None for a dataset of no task of ours."""
        return self.dataset.spec.task if self.dataset.spec is not None else None


def load_demos(cfg: BCConfig) -> Demos:
    """The dataset's first ``max_episodes`` episodes, split into training and held-out
    episodes (``holdout``)."""
    ds = Dataset(cfg.demos)
    episodes = sorted(int(r["episode_index"]) for r in ds.episodes)
    if not episodes:
        raise DatasetError(f"{cfg.demos} holds no committed episodes")
    for key in ("observation.state", "action"):
        if key not in ds.features:
            raise DatasetError(f"{cfg.demos} has no {key!r} feature: behaviour cloning "
                               f"learns observation.state -> action (it has "
                               f"{sorted(ds.features)})")
    if cfg.max_episodes is not None:
        if cfg.max_episodes > len(episodes):
            raise ConfigError(f"--max-episodes {cfg.max_episodes}: {cfg.demos} holds "
                              f"{len(episodes)} episodes")
        episodes = episodes[:cfg.max_episodes]
    frac = cfg.holdout if cfg.holdout is not None else (
        DEFAULT_HOLDOUT if ds.spec is None else 0.0)
    held: list[int] = []
    if frac > 0:
        if len(episodes) < 2:
            raise ConfigError(f"--holdout {frac}: {cfg.demos} holds one episode; nothing "
                              f"would be left to learn from (pass --holdout 0)")
        n = min(max(1, round(frac * len(episodes))), len(episodes) - 1)
        rng = np.random.default_rng(cfg.seed)
        held = sorted(int(e) for e in rng.choice(episodes, n, replace=False))
    train = [e for e in episodes if e not in held]
    frames, dropped = ds.frames(train), 0
    if cfg.drop_idle:
        frames, dropped = drop_idle(frames)
        if not len(frames["action"]):
            raise DatasetError(f"every training frame of {cfg.demos} is idle (its action "
                               f"is 0): nothing to learn from (--no-drop-idle keeps them)")
    if cfg.mirror:
        frames = with_mirror_images(frames, dataset_mirror_signs(ds))
    return Demos(ds, frames, ds.frames(held) if held else None, train, held, dropped,
                 len(train) if cfg.mirror else 0)


def drop_idle(frames: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], int]:
    """``frames`` without the idle ones (every action element within ``IDLE_TOL`` of 0:
    no command in a delta or offset action space, the teleoperator paused), and how many
    were left out. The rest keep their order and episode, so a chunk runs across a pause
    as if it had not been there."""
    action = frames["action"].reshape(len(frames["action"]), -1)
    keep = np.abs(action).max(axis=1) > IDLE_TOL
    return {k: v[keep] for k, v in frames.items()}, int((~keep).sum())


def chunk_data(frames: dict[str, np.ndarray], cfg: BCConfig, device: torch.device
               ) -> ChunkData:
    """Frames as (observation history, action chunk) samples."""
    return ChunkData(torch.tensor(frames["observation.state"], dtype=torch.float32),
                     torch.tensor(frames["action"], dtype=torch.float32),
                     torch.tensor(frames["episode_index"]), cfg.policy.horizon,
                     cfg.policy.obs_history, device)


@torch.no_grad()
def action_error(policy: ChunkPolicy, data: ChunkData, mean_action: torch.Tensor,
                 seed: int = 0, batch: int = 4096) -> tuple[float, float]:
    """(RMSE, RMSE relative to predicting ``mean_action``) of the policy's chunks (noise
    drawn with ``seed``) against the recorded chunks, over every frame of ``data`` and
    every step of its chunk inside the episode."""
    gen = torch.Generator(device=data.device).manual_seed(seed)
    sq = base = count = 0.0
    for start in range(0, len(data), batch):
        obs, chunk, mask = data.rows(torch.arange(start, min(start + batch, len(data)),
                                                  device=data.device))
        pred = policy.sample(obs, gen)
        m = mask[..., None].to(chunk.dtype)
        sq += float((((pred - chunk) ** 2) * m).sum())
        base += float((((mean_action - chunk) ** 2) * m).sum())
        count += float(m.sum()) * chunk.shape[-1]
    rmse, rmse0 = math.sqrt(sq / max(count, 1.0)), math.sqrt(base / max(count, 1.0))
    return rmse, rmse / rmse0 if rmse0 > 0 else float("nan")
