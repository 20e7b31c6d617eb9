"""Policies that map a short observation history to an action *chunk*: a flow-matching
(diffusion-style) policy and a plain MLP regressor, behind one interface.

    policy = make_policy(PolicyConfig(), "flow", obs_stats=obs, act_stats=actions)
    loss = policy.loss(obs_hist, chunk, mask)           # behaviour cloning
    chunk = policy(obs_hist, noise)                     # (B, H, A) in bounds, deterministic
    chunk = policy.sample(obs_hist, generator)          # noise drawn from N(0, I)
    action = student(obs_hist, noise, step)             # a policy with a clock (below)

Shapes: B = batch, T = observation history, O = obs dim, H = chunk horizon, A = action dim.
``obs_hist`` is (B, T, O), oldest first; chunks are (B, H, A); ``mask`` (B, H) is false on
the steps past an episode's end (padded, not learned); ``step`` (B,) or (B, 1) counts the
control steps since each episode's start (0 at its first). Chunks are clipped to the action
bounds: [-1, 1] (our tasks' action spaces) unless the policy was made with others (the range
of a foreign dataset's actions).

**Flow matching** (rectified flow): with noise x0 ~ N(0, I) and the normalized chunk x1,
x_t = (1 - t) x0 + t x1 and the network learns the velocity x1 - x0 at uniform t; acting
integrates dx/dt = v(x, t, obs) from t = 0 to 1 in ``flow_steps`` Euler steps. Given the
noise, acting is a deterministic function of (obs, noise): DSRL steers the policy by
choosing that noise, and export unrolls the integration into the graph.

A **clock** (``PolicyConfig.clock``, MLP policies) is a one-hot of ``step mod P`` for each
period P, appended to the normalized observations: the phase of a teacher that keeps state
between control steps (a residual run's chunk position and held correction), which no
observation carries, for the one-step student that imitates it.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence

import torch
from torch import nn

from robot_rl.errors import ConfigError
from robot_rl.policies.config import PolicyConfig, PolicyKind
from robot_rl.policies.denoisers import MLPDenoiser, UNet1DDenoiser, make_blocks
from robot_rl.policies.normalizer import Normalizer


class ChunkPolicy(nn.Module, abc.ABC):
    """The interface (see module docstring); subclasses define ``loss`` and ``forward``."""

    kind: str

    low: torch.Tensor
    high: torch.Tensor
    obs_seen: torch.Tensor
    clock: torch.Tensor

    def __init__(self, cfg: PolicyConfig, obs_norm: Normalizer, act_norm: Normalizer,
                 bounds: tuple[torch.Tensor, torch.Tensor] | None = None,
                 obs_names: Sequence[str] | None = None):
        """``bounds``: (low, high) (A,) of the actions (default: -1 and 1); ``obs_names``:
        one name per observation element ("ee_pos.0", ...), which ``cfg.ignore_obs``
        picks from (None: the policy sees every element, or its loaded state says which)."""
        super().__init__()
        cfg.validate()
        self.cfg = cfg
        self.obs_norm, self.act_norm = obs_norm, act_norm
        self.obs_dim, self.act_dim = int(obs_norm.mean.shape[0]), int(act_norm.mean.shape[0])
        self.horizon, self.obs_history = cfg.horizon, cfg.obs_history
        low, high = bounds if bounds is not None else (-torch.ones(self.act_dim),
                                                       torch.ones(self.act_dim))
        self.register_buffer("low", low.detach().float().clone().reshape(self.act_dim))
        self.register_buffer("high", high.detach().float().clone().reshape(self.act_dim))
        self.register_buffer("obs_seen", seen_mask(obs_names, cfg.ignore_obs, self.obs_dim))
        """(O,) 1 for each observation element the policy sees, 0 for those it ignores."""
        if cfg.clock:
            self.register_buffer("clock", clock_table(cfg.clock))
            """(2, C) int64 the clock's periods and phases (``clock_table``)."""
        self._register_load_state_dict_pre_hook(self._default_buffers)

    def _default_buffers(self, state: dict[str, torch.Tensor], prefix: str,
                         *args: object) -> None:
        """Checkpoints from before the bounds were saved hold [-1, 1] actions; those from
        before ``obs_seen`` saw every observation element."""
        for name, value in (("low", -1.0), ("high", 1.0)):
            state.setdefault(prefix + name, torch.full((self.act_dim,), value))
        state.setdefault(prefix + "obs_seen", torch.ones(self.obs_dim))

    def unseen_note(self) -> str:
        """"; not seen: last_action (3 of 30 observation elements)", or "" where the policy
        sees every element."""
        hidden = int((self.obs_seen == 0).sum())
        if hidden == 0:
            return ""
        return (f"; not seen: {', '.join(self.cfg.ignore_obs)} ({hidden} of {self.obs_dim} "
                f"observation elements)")

    def clip(self, chunk: torch.Tensor) -> torch.Tensor:
        """(B, H, A) actions clipped to the bounds."""
        return torch.maximum(torch.minimum(chunk, self.high), self.low)

    @property
    def clock_dim(self) -> int:
        """C: the clock's features (the sum of its periods; 0 without a clock)."""
        return sum(int(p) for p in self.cfg.clock)

    def condition(self, obs: torch.Tensor, step: torch.Tensor | None = None) -> torch.Tensor:
        """(B, T, O) observations (and for a policy with a clock, the steps ``step`` (B,)
        or (B, 1) since the episode's start) -> (B, T * O + C) normalized conditioning."""
        if not torch.jit.is_tracing() and (
                obs.dim() != 3 or obs.shape[1:] != (self.obs_history, self.obs_dim)):
            raise ConfigError(f"the policy takes observations (B, {self.obs_history}, "
                              f"{self.obs_dim}), got {tuple(obs.shape)}")
        cond = (self.obs_norm(obs) * self.obs_seen).flatten(1)
        if not self.cfg.clock:
            return cond
        if step is None:
            raise ConfigError(f"the policy sees a clock of periods {self.cfg.clock}: pass the "
                              "steps since each episode's start")
        step = step[:, None] if step.dim() == 1 else step  # (B, 1), as the graph takes it
        return torch.cat([cond, clock_features(step, self.clock)], dim=1)

    @abc.abstractmethod
    def loss(self, obs: torch.Tensor, chunk: torch.Tensor,
             mask: torch.Tensor | None = None) -> torch.Tensor:
        """Behaviour-cloning loss of chunks (B, H, A), steps outside ``mask`` not counted."""

    @abc.abstractmethod
    def forward(self, obs: torch.Tensor, noise: torch.Tensor,
                step: torch.Tensor | None = None) -> torch.Tensor:
        """(B, H, A) chunk within the bounds for observations (B, T, O) and noise (B, H, A)
        (and a policy with a clock, the steps (B,) since each episode's start)."""

    def sample(self, obs: torch.Tensor, generator: torch.Generator | None = None,
               step: torch.Tensor | None = None) -> torch.Tensor:
        """(B, H, A) chunk for noise drawn from N(0, I)."""
        noise = torch.randn(obs.shape[0], self.horizon, self.act_dim, generator=generator,
                            device=obs.device)
        return self(obs, noise, step)


def _masked_mse(err: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Mean over the unmasked steps of the per-step mean squared error (B, H, A)."""
    per_step = (err * err).mean(-1)
    if mask is None:
        return per_step.mean()
    m = mask.to(per_step.dtype)
    return (per_step * m).sum() / m.sum().clamp(min=1.0)


class FlowPolicy(ChunkPolicy):
    """Flow-matching chunk policy (see module docstring)."""

    kind = "flow"

    def __init__(self, cfg: PolicyConfig, obs_norm: Normalizer, act_norm: Normalizer,
                 bounds: tuple[torch.Tensor, torch.Tensor] | None = None,
                 obs_names: Sequence[str] | None = None):
        super().__init__(cfg, obs_norm, act_norm, bounds, obs_names)
        if cfg.clock:
            raise ConfigError("a clock is for MLP policies (one-step students); a flow "
                              "policy has none")
        cond = cfg.obs_history * self.obs_dim
        self.net: nn.Module
        if cfg.denoiser == "unet":
            self.net = UNet1DDenoiser(self.act_dim, cfg.horizon, cond, cfg.unet_channels)
        else:
            self.net = MLPDenoiser(self.act_dim, cfg.horizon, cond, cfg.width, cfg.blocks,
                                   block=cfg.block)

    def loss(self, obs: torch.Tensor, chunk: torch.Tensor,
             mask: torch.Tensor | None = None) -> torch.Tensor:
        cond = self.condition(obs)
        x1 = self.act_norm(chunk)
        x0 = torch.randn_like(x1)
        t = torch.rand(x1.shape[0], device=x1.device)
        xt = x0 + t[:, None, None] * (x1 - x0)
        return _masked_mse(self.net(xt, t, cond) - (x1 - x0), mask)

    def integrate(self, obs: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        """(B, H, A) the flow's endpoint in normalized action units (before the clip)."""
        cond = self.condition(obs)
        x = noise
        n = self.cfg.flow_steps
        dt = 1.0 / n
        for i in range(n):
            t = torch.full((x.shape[0],), i * dt, device=x.device, dtype=x.dtype)
            x = x + dt * self.net(x, t, cond)
        return x

    def forward(self, obs: torch.Tensor, noise: torch.Tensor,
                step: torch.Tensor | None = None) -> torch.Tensor:
        """(B, H, A) chunk within the bounds: ``noise`` (B, H, A) integrated along the flow."""
        return self.clip(self.act_norm.inverse(self.integrate(obs, noise)))


class MLPChunkPolicy(ChunkPolicy):
    """Regresses the chunk directly (MSE): the BC baseline. It ignores ``noise``; on
    multimodal data it predicts the modes' mean."""

    kind = "mlp"

    def __init__(self, cfg: PolicyConfig, obs_norm: Normalizer, act_norm: Normalizer,
                 bounds: tuple[torch.Tensor, torch.Tensor] | None = None,
                 obs_names: Sequence[str] | None = None):
        super().__init__(cfg, obs_norm, act_norm, bounds, obs_names)
        width = cfg.width
        self.net = nn.Sequential(
            nn.Linear(cfg.obs_history * self.obs_dim + self.clock_dim, width),
            *make_blocks(cfg.block, width, cfg.blocks),
            nn.LayerNorm(width), nn.SiLU(), nn.Linear(width, cfg.horizon * self.act_dim))

    def predict(self, obs: torch.Tensor, step: torch.Tensor | None = None) -> torch.Tensor:
        """(B, H, A) the chunk in normalized action units (before the clip)."""
        return self.net(self.condition(obs, step)).view(-1, self.horizon, self.act_dim)

    def loss(self, obs: torch.Tensor, chunk: torch.Tensor,
             mask: torch.Tensor | None = None) -> torch.Tensor:
        return _masked_mse(self.predict(obs) - self.act_norm(chunk), mask)

    def forward(self, obs: torch.Tensor, noise: torch.Tensor,
                step: torch.Tensor | None = None) -> torch.Tensor:
        return self.clip(self.act_norm.inverse(self.predict(obs, step)))


def clock_table(periods: Sequence[int]) -> torch.Tensor:
    """(2, C) int64 a clock's features, C = sum(periods): each one's period and phase."""
    return torch.tensor([[p for p in periods for _ in range(p)],
                         [k for p in periods for k in range(p)]], dtype=torch.long)


def clock_features(step: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """(B, C) float32 for the steps (B, 1) (whole numbers; the exported graph takes them as
    int64) and a ``clock_table``: for each period P, the one-hot of step mod P."""
    step = step if step.dtype == torch.long else step.long()  # no cast in the graph
    return (torch.remainder(step, table[0]) == table[1]).float()


def seen_mask(obs_names: Sequence[str] | None, ignore: Sequence[str], obs_dim: int
              ) -> torch.Tensor:
    """(O,) 1 for each observation element whose term ("ee_pos" of "ee_pos.0") is not in
    ``ignore``; all ones without names."""
    if obs_names is None:
        return torch.ones(obs_dim)
    if len(obs_names) != obs_dim:
        raise ConfigError(f"{len(obs_names)} observation names for {obs_dim} elements")
    return torch.tensor([float(n.rsplit(".", 1)[0] not in ignore) for n in obs_names])


def make_policy(cfg: PolicyConfig, kind: PolicyKind, obs_dim: int, act_dim: int,
                obs: torch.Tensor | None = None, actions: torch.Tensor | None = None,
                bounds: tuple[torch.Tensor, torch.Tensor] | None = None,
                obs_names: Sequence[str] | None = None) -> ChunkPolicy:
    """A policy whose normalization comes from ``obs`` (N, O) and ``actions`` (N, A) (the
    training data); identity normalization where they are not given (a policy whose state
    is loaded next). ``bounds``: the actions' (low, high), default [-1, 1]; ``obs_names``:
    one per observation element, for ``cfg.ignore_obs``."""
    obs_norm = Normalizer.from_data(obs) if obs is not None else Normalizer.identity(obs_dim)
    act_norm = Normalizer.from_data(actions) if actions is not None else \
        Normalizer.identity(act_dim)
    if kind == "flow":
        return FlowPolicy(cfg, obs_norm, act_norm, bounds, obs_names)
    if kind == "mlp":
        return MLPChunkPolicy(cfg, obs_norm, act_norm, bounds, obs_names)
    raise ConfigError(f"unknown policy kind {kind!r}; kinds: flow, mlp")
