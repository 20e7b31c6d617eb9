"""n-step transitions for the replay buffer (ResFiT's ``n_step`` 3; Sutton & Barto 7.1).

    writer = NStepWriter(n=3, gamma=0.994, cost_gamma=0.99, num_envs=16, obs_dim=30, act_dim=3)
    out = writer.push(obs, action, reward, cost, info["final_obs"], terminated, done, keep)
    if out is not None:
        buffer.add(*out.columns(), extra=out.extra())     # DISCOUNT, COST_DISCOUNT extras

Each stored transition starts at one step's observation and action and carries the
discounted sums of the next n rewards and costs, the observation n steps on, and the
discount its bootstrap takes (gamma^n; gamma^m for the m < n steps left when the episode
ended first). The TD target is then ``R + discount (1 - terminated) (Q'(s_n, a') - alpha
log pi(a'|s_n))``: like ResFiT's and most n-step SAC/TD3 code, the entropy bonuses of the
steps in between are not added. A transition leaves the writer n steps after its step, at
once when its episode ends (``done``), or when its env's chain is cut (a step not ``keep``
or ``cut()``), bootstrapping from the observation where the chain stopped. n = 1 gives
exactly the one-step transitions. A resumed run starts with empty chains: the last n - 1
steps of each env before the interruption are not stored.

Shapes: E envs, O observation and A action elements; chains are kept as (n, E, ...) with
the oldest step first.
"""

from __future__ import annotations

import dataclasses

import torch

from robot_rl.errors import ConfigError

DISCOUNT = "discount"
"""The replay extra holding each transition's bootstrap discount of the reward critics."""
COST_DISCOUNT = "cost_discount"
"""The replay extra holding each transition's bootstrap discount of the cost critic."""


@dataclasses.dataclass
class NStepTransitions:
    """Transitions ready for the replay buffer, T of them."""

    obs: torch.Tensor  # (T, O)
    action: torch.Tensor  # (T, A)
    reward: torch.Tensor  # (T,) discounted sum of up to n rewards
    cost: torch.Tensor  # (T,) discounted sum of up to n costs
    next_obs: torch.Tensor  # (T, O) where the chain stopped
    terminated: torch.Tensor  # (T,) float
    discount: torch.Tensor  # (T,) gamma^m of the bootstrap
    cost_discount: torch.Tensor  # (T,) cost_gamma^m

    def columns(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor,
                               torch.Tensor, torch.Tensor]:
        """(obs, action, reward, cost, next_obs, terminated): ``ReplayBuffer.add``'s order."""
        return self.obs, self.action, self.reward, self.cost, self.next_obs, self.terminated

    def extra(self) -> dict[str, torch.Tensor]:
        return {DISCOUNT: self.discount, COST_DISCOUNT: self.cost_discount}

    @staticmethod
    def cat(parts: list[NStepTransitions]) -> NStepTransitions:
        """The transitions of ``parts`` one after another."""
        return NStepTransitions(*(torch.cat([getattr(t, f.name) for t in parts])
                                  for f in dataclasses.fields(NStepTransitions)))


class NStepWriter:
    """Turns one vector step at a time into n-step transitions (module docstring)."""

    def __init__(self, n: int, gamma: float, cost_gamma: float, num_envs: int, obs_dim: int,
                 act_dim: int, device: str | torch.device = "cpu"):
        if n < 1:
            raise ConfigError(f"n-step returns need n >= 1, got {n}")
        self.n, self.gamma, self.cost_gamma = n, gamma, cost_gamma
        dev = torch.device(device)
        self.obs = torch.zeros(n, num_envs, obs_dim, device=dev)
        self.action = torch.zeros(n, num_envs, act_dim, device=dev)
        self.reward = torch.zeros(n, num_envs, device=dev)
        self.cost = torch.zeros(n, num_envs, device=dev)
        self.length = torch.zeros(num_envs, dtype=torch.long, device=dev)
        """Steps waiting in each env's chain (< n between calls)."""

    @torch.no_grad()
    def push(self, obs: torch.Tensor, action: torch.Tensor, reward: torch.Tensor,
             cost: torch.Tensor, next_obs: torch.Tensor, terminated: torch.Tensor,
             done: torch.Tensor, keep: torch.Tensor | None = None
             ) -> NStepTransitions | None:
        """Add one vector step: observations (E, O) and actions (E, A) taken there,
        rewards, costs (E,), the true next observations (E, O; the final ones where an
        episode ended), ``terminated`` and ``done`` (terminated or truncated) (E,) and
        ``keep`` (E,) bool (a step not kept is not stored and cuts its env's chain, which
        then bootstraps from ``obs``). Returns the transitions that are complete, or None."""
        out: list[NStepTransitions] = []
        term = terminated.float()
        if keep is not None and not bool(keep.all()):
            out.append(self._flush(~keep, obs, torch.zeros_like(term)))
        live = torch.ones_like(done, dtype=torch.bool) if keep is None else keep
        rows = live.nonzero().squeeze(1)
        slot = self.length[rows]
        self.obs[slot, rows], self.action[slot, rows] = obs[rows], action[rows]
        self.reward[slot, rows], self.cost[slot, rows] = reward[rows].float(), cost[rows].float()
        self.length[rows] += 1
        full = live & (self.length == self.n) & ~done
        if bool(full.any()):
            out.append(self._emit(full, 0, next_obs, term))
            self._shift(full)
        if bool((done & live).any()):
            out.append(self._flush(done & live, next_obs, term))
        out = [t for t in out if t.obs.shape[0]]
        return NStepTransitions.cat(out) if out else None

    def cut(self, next_obs: torch.Tensor) -> NStepTransitions | None:
        """End every chain now, bootstrapping from ``next_obs`` (E, O): before the envs are
        reset outside an episode's end (an evaluation on the training envs)."""
        every = torch.ones_like(self.length, dtype=torch.bool)
        t = self._flush(every, next_obs, torch.zeros(every.shape, device=next_obs.device))
        return t if t.obs.shape[0] else None

    def _emit(self, envs: torch.Tensor, start: int, next_obs: torch.Tensor,
              term: torch.Tensor) -> NStepTransitions:
        """The transitions of chain position ``start`` of the envs in ``envs`` (E,) bool
        that hold more than ``start`` steps, summed to their chain's end."""
        rows = (envs & (self.length > start)).nonzero().squeeze(1)
        m = self.length[rows] - start  # steps summed, (T,)
        k = torch.arange(self.n - start, device=rows.device)
        w = (k[:, None] < m[None, :]).float()  # (n - start, T)
        r = (self.gamma ** k.float())[:, None] * w * self.reward[start:, rows]
        c = (self.cost_gamma ** k.float())[:, None] * w * self.cost[start:, rows]
        return NStepTransitions(
            self.obs[start, rows], self.action[start, rows],
            r.sum(0), c.sum(0),
            next_obs[rows], term[rows],
            self.gamma ** m.float(), self.cost_gamma ** m.float())

    def _flush(self, envs: torch.Tensor, next_obs: torch.Tensor,
               term: torch.Tensor) -> NStepTransitions:
        """Every waiting step of the envs in ``envs``, their chains then emptied."""
        parts = [self._emit(envs, i, next_obs, term) for i in range(self.n)]
        self.length[envs] = 0
        return NStepTransitions.cat(parts)

    def _shift(self, envs: torch.Tensor) -> None:
        """Drop the oldest step of the envs in ``envs``."""
        for q in (self.obs, self.action, self.reward, self.cost):
            q[:, envs] = torch.roll(q[:, envs], -1, dims=0)
        self.length[envs] -= 1
