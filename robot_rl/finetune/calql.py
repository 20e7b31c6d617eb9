"""Cal-QL: conservative Q-learning calibrated by Monte-Carlo returns (Nakamoto et al. 2023),
WSRL's offline phase, after ``zhouzypaul/wsrl`` (``agents/cql.py``, ``calql.py``) and
``nakamotoo/Cal-QL``.

    reg = CalQL(CalQLConfig(alpha=1.0))
    agent.update(demo_batch, critic_regularizer=reg)     # batch.extra["mc_return"] (B,)

The critics' loss gets ``alpha * sum_i mean_B(logsumexp_j Q_i(s, a_j) - Q_i(s, a_data))``
over ``n`` uniform actions, ``n`` policy actions at s and ``n`` policy actions at s'
(valued at s), importance-weighted (``- log 0.5^A`` for the uniform ones, ``- log pi`` for the
policy's). Cal-QL bounds the policy samples' values below by the state's Monte-Carlo return
(the discounted return-to-go of its demonstration): the pushed-down values never go under
what the data already earned, so an online policy that starts from them is not pulled back
to the demonstrations' actions by falsely low values. ``calibrated=False`` is plain CQL.

Shapes: N critics, B batch, n samples per kind, A action dims.
"""

from __future__ import annotations

import math

import torch

from robot_rl.algos.sac import SAC, Metrics
from robot_rl.finetune.configs import CalQLConfig
from robot_rl.replay import Batch

MC_RETURN = "mc_return"
"""The demo buffer's extra tensor: each transition's discounted return-to-go (B,)."""


def mc_returns(reward: torch.Tensor, episode: torch.Tensor, gamma: float) -> torch.Tensor:
    """Discounted return-to-go of every step within its episode (N,): rtg[t] = r[t] +
    gamma * rtg[t + 1], restarting at each episode's last step. ``episode`` (N,) holds the
    episode index of each step, steps of an episode consecutive and in order."""
    out = torch.zeros_like(reward, dtype=torch.float64)
    nxt = 0.0
    for t in range(len(reward) - 1, -1, -1):
        last = t == len(reward) - 1 or bool(episode[t + 1] != episode[t])
        nxt = float(reward[t]) + (0.0 if last else gamma * nxt)
        out[t] = nxt
    return out.to(reward.dtype)


class CalQL:
    """The regularizer (see module docstring), a ``SAC.update`` critic regularizer."""

    def __init__(self, cfg: CalQLConfig):
        cfg.validate()
        self.cfg = cfg

    def __call__(self, agent: SAC, obs: torch.Tensor, next_obs: torch.Tensor, batch: Batch,
                 q_data: torch.Tensor) -> tuple[torch.Tensor, Metrics]:
        cfg = self.cfg
        B, n, A = obs.shape[0], cfg.actions, agent.act_dim
        rep_obs = obs.repeat_interleave(n, dim=0)  # (B n, O)
        rep_next = next_obs.repeat_interleave(n, dim=0)
        rand = torch.rand(B * n, A, device=obs.device, generator=None) * 2.0 - 1.0
        with torch.no_grad():
            pi_a, pi_logp, _ = agent.actor_sample(batch, rep_obs, next_obs=False)
            next_a, next_logp, _ = agent.actor_sample(batch, rep_next, next_obs=True)

        def q_of(actions: torch.Tensor) -> torch.Tensor:
            return agent.critic(rep_obs, actions).view(-1, B, n)  # (N, B, n)

        q_rand, q_pi, q_next = q_of(rand), q_of(pi_a), q_of(next_a)
        bound = torch.zeros((), device=obs.device)
        if cfg.calibrated:
            lower = batch.extra[MC_RETURN].view(1, B, 1)
            bound = ((q_pi < lower).float().mean() + (q_next < lower).float().mean()) / 2
            q_pi, q_next = torch.maximum(q_pi, lower), torch.maximum(q_next, lower)
        log_uniform = A * math.log(0.5)
        cat = torch.cat([q_rand - log_uniform, q_pi - pi_logp.view(1, B, n),
                         q_next - next_logp.view(1, B, n)], dim=2)  # (N, B, 3n)
        lse = torch.logsumexp(cat / cfg.temperature, dim=2) * cfg.temperature  # (N, B)
        gap = (lse - q_data).mean(1)  # (N,)
        reg = cfg.alpha * gap.sum()
        return reg, {"losses/cql": gap.detach().mean(),
                     "charts/calql_bound_rate": bound}
