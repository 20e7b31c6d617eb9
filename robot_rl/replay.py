"""Replay buffer on the training device: a ring of transitions (s, a, r, c, s', terminated).

    buf = ReplayBuffer(capacity=300_000, obs_dim=27, act_dim=7, device="cpu")
    buf.add(obs, action, reward, cost, info["final_obs"], terminated)   # (E, ...) per step
    batch = buf.sample(256, generator)                                    # Batch of (B, ...)

    # more per-transition tensors, each stored in its own dtype (camera images as uint8):
    buf = ReplayBuffer(50_000, 40, 7, extra={"front.rgb": ((3, 48, 48), torch.uint8)})
    buf.add(..., extra={"front.rgb": rgb})        # (E, 3, 48, 48)
    batch.extra["front.rgb"]                      # (B, 3, 48, 48) uint8

``next_obs`` must be the true next observation: for an env that finished this step, the
batched env's ``info["final_obs"]`` (not the observation after its automatic reset).
Only ``terminated`` stops bootstrapping; a time-out (truncated) still bootstraps from
``next_obs``, which is why the final observation must be kept.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import torch

from robot_rl.errors import ConfigError


@dataclasses.dataclass
class Batch:
    """Sampled transitions, batch first (B = batch size)."""

    obs: torch.Tensor  # (B, O)
    action: torch.Tensor  # (B, A)
    reward: torch.Tensor  # (B,)
    cost: torch.Tensor  # (B,)
    next_obs: torch.Tensor  # (B, O)
    terminated: torch.Tensor  # (B,) float: 1 where the episode really ended (no bootstrap)
    extra: dict[str, torch.Tensor] = dataclasses.field(default_factory=dict)
    """The buffer's extra tensors (``ReplayBuffer(extra=...)``), (B, *shape) each."""


ExtraSpec = dict[str, tuple[tuple[int, ...], torch.dtype]]
"""Extra per-transition tensors of a replay buffer: name -> (shape per transition, dtype)."""


class ReplayBuffer:
    """Fixed-capacity ring buffer of transitions, stored as tensors on ``device``."""

    def __init__(self, capacity: int, obs_dim: int, act_dim: int,
                 device: str | torch.device = "cpu", extra: ExtraSpec | None = None):
        if capacity < 1:
            raise ConfigError(f"replay capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        self.device = torch.device(device)
        dev, f32 = self.device, torch.float32
        self.obs = torch.zeros(capacity, obs_dim, dtype=f32, device=dev)
        self.action = torch.zeros(capacity, act_dim, dtype=f32, device=dev)
        self.reward = torch.zeros(capacity, dtype=f32, device=dev)
        self.cost = torch.zeros(capacity, dtype=f32, device=dev)
        self.next_obs = torch.zeros(capacity, obs_dim, dtype=f32, device=dev)
        self.terminated = torch.zeros(capacity, dtype=f32, device=dev)
        self.extra = {k: torch.zeros(capacity, *shape, dtype=dtype, device=dev)
                      for k, (shape, dtype) in (extra or {}).items()}
        self.pos = 0
        """Next slot to write."""
        self.size = 0
        """Number of stored transitions (<= capacity)."""

    def __len__(self) -> int:
        return self.size

    @torch.no_grad()
    def add(self, obs: torch.Tensor, action: torch.Tensor, reward: torch.Tensor,
            cost: torch.Tensor, next_obs: torch.Tensor, terminated: torch.Tensor,
            mask: torch.Tensor | None = None, extra: dict[str, torch.Tensor] | None = None
            ) -> None:
        """Store E transitions (rows where ``mask`` (E,) bool is False are skipped);
        ``extra`` gives every extra tensor of the buffer, (E, *shape) each."""
        extra = extra or {}
        if set(extra) != set(self.extra):
            raise ConfigError(f"replay buffer stores extra tensors {sorted(self.extra)}, "
                              f"got {sorted(extra)}")
        stores = [self.obs, self.action, self.reward, self.cost, self.next_obs,
                  self.terminated, *(self.extra[k] for k in extra)]
        values = [obs, action, reward, cost, next_obs, terminated, *extra.values()]
        if mask is not None:
            keep = mask.nonzero().squeeze(1)
            values = [v[keep.to(v.device)] for v in values]
        n = values[0].shape[0]
        if n == 0:
            return
        if n > self.capacity:  # keep the newest
            values = [v[-self.capacity:] for v in values]
            n = self.capacity
        idx = (torch.arange(n, device=self.device) + self.pos) % self.capacity
        for store, v in zip(stores, values, strict=True):
            store[idx] = v.to(self.device, store.dtype)
        self.pos = (self.pos + n) % self.capacity
        self.size = min(self.size + n, self.capacity)

    def add_transitions(self, tr: dict[str, torch.Tensor]) -> int:
        """Store the transitions of a dict (keys obs, action, reward, cost, next_obs,
        terminated, and every extra tensor of the buffer; N rows each); returns N."""
        obs_dim, act_dim = tr["obs"].shape[1], tr["action"].shape[1]
        if obs_dim != self.obs.shape[1] or act_dim != self.action.shape[1]:
            raise ConfigError(f"transitions of {obs_dim} observation and {act_dim} action "
                              f"values; the replay buffer takes {self.obs.shape[1]} and "
                              f"{self.action.shape[1]}")
        if len(tr["obs"]):
            self.add(tr["obs"], tr["action"], tr["reward"], tr["cost"], tr["next_obs"],
                     tr["terminated"], extra={k: tr[k] for k in self.extra})
        return int(tr["obs"].shape[0])

    def sample(self, batch_size: int, generator: torch.Generator | None = None) -> Batch:
        """``batch_size`` transitions drawn uniformly with replacement."""
        if self.size == 0:
            raise ConfigError("cannot sample from an empty replay buffer")
        idx = torch.randint(0, self.size, (batch_size,), device=self.device, generator=generator)
        return Batch(self.obs[idx], self.action[idx], self.reward[idx], self.cost[idx],
                     self.next_obs[idx], self.terminated[idx],
                     {k: v[idx] for k, v in self.extra.items()})

    def state_dict(self) -> dict[str, object]:
        n = self.size
        return {"capacity": self.capacity, "pos": self.pos, "size": n,
                "obs": self.obs[:n].cpu(), "action": self.action[:n].cpu(),
                "reward": self.reward[:n].cpu(), "cost": self.cost[:n].cpu(),
                "next_obs": self.next_obs[:n].cpu(), "terminated": self.terminated[:n].cpu(),
                "extra": {k: v[:n].cpu() for k, v in self.extra.items()}}

    def load_state_dict(self, state: dict) -> None:
        if state["capacity"] != self.capacity or state["obs"].shape[1:] != self.obs.shape[1:] \
                or state["action"].shape[1:] != self.action.shape[1:] \
                or set(state.get("extra", {})) != set(self.extra):
            raise ConfigError("saved replay buffer does not match this run's capacity or sizes")
        n = int(state["size"])
        for name in ("obs", "action", "reward", "cost", "next_obs", "terminated"):
            getattr(self, name)[:n] = state[name].to(self.device)
        for name, v in state.get("extra", {}).items():
            self.extra[name][:n] = v.to(self.device)
        self.size, self.pos = n, int(state["pos"])


def concat_batches(parts: list[Batch]) -> Batch:
    """The batches of ``parts`` as one, in order."""
    def cat(name: str) -> torch.Tensor:
        return torch.cat([getattr(p, name) for p in parts])

    return Batch(cat("obs"), cat("action"), cat("reward"), cat("cost"), cat("next_obs"),
                 cat("terminated"),
                 extra={k: torch.cat([p.extra[k] for p in parts]) for k in parts[0].extra})


def sample_mixed(online: ReplayBuffer, shares: Sequence[tuple[ReplayBuffer, float]], size: int,
                 gen: torch.Generator | None = None) -> Batch:
    """``size`` transitions: ``round(size * share)`` from each (buffer, share) of ``shares``
    that holds any, in order, and the rest from ``online``; while ``online`` is empty, all of
    them from the first of ``shares`` that holds any (RLPD's demonstrations before online
    data arrives). One batch, the parts concatenated in that order."""
    held = [(buf, share) for buf, share in shares if len(buf)]
    if len(online) == 0 and held:
        return held[0][0].sample(size, gen)
    parts = [(buf, round(size * share)) for buf, share in held]
    parts = [(buf, n) for buf, n in parts if n] + [(online, size - sum(n for _, n in parts))]
    batches = [buf.sample(n, gen) for buf, n in parts if n > 0]
    return batches[0] if len(batches) == 1 else concat_batches(batches)


def mirror_half(batch: Batch, obs_signs: torch.Tensor, action_signs: torch.Tensor,
                gen: torch.Generator) -> Batch:
    """The batch with each transition replaced by its mirror image with probability 1/2
    (``robot_rl.sim.mirror``): its observation and next observation times ``obs_signs``
    (O,), its action times ``action_signs`` (A,); the reward, cost and end are the mirror
    image's own (the task is symmetric). Other tensors (``extra``) are kept as they are."""
    dev = batch.obs.device
    flip = torch.rand(batch.obs.shape[0], 1, generator=gen, device=gen.device).to(dev) < 0.5
    obs, act = obs_signs.to(dev), action_signs.to(dev)
    if batch.obs.shape[1] != obs.shape[0] or batch.action.shape[1] != act.shape[0]:
        raise ConfigError(f"mirror signs of {obs.shape[0]} observation and {act.shape[0]} "
                          f"action elements, transitions of {batch.obs.shape[1]} and "
                          f"{batch.action.shape[1]}")
    return dataclasses.replace(batch, obs=torch.where(flip, batch.obs * obs, batch.obs),
                               next_obs=torch.where(flip, batch.next_obs * obs,
                                                    batch.next_obs),
                               action=torch.where(flip, batch.action * act, batch.action))
