"""Safety critic: an ensemble cost critic Q_c(s, a), a Lagrange multiplier, and the gate.

Q_c(s, a) estimates the discounted sum of the env's constraint cost (the sum of the task's
cost terms, each 1 while violated) under the current policy:

    y_c = c + gamma_c * (1 - terminated) * Qc_target(s', a'),   a' ~ pi(s')

Two ways to use it, selectable and combinable (``SafetyConfig.mode``):

    lagrangian  SAC-Lagrangian (OmniSafe's SACLag): the actor minimizes
                (-Q + lambda * Q_c) / (1 + lambda); lambda, trained by Adam, rises while the
                recent mean episode cost exceeds ``cost_limit`` and falls (to 0) while below.
    gate        Action screening (after Recovery RL / SQRL): the policy's action and K - 1
                other candidates are scored by Q_c; the first under ``threshold`` is taken
                (the policy's own action whenever it is safe; ``by_value``: the best by Q,
                Recovery RL's choice), else the least-cost one (or a hold); see
                ``robot_rl.algos.gate.ActionGate``, the same gate the deploy loop runs.

The gate's estimate is pessimistic: mean + ``pessimism`` * std over the ensemble.
"""

from __future__ import annotations

import copy
from typing import Any

import torch

from robot_rl.algos.configs import SafetyConfig
from robot_rl.nets import EnsembleCritic


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
                   gamma: float | torch.Tensor) -> torch.Tensor:
    """y_c = c + gamma * (1 - terminated) * Q_c'(s', a'); all (B,)."""
    return cost + gamma * (1.0 - terminated) * next_qc


class Lagrange:
    """The multiplier lambda >= 0 of SAC-Lagrangian, after OmniSafe's ``Lagrange`` (SACLag).

    lambda is a parameter trained by Adam (``lambda_lr``) on the loss
    ``-lambda * (J_c - cost_limit)``, where J_c is the mean cost of the last ``cost_window``
    training episodes, then clamped to [0, ``lambda_max``]: it grows while the constraint is
    violated and shrinks back while it is met, by about ``lambda_lr`` per step however large
    the excess (a plain gradient step of 0.02 x excess grew lambda by 0.2-1.7 per update
    during a gated warm start). The actor's loss is ``(-Q + lambda Q_c) / (1 + lambda)``
    (``robot_rl.algos.sac``), as in OmniSafe.

    The window and the multiplier live on ``device``: ``add_episodes`` and ``step`` read
    nothing back to the host, so a training loop on a GPU steps the multiplier every round
    without waiting for the device. The window holds the last episodes' costs in the order
    they ended, the oldest first.
    """

    def __init__(self, cfg: SafetyConfig, device: str | torch.device = "cpu"):
        self.cfg = cfg
        self.param = torch.nn.Parameter(torch.tensor(float(cfg.lambda_init), device=device))
        self.opt = torch.optim.Adam([self.param], lr=cfg.lambda_lr)
        self.window = torch.zeros(cfg.cost_window, dtype=torch.float64, device=device)
        """(W,) the last training episodes' costs, whose mean is J_c: the ``count`` valid
        ones at the end, the oldest first (zeros before them)."""
        self.count = torch.zeros((), dtype=torch.long, device=device)
        """How many of the window's entries are episodes' (<= W)."""

    @property
    def device(self) -> torch.device:
        return self.param.device

    def add_episodes(self, costs: torch.Tensor | list[float],
                     ended: torch.Tensor | None = None) -> None:
        """Finished training episodes' costs in the order they ended: (N,), or the costs
        of E envs (E,) of which ``ended`` (E,) bool marks those whose episode ended (the
        window keeps the last ``cost_window``)."""
        costs = torch.as_tensor(costs, dtype=torch.float64).to(self.device)
        ended = torch.ones(costs.shape, dtype=torch.bool, device=self.device) \
            if ended is None else ended.to(self.device, torch.bool)
        W = self.cfg.cost_window
        valid = torch.cat([torch.arange(W, device=self.device) >= W - self.count, ended])
        merged = torch.cat([self.window, costs])
        after = valid.flip(0).cumsum(0).flip(0) - valid.long()  # valid entries after each
        keep = valid & (after < W)
        slot = torch.where(keep, W - 1 - after, W)  # slot W: those that leave the window
        window = torch.zeros(W + 1, dtype=torch.float64, device=self.device)
        self.window = window.scatter_(0, slot, merged)[:W]
        self.count = (self.count + ended.sum()).clamp(max=W)

    def step(self) -> None:
        """One update on the window's mean cost; none before an episode has ended (on the
        CPU, where reading the count is free; on a GPU that step's gradient is zero, which
        leaves lambda and Adam's moments as they are)."""
        n = self.count
        if self.device.type == "cpu" and int(n) == 0:
            return
        # in order, oldest first: the sum a list of the window's costs has
        mean = self.window.cumsum(0)[-1] / n.clamp(min=1)
        grad = -(mean - self.cfg.cost_limit)  # d/dlambda of -lambda (J_c - limit)
        if self.device.type != "cpu":
            grad = torch.where(n > 0, grad, 0.0)
        self._adam_step(grad)

    @property
    def value(self) -> float:
        """lambda as a number (on a GPU, reading it waits for the device)."""
        return float(self.param.detach())

    @property
    def weight(self) -> float | torch.Tensor:
        """lambda for a loss: the number on a CPU, where reading it is free; on a GPU the
        tensor (0-dim), which a loss reads without waiting for the device."""
        return self.value if self.device.type == "cpu" else self.param.detach()

    def update(self, mean_episode_cost: float) -> float:
        """One Adam step on the cost excess ``J_c - cost_limit``; the new value."""
        self._adam_step(torch.tensor(-(mean_episode_cost - self.cfg.cost_limit),
                                     dtype=torch.float64))
        return self.value

    def _adam_step(self, grad: torch.Tensor) -> None:
        """Adam's step on d/dlambda = ``grad``, then the clamp to [0, lambda_max]."""
        self.param.grad = grad.to(self.param.device, self.param.dtype).reshape(())
        self.opt.step()
        with torch.no_grad():
            self.param.clamp_(0.0, self.cfg.lambda_max)

    def state_dict(self) -> dict[str, Any]:
        # a copy: Adam's loader keeps the tensors it is given, which would tie two
        # multipliers' moments together
        return {"value": self.value, "opt": copy.deepcopy(self.opt.state_dict())}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """The value and Adam's moments (checkpoints from before the Adam multiplier hold
        the value alone); the learning rate stays this config's."""
        with torch.no_grad():
            self.param.fill_(float(state["value"]))
        if "opt" in state:
            self.opt.load_state_dict(state["opt"])
            for g in self.opt.param_groups:
                g["lr"] = self.cfg.lambda_lr
