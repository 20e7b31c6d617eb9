"""Training samples for chunked policies from episodes stored frame by frame.

    data = ChunkData(obs, actions, episode_index, horizon=8, obs_history=2)
    obs_hist, chunk, mask = data.sample(256, generator)   # (B, T, O), (B, H, A), (B, H)
    obs_hist, chunk, mask = data.rows(torch.arange(10))   # the same for given frames

Frame i of an episode [s, e) gives the observations of frames max(i - T + 1 .. i, s) (the
first one repeated before the episode's start) and the actions of frames i .. i + H - 1;
those past the episode's end repeat its last action and are masked out of the loss.
"""

from __future__ import annotations

import torch

from robot_rl.errors import ConfigError


def chunk_indices(episode_index: torch.Tensor, horizon: int, obs_history: int
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """For frames (N,) ordered by episode then step: obs indices (N, T), action indices
    (N, H) and the mask (N, H) of actions inside the episode."""
    ep = episode_index.long()
    n = len(ep)
    if n and bool((ep[1:] < ep[:-1]).any()):
        raise ConfigError("frames must be ordered by episode")
    i = torch.arange(n)
    new = torch.ones(n, dtype=torch.bool)
    new[1:] = ep[1:] != ep[:-1]
    start = torch.cummax(torch.where(new, i, 0), dim=0).values  # (N,) first frame of i's episode
    last = torch.ones(n, dtype=torch.bool)
    last[:-1] = ep[1:] != ep[:-1]
    end = torch.flip(torch.cummin(torch.flip(torch.where(last, i, n), [0]), dim=0).values, [0])
    obs_idx = torch.maximum(i[:, None] - (obs_history - 1) + torch.arange(obs_history),
                            start[:, None])
    ahead = i[:, None] + torch.arange(horizon)
    mask = ahead <= end[:, None]
    return obs_idx, torch.minimum(ahead, end[:, None]), mask


class ChunkData:
    """Frames as tensors on ``device`` with their chunk indices (see module docstring)."""

    def __init__(self, obs: torch.Tensor, actions: torch.Tensor, episode_index: torch.Tensor,
                 horizon: int, obs_history: int, device: str | torch.device = "cpu"):
        if not (len(obs) == len(actions) == len(episode_index)) or len(obs) == 0:
            raise ConfigError(f"need as many observations, actions and episode indices (and "
                              f"at least one), got {len(obs)}, {len(actions)}, "
                              f"{len(episode_index)}")
        self.device = torch.device(device)
        self.obs = obs.float().to(self.device)
        self.actions = actions.float().to(self.device)
        obs_idx, act_idx, mask = chunk_indices(episode_index, horizon, obs_history)
        self.obs_idx, self.act_idx = obs_idx.to(self.device), act_idx.to(self.device)
        self.mask = mask.to(self.device)

    def __len__(self) -> int:
        return len(self.obs)

    def sample(self, batch: int, gen: torch.Generator
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``batch`` frames drawn uniformly: obs history (B, T, O), chunk (B, H, A), mask."""
        rows = torch.randint(len(self), (batch,), generator=gen, device=gen.device)
        return self.rows(rows.to(self.device))

    def rows(self, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The samples of frames ``rows`` (B,): obs history (B, T, O), chunk (B, H, A),
        mask (B, H)."""
        return self.obs[self.obs_idx[rows]], self.actions[self.act_idx[rows]], \
            self.mask[rows]
