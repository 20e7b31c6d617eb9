"""Datasets into replay buffers: every recorded step as a transition (s, a, r, c, s', term).

    demos = demo_buffer(Dataset("data/push"), env)    # a ReplayBuffer holding the dataset
"""

from __future__ import annotations

import torch

from robot_rl.data.format import DatasetError
from robot_rl.data.reader import Dataset
from robot_rl.replay import ReplayBuffer
from robot_rl.sim.env import BatchedEnv


def transitions(ds: Dataset, device: str | torch.device = "cpu") -> dict[str, torch.Tensor]:
    """All committed steps as tensors: obs (N, O), action (N, A), reward, cost,
    terminated (N,), next_obs (N, O). ``next_obs`` is the recorded next observation (the true
    final one at an episode's end), and only a real termination stops bootstrapping."""
    f = ds.frames()

    def t(key: str) -> torch.Tensor:
        return torch.as_tensor(f[key], device=device).float()

    return {"obs": t("observation.state"), "action": t("action"), "reward": t("next.reward"),
            "cost": t("next.cost"), "next_obs": t("next.observation.state"),
            "terminated": t("next.terminated")}


def fill_buffer(buffer: ReplayBuffer, ds: Dataset) -> int:
    """Add every transition of ``ds`` to ``buffer``; returns how many."""
    tr = transitions(ds, buffer.device)
    if tr["obs"].shape[1] != buffer.obs.shape[1] or tr["action"].shape[1] != \
            buffer.action.shape[1]:
        raise DatasetError(f"{ds.root} holds observations of {tr['obs'].shape[1]} and actions "
                           f"of {tr['action'].shape[1]} values; the buffer takes "
                           f"{buffer.obs.shape[1]} and {buffer.action.shape[1]}")
    buffer.add(tr["obs"], tr["action"], tr["reward"], tr["cost"], tr["next_obs"],
               tr["terminated"])
    return int(tr["obs"].shape[0])


def demo_buffer(ds: Dataset, env: BatchedEnv, device: str | torch.device = "cpu") -> ReplayBuffer:
    """A buffer exactly holding ``ds``, after checking it was recorded for ``env``'s task,
    robot and action space (DatasetError naming the field otherwise)."""
    from robot_rl.data.record import dataset_spec

    ds.check(dataset_spec(env))
    buf = ReplayBuffer(max(ds.num_frames, 1), env.obs_dim, env.act_dim, device)
    fill_buffer(buf, ds)
    return buf
