"""Datasets into replay buffers: every recorded step as a transition (s, a, r, c, s', term).

    demos = demo_buffer(Dataset("data/push"), env)    # a ReplayBuffer holding the dataset
    demos, online = demo_and_online(Dataset("data/hil"), env)   # split for fine-tuning

A dataset can hold demonstrations (a person or the scripted expert drove every step) and
policy-driven episodes a person corrected (``robot-rl record --policy``, or the ROS teleop
node with an artifact; episode source ``policy+<device>``). Fine-tuning splits them as
HIL-SERL does: demonstrations and the intervention steps go into the demo buffer; every step
of a policy-driven episode, interventions included, is online experience.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from robot_rl.data.format import DatasetError
from robot_rl.data.reader import Dataset
from robot_rl.replay import ExtraSpec, ReplayBuffer
from robot_rl.sim.env import BatchedEnv
from robot_rl.sim.vec_env import VecEnv

Transitions = dict[str, torch.Tensor]


def transitions(ds: Dataset, device: str | torch.device = "cpu",
                episodes: list[int] | None = None) -> Transitions:
    """All committed steps as tensors: obs (N, O), action (N, A), reward, cost,
    terminated (N,), next_obs (N, O), the masks intervention (N,) and policy (N,) (the
    step's episode was policy-driven), and each step's episode index (N,). ``next_obs`` is
    the recorded next observation (the true final one at an episode's end), and only a real
    termination stops bootstrapping.
    ``episodes``: only these episodes (default all)."""
    f = ds.frames(episodes)

    def t(key: str) -> torch.Tensor:  # a copy: the dataset's arrays are read-only
        return torch.tensor(f[key], device=device).float()

    policy_eps = [int(r["episode_index"]) for r in ds.episodes
                  if str(r.get("robot_rl/source", "")).startswith("policy+")]
    policy = torch.as_tensor(np.isin(f["episode_index"], policy_eps), device=device)
    return {"obs": t("observation.state"), "action": t("action"), "reward": t("next.reward"),
            "cost": t("next.cost"), "next_obs": t("next.observation.state"),
            "terminated": t("next.terminated"),
            "intervention": torch.tensor(f["intervention"], device=device).bool(),
            "policy": policy,
            "episode": torch.tensor(f["episode_index"], device=device).long()}


def select(tr: Transitions, mask: torch.Tensor) -> Transitions:
    """The transitions where ``mask`` (N,) is true."""
    return {k: v[mask] for k, v in tr.items()}


def add_transitions(buffer: ReplayBuffer, tr: Transitions, root: Path | str = "") -> int:
    """Add ``tr`` to ``buffer``; returns how many."""
    if tr["obs"].shape[1] != buffer.obs.shape[1] or tr["action"].shape[1] != \
            buffer.action.shape[1]:
        raise DatasetError(f"{root} holds observations of {tr['obs'].shape[1]} and actions "
                           f"of {tr['action'].shape[1]} values; the buffer takes "
                           f"{buffer.obs.shape[1]} and {buffer.action.shape[1]}")
    return buffer.add_transitions(tr)


def fill_buffer(buffer: ReplayBuffer, ds: Dataset) -> int:
    """Add every transition of ``ds`` to ``buffer``; returns how many."""
    return add_transitions(buffer, transitions(ds, buffer.device), ds.root)


def check_dataset_env(ds: Dataset, env: VecEnv) -> None:
    """A BatchedEnv's task, robot and action space must be the dataset's; another VecEnv
    (no task of ours to compare) must match its observation and action widths."""
    from robot_rl.recording.record import dataset_spec

    if isinstance(env, BatchedEnv):
        ds.check(dataset_spec(env))
        return
    spec = ds.require_spec("fine-tuning")
    if (len(spec.obs_names), len(spec.action_names)) != (env.obs_dim, env.act_dim):
        raise DatasetError(f"{ds.root} holds observations of width {len(spec.obs_names)} and "
                           f"actions of width {len(spec.action_names)}; the env has "
                           f"{env.obs_dim} and {env.act_dim}")


def demo_buffer(ds: Dataset, env: VecEnv, device: str | torch.device = "cpu") -> ReplayBuffer:
    """A buffer exactly holding ``ds``, after checking it was recorded for ``env``'s task,
    robot and action space (DatasetError naming the field otherwise)."""
    check_dataset_env(ds, env)
    buf = ReplayBuffer(max(ds.num_frames, 1), env.obs_dim, env.act_dim, device)
    fill_buffer(buf, ds)
    return buf


def demo_and_online(ds: Dataset, env: VecEnv, device: str | torch.device = "cpu",
                    max_episodes: int | None = None, mc_gamma: float | None = None
                    ) -> tuple[ReplayBuffer, Transitions]:
    """``ds`` split for fine-tuning (see module docstring): a buffer of the demonstrations
    and intervention steps, and the online experience (every step of the policy-driven
    episodes) as transitions for the online buffer. ``max_episodes``: the first N episodes
    only. ``mc_gamma``: the demo buffer also holds each step's discounted return-to-go in
    its episode (``calql.MC_RETURN``, Cal-QL's lower bound)."""
    check_dataset_env(ds, env)
    episodes = None
    if max_episodes is not None:
        episodes = sorted(int(r["episode_index"]) for r in ds.episodes)
        if max_episodes > len(episodes):
            raise DatasetError(f"{ds.root} holds {len(episodes)} episodes, fewer than the "
                               f"{max_episodes} asked for")
        episodes = episodes[:max_episodes]
    tr = transitions(ds, device, episodes)
    demo = select(tr, ~tr["policy"] | tr["intervention"])
    extra: ExtraSpec | None = None
    if mc_gamma is not None:
        from robot_rl.finetune.calql import MC_RETURN, mc_returns

        demo[MC_RETURN] = mc_returns(demo["reward"], demo["episode"], mc_gamma)
        extra = {MC_RETURN: ((), torch.float32)}
    buf = ReplayBuffer(max(len(demo["obs"]), 1), env.obs_dim, env.act_dim, device, extra=extra)
    add_transitions(buf, demo, ds.root)
    return buf, select(tr, tr["policy"])
