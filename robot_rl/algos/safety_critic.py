"""Safety critic: an ensemble cost critic Q_c(s, a), a Lagrange multiplier, and the gate.

Q_c(s, a) estimates the discounted sum of the env's constraint cost (the sum of the task's
cost terms, each 1 while violated) under the current policy:

    y_c = c + gamma_c * (1 - terminated) * Qc_target(s', a'),   a' ~ pi(s')

Two ways to use it, selectable and combinable (``SafetyConfig.mode``):

    lagrangian  SAC-Lagrangian: the actor minimizes -Q + lambda * Q_c; lambda rises while the
                mean episode cost exceeds ``cost_limit`` and falls (to 0) while below.
    gate        Recovery RL / SQRL style action selection: K candidates are sampled from the
                actor, those with Q_c above ``threshold`` are dropped, the best by Q among the
                rest is taken, else the least-cost one (or a hold); see
                ``robot_rl.algos.gate.ActionGate``, the same gate the deploy loop runs.

The gate's estimate is pessimistic: mean + ``pessimism`` * std over the ensemble.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import torch

from robot_rl.errors import ConfigError
from robot_rl.nets import EnsembleCritic

SafetyMode = Literal["off", "lagrangian", "gate", "both"]


@dataclasses.dataclass(kw_only=True)
class SafetyConfig:
    """The safety critic and how it constrains the policy."""

    mode: SafetyMode = "gate"
    """off: no cost critic; lagrangian: penalize Q_c in the actor loss; gate: reject unsafe
    candidate actions; both: lagrangian and gate."""
    gamma: float = 0.9
    """Discount of the cost critic; 1 / (1 - gamma) steps is its look-ahead."""
    num_critics: int = 2
    """Ensemble size of the cost critic."""
    hidden: tuple[int, ...] = (256, 256)
    """Hidden layer sizes of each cost critic."""
    lr: float = 3e-4
    """Adam learning rate of the cost critic."""
    pessimism: float = 1.0
    """Gate estimate = mean + pessimism * std over the ensemble."""
    threshold: float = 0.3
    """Gate: candidates with estimated discounted cost above this are rejected."""
    candidates: int = 8
    """Gate: candidate actions sampled from the actor per decision (K)."""
    fallback: Literal["least_cost", "hold"] = "least_cost"
    """Gate: what to do when every candidate is rejected."""
    cost_limit: float = 1.0
    """Lagrangian: the mean episode cost the policy may spend (cost steps per episode)."""
    lambda_lr: float = 0.02
    """Lagrangian: step size of the multiplier per update (on the cost excess)."""
    lambda_init: float = 0.0
    """Lagrangian: initial multiplier."""
    lambda_max: float = 100.0
    """Lagrangian: upper bound of the multiplier."""

    @property
    def lagrangian(self) -> bool:
        return self.mode in ("lagrangian", "both")

    @property
    def gate(self) -> bool:
        return self.mode in ("gate", "both")

    def validate(self) -> None:
        if self.mode not in ("off", "lagrangian", "gate", "both"):
            raise ConfigError(f"safety mode must be off, lagrangian, gate or both, "
                              f"got {self.mode!r}")
        if not 0.0 <= self.gamma < 1.0:
            raise ConfigError(f"safety gamma must be in [0, 1), got {self.gamma}")
        if self.candidates < 1 or self.num_critics < 1:
            raise ConfigError("safety candidates and num_critics must be >= 1")


class CostCritic(torch.nn.Module):
    """Ensemble Q_c(s, a) with a Polyak-averaged target copy."""

    def __init__(self, obs_dim: int, act_dim: int, cfg: SafetyConfig):
        super().__init__()
        self.cfg = cfg
        self.q = EnsembleCritic(cfg.num_critics, obs_dim, act_dim, cfg.hidden)
        self.q_target = EnsembleCritic(cfg.num_critics, obs_dim, act_dim, cfg.hidden)
        self.q_target.load_state_dict(self.q.state_dict())
        self.q_target.requires_grad_(False)

    def estimate(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        """Pessimistic cost estimate (B,): ensemble mean + pessimism * std."""
        qc = self.q(obs, act)  # (N, B)
        if qc.shape[0] == 1:
            return qc[0]
        return qc.mean(0) + self.cfg.pessimism * qc.std(0)

    def loss(self, obs: torch.Tensor, act: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Sum over members of the mean squared TD error to ``target`` (B,)."""
        return ((self.q(obs, act) - target) ** 2).mean(1).sum()

    @torch.no_grad()
    def target_value(self, next_obs: torch.Tensor, next_act: torch.Tensor) -> torch.Tensor:
        """Target network's mean estimate (B,) at (s', a')."""
        return self.q_target(next_obs, next_act).mean(0)


def cost_td_target(cost: torch.Tensor, terminated: torch.Tensor, next_qc: torch.Tensor,
                   gamma: float) -> torch.Tensor:
    """y_c = c + gamma * (1 - terminated) * Q_c'(s', a'); all (B,)."""
    return cost + gamma * (1.0 - terminated) * next_qc


class Lagrange:
    """The multiplier lambda >= 0 of SAC-Lagrangian, updated on observed episode costs.

    ``update(mean_episode_cost)``: lambda <- clip(lambda + lr * (cost - limit), 0, max), so it
    grows while the constraint is violated and shrinks back while it is met.
    """

    def __init__(self, cfg: SafetyConfig):
        self.cfg = cfg
        self.value = float(cfg.lambda_init)

    def update(self, mean_episode_cost: float) -> float:
        excess = mean_episode_cost - self.cfg.cost_limit
        self.value = min(max(self.value + self.cfg.lambda_lr * excess, 0.0), self.cfg.lambda_max)
        return self.value

    def state_dict(self) -> dict[str, float]:
        return {"value": self.value}

    def load_state_dict(self, state: dict[str, float]) -> None:
        self.value = float(state["value"])
