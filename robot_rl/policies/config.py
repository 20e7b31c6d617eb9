"""The chunked policy's config (``PolicyConfig``), importable without torch (``robot-rl bc
--help`` reads it); ``policies.chunk_policy`` builds the policy from it."""

from __future__ import annotations

import dataclasses
from typing import Literal

from robot_rl.errors import ConfigError

PolicyKind = Literal["flow", "mlp"]


@dataclasses.dataclass(kw_only=True)
class PolicyConfig:
    """Chunked policy: what it sees, what it predicts, its network."""

    horizon: int = 8
    """H: actions predicted per call (the chunk)."""
    execute: int | None = None
    """K <= H: actions of each chunk executed before the policy is called again (default:
    the whole chunk, K = H)."""
    obs_history: int = 1
    """T: observations the policy sees (the current one and T - 1 before it)."""
    denoiser: Literal["mlp", "unet"] = "mlp"
    """Flow policy network: residual MLP with LayerNorm, or a 1-D temporal U-Net."""
    width: int = 256
    """Width of the MLP denoiser's (and the MLP policy's) residual blocks."""
    blocks: int = 3
    """Blocks of the MLP denoiser (and the MLP policy) after its input layer."""
    block: Literal["residual", "plain"] = "residual"
    """The MLP's blocks: residual (x + W2 silu(W1 LayerNorm(x)), widths d -> 2d -> d) or
    plain (W silu(x), d -> d: a quarter of the multiply-adds; one-step students, whose
    call latency counts)."""
    unet_channels: tuple[int, ...] = (64, 128)
    """Channels per level of the U-Net denoiser."""
    flow_steps: int = 10
    """Euler integration steps from noise to a chunk when acting."""
    ignore_obs: tuple[str, ...] = ("last_action",)
    """Observation terms the policy does not see: their inputs are zeroed after
    normalization, so the policy still takes the whole observation (the env's, the
    dataset's, the artifact's). The last action by default: a policy cloned from
    demonstrations that pause or hold still learns to repeat the action it sees (the copycat
    problem of cloning from observation histories), and stalls (docs/learners.md)."""
    clock: tuple[int, ...] = ()
    """Periods P in control steps of a clock the policy sees (``policies.chunk_policy``):
    for each, a one-hot of the steps since the episode's start mod P. Empty: no clock. MLP policies
    only; a residual run's one-step student sees (its flow's executed steps, its residual's
    decision period)."""

    @property
    def executed(self) -> int:
        """K: the actions of a chunk executed."""
        return self.horizon if self.execute is None else self.execute

    def validate(self) -> None:
        if self.horizon < 1 or not 1 <= self.executed <= self.horizon:
            raise ConfigError(f"need horizon >= 1 and 1 <= execute <= horizon, got horizon "
                              f"{self.horizon}, execute {self.execute}")
        if self.obs_history < 1 or self.flow_steps < 1 or self.width < 1 or self.blocks < 0:
            raise ConfigError("obs_history, flow_steps and width must be >= 1, blocks >= 0")
        if any(int(p) < 1 for p in self.clock):
            raise ConfigError(f"a clock's periods must be >= 1 control step, got {self.clock}")
