"""Soft actor-critic with a critic ensemble and an optional safety critic.

    agent = SAC(obs_dim, act_dim, SACConfig(gamma=0.99), SafetyConfig(mode="gate"))
    step = agent.act(obs)                          # ActStep: action (E, A), hold (E,) ...
    agent.observe(obs)                             # folds obs into the normalizer
    metrics = agent.update(buffer.sample(256))     # one gradient step of every network

The recipe is RLPD/REDQ's: an ensemble of N critics with LayerNorm, the TD target takes the
min over a random subset of 2 members, and many gradient steps per collected step are
possible (``SACConfig.updates_per_step``). The temperature is tuned to a target entropy.
Everything runs on ``device`` (CPU here, the GPU with the Warp backend); large batches and
thousands of envs only change tensor sizes.

Soft TD target (B = batch):

    y = r + gamma * (1 - terminated) * (min_{i in subset} Q'_i(s', a') - alpha * log pi(a'|s'))

Time-outs bootstrap: the replay stores the true final observation as s' and only a real
termination zeroes the future.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

import torch
from torch import nn

from robot_rl.algos.configs import SACConfig, SafetyConfig
from robot_rl.algos.distributional import categorical_loss, categorical_target
from robot_rl.algos.gate import ActionGate
from robot_rl.algos.safety_critic import CostCritic, Lagrange, cost_td_target
from robot_rl.errors import ConfigError
from robot_rl.nets import EnsembleCritic, RunningNorm, TanhGaussianActor
from robot_rl.nstep import COST_DISCOUNT, DISCOUNT
from robot_rl.replay import Batch

if TYPE_CHECKING:
    from robot_rl.algos.compiled_update import CompiledUpdate

ACTIVATIONS: dict[str, type[nn.Module]] = {"relu": nn.ReLU, "tanh": nn.Tanh, "silu": nn.SiLU}

Metrics = dict[str, torch.Tensor]
"""An update's metrics: 0-dim tensors on the learner's device, under their TensorBoard
names."""

CriticRegularizer = Callable[["SAC", torch.Tensor, torch.Tensor, Batch, torch.Tensor],
                             tuple[torch.Tensor, Metrics]]
"""A term added to the critics' loss: (agent, obs, next_obs (normalized, (B, O)), batch,
q (N, B)) -> (scalar, metrics)."""


@dataclasses.dataclass
class ActStep:
    """An action decision for E envs."""

    action: torch.Tensor  # (E, A) in [-1, 1]
    hold: torch.Tensor  # (E,) bool: the gate asks these envs to hold still
    rejected: torch.Tensor  # (E,) bool: every candidate was above the cost threshold


def soft_td_target(reward: torch.Tensor, terminated: torch.Tensor, next_q: torch.Tensor,
                   next_logp: torch.Tensor, alpha: float | torch.Tensor,
                   gamma: float | torch.Tensor) -> torch.Tensor:
    """y = r + gamma (1 - terminated) (next_q - alpha log pi(a'|s')); all (B,) (``gamma``
    a number or (B,): n-step transitions carry their own)."""
    return reward + gamma * (1.0 - terminated) * (next_q - alpha * next_logp)


def _step(opt: torch.optim.Optimizer, loss: torch.Tensor) -> None:
    """One optimizer step on ``loss``'s gradient."""
    opt.zero_grad()
    loss.backward()
    opt.step()


def _is_zero(x: float | torch.Tensor) -> bool:
    """Whether ``x`` is the number 0 (a tensor never is: its value is not read)."""
    return not isinstance(x, torch.Tensor) and x == 0


def alpha_loss(log_alpha: torch.Tensor, logp: torch.Tensor,
               target_entropy: float) -> torch.Tensor:
    """Temperature loss -log(alpha) * (log pi + H_target): alpha grows when the policy's
    entropy (-log pi) falls below the target and shrinks when it is above."""
    return -(log_alpha * (logp.detach() + target_entropy)).mean()


class SAC(nn.Module):
    """The agent: actor, critic ensemble, temperature, normalizer, optional safety critic."""

    def __init__(self, obs_dim: int, act_dim: int, cfg: SACConfig, safety: SafetyConfig,
                 device: str | torch.device = "cpu", seed: int = 0,
                 actor: nn.Module | None = None):
        """``actor``: the policy network, by default a ``TanhGaussianActor`` on the
        normalized observation. Another actor (``robot_rl.vision.pixel_sac``'s, on camera
        images) needs a subclass that overrides ``act`` and ``actor_sample`` to give it its
        own inputs; ``obs_dim`` is then the critics' input."""
        super().__init__()
        cfg.validate()
        safety.validate()
        if cfg.gamma is None:
            raise ConfigError("SAC needs its discount: set SACConfig.gamma (or with_gamma from "
                              "the task's horizon)")
        self.gamma: float = cfg.gamma
        self.cfg, self.safety_cfg = cfg, safety
        self.obs_dim, self.act_dim = obs_dim, act_dim
        self.device = torch.device(device)
        self.target_entropy = (cfg.target_entropy_per_dim * act_dim
                               if cfg.target_entropy is None else cfg.target_entropy)
        self.normalizer = RunningNorm(obs_dim)
        self.normalizer_frozen = False
        self.actor = actor if actor is not None else \
            TanhGaussianActor(obs_dim, act_dim, cfg.actor_hidden, ACTIVATIONS[cfg.activation],
                              cfg.actor_layer_norm, cfg.actor_log_std_init)
        def critic() -> EnsembleCritic:
            return EnsembleCritic(cfg.num_critics, obs_dim, act_dim, cfg.critic_hidden,
                                  cfg.layer_norm, ACTIVATIONS[cfg.activation],
                                  cfg.critic_atoms, cfg.v_min, cfg.v_max)

        self.critic, self.critic_target = critic(), critic()
        self.critic_target.load_state_dict(self.critic.state_dict())
        self.critic_target.requires_grad_(False)
        self.log_alpha = nn.Parameter(torch.tensor(float(cfg.init_alpha)).log())
        self.cost_critic = CostCritic(obs_dim, act_dim, safety) if safety.mode != "off" else None
        self.lagrange = Lagrange(safety, self.device)
        self.gate = ActionGate(safety.threshold, safety.fallback)
        self.to(self.device)

        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=cfg.actor_lr, fused=True)
        self.critic_opt = torch.optim.Adam(self.critic.parameters(), lr=cfg.critic_lr, fused=True)
        self.alpha_opt = torch.optim.Adam([self.log_alpha], lr=cfg.alpha_lr, fused=True)
        self.cost_opt = (torch.optim.Adam(self.cost_critic.q.parameters(), lr=safety.lr, fused=True)
                         if self.cost_critic is not None else None)
        self.updates = 0
        self.mean_anchor = cfg.anchor
        """The weight of ``SACConfig.anchor`` now (a runner may fade it: the residual's)."""
        self.gen = torch.Generator(device=self.device)
        self.gen.manual_seed(seed)
        self.compiled: CompiledUpdate | None = None
        """The compiled gradient step (``SACConfig.compile``; ``compile_update``)."""

    def eager_only(self) -> str:
        """Why this agent's gradient step cannot be compiled ("" where it can): a subclass
        whose step reads a ``torch.Generator`` or replaces a part of it says which."""
        return ""

    def check_compilable(self) -> None:
        """ConfigError with ``eager_only``'s reason where the step cannot be compiled."""
        if why := self.eager_only():
            raise ConfigError(f"--sac.compile: {why}; leave it off for this learner")

    def compile_update(self) -> None:
        """Make ``update`` run as one compiled function from now on
        (``robot_rl.algos.compiled_update``); refused with the reason for an agent whose
        step has an eager-only part."""
        from robot_rl.algos.compiled_update import CompiledUpdate

        self.compiled = CompiledUpdate(self)

    @property
    def gaussian_actor(self) -> TanhGaussianActor:
        """The actor where it is the default one (a subclass with another overrides ``act``
        and ``actor_sample``)."""
        assert isinstance(self.actor, TanhGaussianActor), "this agent's actor is not SAC's own"
        return self.actor

    @property
    def alpha(self) -> torch.Tensor:
        return self.log_alpha.exp()

    def normalize(self, obs: torch.Tensor) -> torch.Tensor:
        return self.normalizer(obs) if self.cfg.normalize_obs else obs

    def observe(self, obs: torch.Tensor) -> None:
        """Fold collected observations (E, O) into the running normalizer (not once it is
        frozen)."""
        if self.cfg.normalize_obs and not self.normalizer_frozen:
            self.normalizer.update(obs.to(self.device))

    def freeze_normalizer(self) -> None:
        """Keep the normalizer's statistics as they are from now on."""
        self.normalizer_frozen = True

    # -- acting ------------------------------------------------------------------------------

    @torch.no_grad()
    def act(self, obs: torch.Tensor, deterministic: bool = False,
            gate: bool | None = None) -> ActStep:
        """Actions for raw observations (E, O); gated by the safety critic when enabled.

        Deterministic: the policy mean (evaluation, distillation); else a sample.
        """
        x = self.normalize(obs.to(self.device))
        return self.decide(self.gaussian_actor(x), x, deterministic, gate)

    @torch.no_grad()
    def decide(self, dist: tuple[torch.Tensor, torch.Tensor], x: torch.Tensor,
               deterministic: bool = False, gate: bool | None = None) -> ActStep:
        """The action decision from the actor's pre-tanh Gaussian ``dist`` (mean, log_std;
        (E, A) each) and the critics' normalized input ``x`` (E, O).

        The policy's action is the mean (deterministic) or a sample; with the gate it is
        screened by the safety critic (``gate_decision``): kept while its estimated cost is
        under the threshold, as the exported artifact keeps it.
        """
        mean, log_std = dist
        u = mean if deterministic else mean + log_std.exp() * torch.randn_like(mean)
        first = torch.tanh(u)
        use_gate = self.safety_cfg.gate if gate is None else gate
        if not use_gate or self.cost_critic is None:
            no = torch.zeros(x.shape[0], dtype=torch.bool, device=self.device)
            return ActStep(first, no, no)
        return self.gate_decision(first, dist, x, deterministic=deterministic)

    @torch.no_grad()
    def gate_decision(self, first: torch.Tensor, dist: tuple[torch.Tensor, torch.Tensor],
                      x: torch.Tensor, deterministic: bool = True,
                      by_value: bool | None = None) -> ActStep:
        """The safety gate's decision for the policy's action ``first`` (E, A) at the
        normalized ``x`` (E, O).

        Candidates: ``first``, then ``candidates - 1`` others: for a deterministic decision
        ``clip(first + candidate_noise * N(0, I))``, exactly as the exported artifact draws
        them (evaluation decides as the artifact will); for a sampled one, more samples of
        the actor's Gaussian ``dist``. The gate keeps the first candidate under the cost
        threshold (the policy's own action whenever it is safe), or with ``by_value`` the best
        of them by the critics' mean value (default: ``SafetyConfig.by_value`` for sampled
        decisions, an exploration choice; never for deterministic ones, which are the
        artifact's decision and it has no value critic).
        """
        assert self.cost_critic is not None, "the gate needs the safety critic"
        cfg = self.safety_cfg
        mean, log_std = dist
        E, K, A = x.shape[0], cfg.candidates, self.act_dim
        noise = torch.randn(E, K - 1, A, device=self.device, dtype=mean.dtype)
        if deterministic:
            rest = (first[:, None] + cfg.candidate_noise * noise).clamp(-1.0, 1.0)
        else:
            rest = torch.tanh(mean[:, None] + log_std.exp()[:, None] * noise)
        cands = torch.cat([first[:, None], rest], dim=1)  # (E, K, A), the policy's own first
        flat_x = x.repeat_interleave(K, dim=0)
        flat_a = self.critic_action(flat_x, cands.reshape(E * K, A))
        cost = self.cost_critic.estimate(flat_x, flat_a).view(E, K)
        if by_value is None:
            by_value = cfg.by_value and not deterministic
        value = self.critic(flat_x, flat_a).mean(0).view(E, K) if by_value else None
        res = self.gate(cands, cost, value)
        return ActStep(res.action, res.hold, res.rejected)

    def actor_sample(self, batch: Batch, x: torch.Tensor, next_obs: bool
                     ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """(action (B, A), log pi (B,), auxiliary actor loss or None) sampled by the actor
        at the batch's observations (``next_obs``: at its next observations); ``x`` is the
        critics' normalized input there, which this actor also reads."""
        a, logp = self.gaussian_actor.sample(x)
        return a, logp, None

    def critic_action(self, x: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
        """The action (B, A) the critics and the cost critic score when the actor acts ``a``
        (B, A) at the normalized observations ``x`` (B, O): ``a`` itself here. A residual
        agent's critics score the action executed instead
        (``robot_rl.finetune.residual_base``); the replay then holds executed actions."""
        return a

    # -- learning ----------------------------------------------------------------------------

    def update(self, batch: Batch, actor: bool = True,
               critic_regularizer: CriticRegularizer | None = None,
               actor_every: int | None = None) -> Metrics:
        """One gradient step of the critics, the cost critic, and (every ``actor_every``,
        default ``actor_update_every``; never with ``actor=False``) the actor and
        temperature.
        ``critic_regularizer(agent, obs, next_obs, batch, q)`` adds a term to the critics'
        loss (CQL / Cal-QL's; ``obs`` normalized, ``q`` (N, B) at the batch's actions) and
        returns it with its metrics.

        With ``SACConfig.compile`` the step is one compiled function
        (``robot_rl.algos.compiled_update``; a step with a regularizer runs eagerly).
        Returns the metrics as 0-dim tensors on the device: reading one is a device
        synchronisation, so a loop reads them when it logs, not per update."""
        with_actor = actor and (self.updates + 1) % (actor_every or
                                                     self.cfg.actor_update_every) == 0
        subset = torch.randperm(self.cfg.num_critics, generator=self.gen,
                                device=self.device)[:self.cfg.critic_subset]
        if self.cfg.compile and self.compiled is None:
            self.compile_update()
        if self.compiled is not None and critic_regularizer is None:
            metrics = self.compiled.step(batch, subset, with_actor)
        else:
            metrics = self._eager_update(batch, subset, with_actor, critic_regularizer)
        self.updates += 1
        return metrics

    def _eager_update(self, batch: Batch, subset: torch.Tensor, with_actor: bool,
                      critic_regularizer: CriticRegularizer | None) -> Metrics:
        """``update`` op by op: each loss's backward and its optimizer's step in turn."""
        obs, next_obs = self.normalize(batch.obs), self.normalize(batch.next_obs)
        y, yc = self.td_targets(batch, next_obs, subset)
        critic_loss, q, metrics = self.critic_loss(obs, batch.action, y)
        if critic_regularizer is not None:
            if self.critic.atoms:
                raise ConfigError("a critic regularizer (Cal-QL, CQL) acts on scalar "
                                  "critics; leave --sac.critic-atoms at 0")
            reg, reg_metrics = critic_regularizer(self, obs, next_obs, batch, q)
            critic_loss = critic_loss + reg
            metrics.update(reg_metrics)
        _step(self.critic_opt, critic_loss)
        if yc is not None and self.cost_opt is not None:
            cost_loss, cost_metrics = self.cost_loss(obs, batch.action, yc)
            _step(self.cost_opt, cost_loss)
            metrics.update(cost_metrics)
        if with_actor:
            metrics.update(self._update_actor(batch, obs))
        self._polyak()
        return metrics

    def td_targets(self, batch: Batch, next_obs: torch.Tensor, subset: torch.Tensor
                   ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The TD targets of the critics (B,) (the soft target's min over the ensemble
        members ``subset``; categorical critics: the distribution (B, K) of the member of
        ``subset`` with the lowest expectation, projected) and of the cost critic (B,)
        (None without one), at the normalized next observations ``next_obs`` (B, O) with a'
        drawn from the actor."""
        alpha = self.alpha.detach()
        with torch.no_grad():
            next_a, next_logp, _ = self.actor_sample(batch, next_obs, next_obs=True)
            next_a = self.critic_action(next_obs, next_a)
            gamma = batch.extra.get(DISCOUNT, self.gamma)
            entropy = alpha if self.cfg.backup_entropy else 0.0
            if self.critic.atoms:
                y = self._categorical_target(batch, next_obs, next_a, next_logp, subset,
                                             entropy, gamma)
            else:
                next_q = self.critic_target(next_obs, next_a)  # (N, B)
                y = soft_td_target(batch.reward, batch.terminated,
                                   next_q[subset].min(0).values, next_logp, entropy, gamma)
            if self.cost_critic is None:
                return y, None
            next_qc = self.cost_critic.target_value(next_obs, next_a)
            yc = cost_td_target(batch.cost, batch.terminated, next_qc,
                                batch.extra.get(COST_DISCOUNT, self.safety_cfg.gamma))
        return y, yc

    def _categorical_target(self, batch: Batch, next_obs: torch.Tensor,
                            next_a: torch.Tensor, next_logp: torch.Tensor,
                            subset: torch.Tensor, alpha: float | torch.Tensor,
                            gamma: float | torch.Tensor) -> torch.Tensor:
        """(B, K) the categorical critics' soft TD target (``robot_rl.algos.distributional``)."""
        support = self.critic_target.support
        probs = self.critic_target.logits(next_obs, next_a)[subset].softmax(-1)  # (M, B, K)
        lowest = (probs * support).sum(-1).argmin(0)  # (B,) FastTD3's clipped double Q
        probs = probs.gather(0, lowest[None, :, None].expand(1, -1, probs.shape[2]))[0]
        discount = gamma * (1.0 - batch.terminated)
        return categorical_target(probs, batch.reward - discount * alpha * next_logp,
                                  discount, support)

    def critic_loss(self, obs: torch.Tensor, action: torch.Tensor, y: torch.Tensor
                    ) -> tuple[torch.Tensor, torch.Tensor, Metrics]:
        """The critics' loss (the sum over members of the mean squared TD error; of the
        cross-entropy to the target distribution for categorical critics), their values
        ``q`` (N, B) at the batch's actions, and the metrics."""
        if self.critic.atoms:
            logits = self.critic.logits(obs, action)  # (N, B, K)
            loss = categorical_loss(logits, y)
            q = (logits.softmax(-1) * self.critic.support).sum(-1)
        else:
            q = self.critic(obs, action)  # (N, B)
            loss = ((q - y) ** 2).mean(1).sum()
        return loss, q, {"losses/critic": loss.detach(), "losses/q_mean": q.detach().mean()}

    def cost_loss(self, obs: torch.Tensor, action: torch.Tensor, yc: torch.Tensor
                  ) -> tuple[torch.Tensor, Metrics]:
        """The cost critic's loss to its targets ``yc`` (B,) and its metrics."""
        assert self.cost_critic is not None
        loss = self.cost_critic.loss(obs, action, yc)
        return loss, {"losses/cost_critic": loss.detach(), "safety/qc_mean": yc.mean()}

    def actor_loss(self, batch: Batch, obs: torch.Tensor, lam: float | torch.Tensor,
                   anchor: float | torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, Metrics]:
        """The actor's loss (its auxiliary loss included), log pi (B,) of its sampled
        actions and its metrics, at the normalized ``obs`` (B, O). ``lam``: the Lagrange
        multiplier, ``anchor``: the weight of ``SACConfig.anchor``'s pull; each term enters
        unless its weight is the number 0 (a tensor weight always enters: the compiled
        step reads no value)."""
        a, logp, aux = self.actor_sample(batch, obs, next_obs=False)
        a = self.critic_action(obs, a)
        alpha = self.alpha.detach()
        q = self.critic(obs, a).mean(0)  # (B,)
        loss = alpha * logp - q
        if not _is_zero(anchor):
            mean = self.gaussian_actor.mean_action(obs)
            loss = loss + anchor * q.detach().abs().mean() * mean.pow(2).sum(1)
        if self.safety_cfg.lagrangian and self.cost_critic is not None and not _is_zero(lam):
            loss = (loss + lam * self.cost_critic.q(obs, a).mean(0)) / (1.0 + lam)
        actor_loss = loss.mean()
        metrics = {"losses/actor": actor_loss.detach(),
                   "charts/entropy": -logp.detach().mean()}
        if aux is None:
            return actor_loss, logp, metrics
        return actor_loss + aux, logp, metrics | {"losses/actor_aux": aux.detach()}

    def temperature_loss(self, logp: torch.Tensor) -> tuple[torch.Tensor, Metrics]:
        """The temperature's loss for the actor's log pi (B,) and its metric."""
        loss = alpha_loss(self.log_alpha, logp, self.target_entropy)
        return loss, {"losses/alpha": loss.detach()}

    def _update_actor(self, batch: Batch, obs: torch.Tensor) -> Metrics:
        """One step of the actor, then of the temperature (eager)."""
        self.critic.requires_grad_(False)
        if self.cost_critic is not None:
            self.cost_critic.q.requires_grad_(False)
        loss, logp, metrics = self.actor_loss(batch, obs, self.lagrange.weight,
                                              self.mean_anchor)
        _step(self.actor_opt, loss)
        self.critic.requires_grad_(True)
        if self.cost_critic is not None:
            self.cost_critic.q.requires_grad_(True)
        a_loss, a_metrics = self.temperature_loss(logp)
        _step(self.alpha_opt, a_loss)
        return metrics | a_metrics | {"charts/alpha": self.alpha.detach()}

    def polyak_pairs(self) -> list[tuple[nn.Module, nn.Module]]:
        """(target, source) networks that Polyak averaging pulls together."""
        pairs: list[tuple[nn.Module, nn.Module]] = [(self.critic_target, self.critic)]
        if self.cost_critic is not None:
            pairs.append((self.cost_critic.q_target, self.cost_critic.q))
        return pairs

    @torch.no_grad()
    def _polyak(self) -> None:
        for target, source in self.polyak_pairs():
            torch._foreach_lerp_(list(target.parameters()), list(source.parameters()),
                                 self.cfg.tau)

    # -- checkpoints -------------------------------------------------------------------------

    def full_state(self) -> dict:
        """Everything needed to resume: networks, optimizers, temperature, multiplier."""
        state = {"modules": self.state_dict(), "actor_opt": self.actor_opt.state_dict(),
                 "critic_opt": self.critic_opt.state_dict(),
                 "alpha_opt": self.alpha_opt.state_dict(),
                 "lagrange": self.lagrange.state_dict(), "updates": self.updates,
                 "gen": self.gen.get_state(), "normalizer_frozen": self.normalizer_frozen}
        if self.cost_opt is not None:
            state["cost_opt"] = self.cost_opt.state_dict()
        return state

    def load_full_state(self, state: dict) -> None:
        """Networks, optimizer moments, temperature and multiplier from ``state``; the
        learning rates stay this agent's own (its config's: a run that starts from another
        run's checkpoint with ``--sac.alpha-lr 0`` keeps the temperature fixed)."""
        self.load_state_dict(state["modules"])
        opts = {"actor_opt": self.actor_opt, "critic_opt": self.critic_opt,
                "alpha_opt": self.alpha_opt}
        if self.cost_opt is not None and "cost_opt" in state:
            opts["cost_opt"] = self.cost_opt
        for key, opt in opts.items():
            lrs = [g["lr"] for g in opt.param_groups]
            opt.load_state_dict(state[key])
            for g, lr in zip(opt.param_groups, lrs, strict=True):
                g["lr"] = lr
        self.lagrange.load_state_dict(state["lagrange"])
        self.updates = int(state["updates"])
        self.gen.set_state(state["gen"])
        self.normalizer_frozen = bool(state.get("normalizer_frozen", False))
