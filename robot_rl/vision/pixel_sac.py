"""Asymmetric SAC from pixels: the actor sees what a robot has, the critics see the state.

    actor = PixelActor(policy)          # policy: a PixelPolicy, new or a DAgger student
    agent = PixelSAC(actor, critic_dim, act_dim, SACConfig(gamma=0.99), SafetyConfig(mode="gate"),
                     state_cols=cols)   # the critic-group columns the state head estimates
    step = agent.act_pixels(proprio, images, critic)   # ActStep; critic (E, C) for the gate
    metrics = agent.update(batch)       # a Batch of a replay buffer with ``replay_extra``

The actor is a ``PixelPolicy`` (camera encoders, optional state head, action MLP) whose
action MLP's output is the mean of SAC's pre-tanh Gaussian, with a log-std head on the
MLP's last hidden layer: its deterministic action is the PixelPolicy's own, so the trained
actor exports and deploys as a pixel student does. The reward critics and the safety
critic read the ``critic`` observation group (every observation term without noise and
the task's privileged terms), as in Pinto et al. 2017's asymmetric actor-critic: value
learning is as easy as from state, and only the policy has to see through the cameras.

Since the critics read no images, nothing is encoded for them, and DrQ's rule for a critic
that reads pixels (the encoder trained by the critic's loss only, the actor reading detached
features) has no object here. Where the actor has a state head and its action MLP reads the
estimate (a DAgger student's layout), the encoders and the head learn the estimate from an
auxiliary regression on the critic group's values of the terms the cameras stand in for
(push's puck; ``state_weight``) and SAC trains the action MLP on the detached estimate:
perception stays supervised, which simulation can afford, and RL shapes only what the
policy does with it (``rl_trains_perception=True`` lets SAC's gradient through). An actor
acting on the features learns them from SAC's loss (plus the auxiliary regression where it
has a state head). DrQ's random shift augments the actor's images in every update.

Fine-tuning a student, ``anchor_weight`` keeps its action MLP near the student's own
(TD3+BC's regularizer, scaled the same way) while the critics learn about actions the
student never took.

Replay rows (``replay_extra``) hold, next to the critic observations of ``Batch.obs`` and
``Batch.next_obs``: ``proprio`` / ``next_proprio`` (the student's proprioception columns)
and ``img/{key}`` / ``next_img/{key}`` for each image key (uint8 RGB, float16 depth [m]).
"""

from __future__ import annotations

import copy
import math

import torch
from torch import nn

from robot_rl.algos import SAC
from robot_rl.algos.configs import SACConfig, SafetyConfig
from robot_rl.algos.sac import ActStep, CriticRegularizer, Metrics
from robot_rl.nets import LOG_STD_MAX, LOG_STD_MIN, tanh_gaussian_log_prob
from robot_rl.replay import Batch, ExtraSpec
from robot_rl.vision.student import PixelPolicy

PROPRIO = "proprio"


def image_key(key: str, next_obs: bool = False) -> str:
    """The replay's name of image ``key`` (``front.rgb``) at the observation or the next."""
    return f"{'next_' if next_obs else ''}img/{key}"


def replay_extra(proprio_dim: int, image_shapes: dict[str, tuple[int, int, int]]
                 ) -> ExtraSpec:
    """What a PixelSAC's replay buffer stores next to the critic observations (see module
    docstring): RGB as uint8, depth as float16 (1 mm steps at 2 m), half of float32."""
    spec: ExtraSpec = {PROPRIO: ((proprio_dim,), torch.float32),
                       f"next_{PROPRIO}": ((proprio_dim,), torch.float32)}
    for key, shape in image_shapes.items():
        dtype = torch.uint8 if key.endswith(".rgb") else torch.float16
        for nxt in (False, True):
            spec[image_key(key, nxt)] = (tuple(shape), dtype)
    return spec


class PixelActor(nn.Module):
    """A PixelPolicy as SAC's actor: its action MLP gives the mean of the pre-tanh Gaussian,
    a linear head on the MLP's last hidden layer its log std (see module docstring)."""

    def __init__(self, policy: PixelPolicy, init_log_std: float = -1.5):
        super().__init__()
        self.policy = policy
        last = policy.mlp[-1]
        if not isinstance(last, nn.Linear) or len(policy.mlp) < 2:
            raise ValueError("the pixel policy's action MLP must end in a linear layer after "
                             "a hidden layer")
        self.log_std = nn.Linear(last.in_features, last.out_features)
        # starts state-independent at init_log_std: a student keeps its actions' spread small
        nn.init.zeros_(self.log_std.weight)
        unit = 2.0 * (init_log_std - LOG_STD_MIN) / (LOG_STD_MAX - LOG_STD_MIN) - 1.0
        nn.init.constant_(self.log_std.bias, math.atanh(max(-0.999, min(0.999, unit))))

    def dist(self, proprio: torch.Tensor, images: dict[str, torch.Tensor],
             gen: torch.Generator | None = None, detach_estimate: bool = False
             ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None, torch.Tensor]:
        """(mean (B, A), log_std (B, A), state estimate (B, S) or None, what the action MLP
        read (B, width)); ``gen``: randomly shift the images (training);
        ``detach_estimate``: as ``PixelPolicy.mlp_input``'s."""
        x, est = self.policy.mlp_input(proprio, images, gen, with_estimate=True,
                                       detach_estimate=detach_estimate)
        h = self.policy.mlp[:-1](x)
        log_std = torch.tanh(self.log_std(h))
        log_std = LOG_STD_MIN + 0.5 * (LOG_STD_MAX - LOG_STD_MIN) * (log_std + 1.0)
        return self.policy.mlp[-1](h), log_std, est, x

    def forward(self, proprio: torch.Tensor, images: dict[str, torch.Tensor]
                ) -> torch.Tensor:
        """(B, A) the deterministic action: the PixelPolicy's."""
        return self.policy(proprio, images)


class PixelSAC(SAC):
    """SAC whose actor reads camera images and proprioception and whose critics read the
    privileged state (see module docstring)."""

    def __init__(self, actor: PixelActor, critic_dim: int, act_dim: int, cfg: SACConfig,
                 safety: SafetyConfig, state_cols: torch.Tensor | None = None,
                 state_weight: float = 1.0, rl_trains_perception: bool = False,
                 anchor_weight: float = 0.0, device: str | torch.device = "cpu",
                 seed: int = 0):
        """``state_cols``: the critic-group columns the actor's state head estimates (its
        auxiliary loss's targets; needed where the policy has a state head).

        ``rl_trains_perception``: where the action MLP reads the state estimate, the actor's
        SAC loss also trains the encoders and the state head through it; by default they
        learn the estimate from the state loss alone and SAC trains the action MLP.

        ``anchor_weight`` (beta): the actor's loss gains beta |Q| ||pi(x) - pi_0(x)||^2, the
        squared distance of its deterministic action from the initial action MLP's on the
        same input, scaled by the critics' running mean |Q| (TD3+BC's normalization, whose
        2.5 is beta = 0.4). It keeps a fine-tuned student near what it was while the
        critics are still wrong about actions it never took."""
        policy = actor.policy
        if policy.state_dim and (state_cols is None or len(state_cols) != policy.state_dim):
            raise ValueError(f"the pixel policy estimates {policy.state_dim} state columns; "
                             f"state_cols names {0 if state_cols is None else len(state_cols)}")
        if policy.act_dim != act_dim:
            raise ValueError(f"the pixel policy has {policy.act_dim} actions, the env {act_dim}")
        if cfg.anchor:
            raise ValueError("a pixel actor's pull is anchor_weight (toward the initial "
                             "student), not SACConfig.anchor (toward zero, on the state)")
        super().__init__(critic_dim, act_dim, cfg, safety, device, seed, actor=actor)
        self.actor: PixelActor
        self.state_cols = None if state_cols is None else state_cols.to(self.device)
        self.state_weight = state_weight
        self.detach_estimate = policy.acts_on_state and not rl_trains_perception
        self.anchor_weight = anchor_weight
        self.anchor = copy.deepcopy(policy.mlp).requires_grad_(False) if anchor_weight > 0 \
            else None
        """The initial action MLP (with ``anchor_weight``)."""
        self.q_scale = 1.0
        """Running mean of |Q| over the critics' batches (scales the anchor)."""
        self.image_keys = list(policy.image_shapes)

    @property
    def policy(self) -> PixelPolicy:
        """The deterministic policy (what is saved as a pixel student and exported)."""
        return self.actor.policy

    def act(self, obs: torch.Tensor, deterministic: bool = False,
            gate: bool | None = None) -> ActStep:
        raise TypeError("a PixelSAC acts on images: call act_pixels(proprio, images, critic)")

    @torch.no_grad()
    def act_pixels(self, proprio: torch.Tensor, images: dict[str, torch.Tensor],
                   critic: torch.Tensor, deterministic: bool = False,
                   gate: bool | None = None) -> ActStep:
        """Actions for E envs from proprioception (E, P) and images {key: (E, C, H, W)};
        ``critic`` (E, critic_dim) raw critic observations, read by the gate."""
        dev = self.device
        mean, log_std, *_ = self.actor.dist(proprio.to(dev),
                                            {k: images[k].to(dev) for k in self.image_keys})
        return self.decide((mean, log_std), self.normalize(critic.to(dev)), deterministic,
                           gate)

    def eager_only(self) -> str:
        return "pixel SAC's actor draws its image shifts and samples from a torch.Generator"

    def actor_sample(self, batch: Batch, x: torch.Tensor, next_obs: bool
                     ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        pre = "next_" if next_obs else ""
        images = {k: batch.extra[image_key(k, next_obs)] for k in self.image_keys}
        shift = self.gen if self.policy.cfg.shift > 0 else None
        mean, log_std, est, read = self.actor.dist(batch.extra[pre + PROPRIO], images, shift,
                                                   self.detach_estimate)
        u = mean + log_std.exp() * torch.randn(mean.shape, generator=self.gen,
                                               device=self.device)
        aux = None
        if not next_obs:
            losses = []
            if est is not None and self.state_weight > 0:
                assert self.state_cols is not None
                target = self.policy.normalize_state(batch.obs[:, self.state_cols])
                losses.append(self.state_weight * ((est - target) ** 2).mean())
            if self.anchor is not None:
                with torch.no_grad():
                    anchor = torch.tanh(self.anchor(read.detach()))
                gap = ((torch.tanh(mean) - anchor) ** 2).sum(1).mean()
                losses.append(self.anchor_weight * self.q_scale * gap)
            aux = torch.stack(losses).sum() if losses else None
        return torch.tanh(u), tanh_gaussian_log_prob(u, mean, log_std), aux

    def update(self, batch: Batch, actor: bool = True,
               critic_regularizer: CriticRegularizer | None = None,
               actor_every: int | None = None) -> Metrics:
        metrics = super().update(batch, actor, critic_regularizer, actor_every)
        q_mean = abs(float(metrics["losses/q_mean"]))  # the anchor's scale, a number
        self.q_scale = 0.99 * self.q_scale + 0.01 * q_mean if self.updates > 1 else q_mean
        return metrics

    def full_state(self) -> dict:
        return super().full_state() | {"q_scale": self.q_scale}

    def load_full_state(self, state: dict) -> None:
        super().load_full_state(state)
        self.q_scale = float(state.get("q_scale", 1.0))

    @torch.no_grad()
    def fit_normalization(self, proprio: torch.Tensor, critic: torch.Tensor) -> None:
        """Set the policy's proprioception and state normalization (frozen buffers, exported
        with it) from collected data: (N, P) and raw critic observations (N, C)."""
        p = self.policy
        p.proprio_norm.mean.copy_(proprio.mean(0))
        p.proprio_norm.std.copy_(proprio.std(0).clamp(min=1e-2))
        if p.state_dim and self.state_cols is not None:
            s = critic[:, self.state_cols.to(critic.device)]
            p.state_norm.mean.copy_(s.mean(0))
            p.state_norm.std.copy_(s.std(0).clamp(min=1e-2))
