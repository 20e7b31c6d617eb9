"""The configs of SAC and its safety critic: plain dataclasses, importable without torch
(``robot-rl train --help`` reads them); ``algos.sac`` and ``algos.safety_critic`` act on
them."""

from __future__ import annotations

import dataclasses
from typing import Literal

from robot_rl.errors import ConfigError
from robot_rl.sim.tasks.config import discount_for


@dataclasses.dataclass(kw_only=True)
class SACConfig:
    """Soft actor-critic hyper-parameters."""

    gamma: float | None = None
    """Reward discount per env step; None: from the task's horizon in seconds and its
    control rate (``TaskConfig.discount_horizon``: reach 0.97, push and lift 0.994 at
    50 Hz)."""
    tau: float = 0.01
    """Polyak step of the target critics (RLPD and OmniSafe: 0.005; 0.01 is this runner's
    measured reach recipe)."""
    actor_lr: float = 3e-4
    """Adam learning rate of the actor."""
    critic_lr: float = 3e-4
    """Adam learning rate of the critics."""
    alpha_lr: float = 3e-4
    """Adam learning rate of the log temperature."""
    init_alpha: float = 0.05
    """Initial entropy temperature."""
    target_entropy: float | None = None
    """Entropy the temperature is tuned to; None: ``target_entropy_per_dim`` x act_dim."""
    target_entropy_per_dim: float = -0.5
    """The target entropy per action dimension where ``target_entropy`` is None (RLPD and
    SERL: -1/2; WSRL and Cal-QL: -1)."""
    num_critics: int = 2
    """Critic ensemble size N (RLPD uses 10)."""
    critic_subset: int = 2
    """Members whose minimum forms the TD target (REDQ's M)."""
    layer_norm: bool = True
    """LayerNorm after every hidden critic layer (RLPD)."""
    actor_hidden: tuple[int, ...] = (256, 256)
    """Hidden layer sizes of the actor."""
    critic_hidden: tuple[int, ...] = (256, 256)
    """Hidden layer sizes of each critic."""
    activation: Literal["relu", "tanh", "silu"] = "relu"
    """Hidden activation of actor and critics (DSRL: tanh; FastSAC: silu)."""
    actor_layer_norm: bool = False
    """LayerNorm after every hidden actor layer (DSRL)."""
    actor_log_std_init: float | None = None
    """The actor's initial log std (pre-tanh); None: the network's own, about -1.5 (DSRL's
    SB3 actor starts at about 0: sigma 1)."""
    batch_size: int = 256
    """Transitions per gradient step."""
    updates_per_step: int = 1
    """Gradient steps per vector-env step; the update-to-data ratio is this / num_envs."""
    actor_update_every: int = 1
    """Update actor and temperature every this many critic steps (delays them at high UTD)."""
    buffer_size: int = 500_000
    """Replay capacity in transitions."""
    learning_starts: int = 5_000
    """Transitions collected with uniform random actions before learning starts."""
    normalize_obs: bool = True
    """Normalize observations with running statistics (exported with the policy)."""
    freeze_normalizer: bool = False
    """Fix the normalizer's statistics once learning starts: the demonstrations' for
    fine-tuning, the warm-up transitions' otherwise. Running statistics move under a
    warm-started network (push: the BC policy's return fell 45.1 -> 36.0 after 4,000 steps
    with no gradient step); RLPD, SERL and WSRL normalize nothing, DSRL fixes dataset
    statistics."""
    backup_entropy: bool = True
    """Subtract alpha log pi(a'|s') in the TD target (soft Q-learning; RLPD's default, off in
    its sparse-reward commands)."""
    n_step: int = 1
    """Rewards summed per TD target (``robot_rl.nstep``; ResFiT: 3, RLPD and SERL: 1)."""
    anchor: float = 0.0
    """Weight w of a pull of the actor's mean action toward zero: the actor's loss adds
    w * mean|Q| * |tanh(mu(s))|^2 (TD3+BC's normalization by the critics' scale; its
    alpha 2.5 is w = 0.4 on the squared error averaged over the action's dimensions, where
    this sums them). For a residual, zero is the base
    policy's own action, and the pull fades with its exploration ramp
    (``ResidualConfig.anchor_steps``); 0: plain SAC (every reference)."""

    critic_atoms: int = 0
    """K > 0: categorical critics over K values on [v_min, v_max] (C51; FastTD3 and
    FastSAC: 101), trained by cross-entropy to the projected soft TD target (the member
    of the target's subset with the lowest expectation, as FastTD3's clipped double Q);
    0: scalar critics (RLPD, SERL and this runner's recipes)."""
    v_min: float = -20.0
    """With critic_atoms: the lowest value of the support (FastSAC: -20)."""
    v_max: float = 20.0
    """With critic_atoms: the highest value (FastSAC: 20); discounted returns beyond the
    support are clipped to it, so it must cover the task's."""
    compile: bool = False
    """Run each gradient step as one compiled function (``torch.compile``: inductor's
    kernels on a CPU, a CUDA graph on a GPU; ``robot_rl/algos/compiled_update.py``). The
    first step compiles it (about half a minute on a 2-core CPU; torch caches the result
    for later runs). Off by default on the CPU, where every recorded learning figure was
    measured eagerly; ``--preset gpu`` turns it on."""
    cuda_graphs: bool = True
    """With ``compile`` on a GPU: replay the compiled step as a CUDA graph (torch.compile's
    ``reduce-overhead``); off: its kernels are launched one by one."""
    bf16: bool = False
    """With ``compile`` on a GPU: the networks' forward passes in bfloat16 autocast
    (FastTD3 and FastSAC: on); the parameters, optimizer and targets stay float32."""

    def validate(self) -> None:
        if not 1 <= self.critic_subset <= self.num_critics:
            raise ConfigError(f"critic_subset must be in [1, num_critics={self.num_critics}], "
                              f"got {self.critic_subset}")
        if self.batch_size < 1 or self.updates_per_step < 0 or self.actor_update_every < 1 \
                or self.n_step < 1:
            raise ConfigError("batch_size, actor_update_every and n_step must be >= 1, "
                              "updates_per_step >= 0")
        if (self.gamma is not None and not 0.0 <= self.gamma < 1.0) or \
                not 0.0 < self.tau <= 1.0:
            raise ConfigError("gamma must be in [0, 1) and tau in (0, 1]")
        if self.anchor < 0:
            raise ConfigError(f"anchor must be >= 0, got {self.anchor}")
        if self.critic_atoms == 1 or self.critic_atoms < 0 or self.v_min >= self.v_max:
            raise ConfigError(f"critic_atoms must be 0 (scalar critics) or >= 2 and v_min < "
                              f"v_max, got {self.critic_atoms} on [{self.v_min}, "
                              f"{self.v_max}]")

    def with_gamma(self, control_dt: float, horizon: float) -> SACConfig:
        """This config with its discount set: as given, or from ``horizon`` seconds at
        ``control_dt`` seconds per step when None."""
        if self.gamma is not None:
            return self
        return dataclasses.replace(self, gamma=discount_for(horizon, control_dt))


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
    """Gate: candidate actions per decision (K): the policy's own action first, then K - 1
    others (samples of the actor while training; perturbations of the mean, as the exported
    artifact draws them, when deterministic)."""
    candidate_noise: float = 0.3
    """Gate: std of the perturbations of a deterministic action that form its other
    candidates (the exported artifact's default too)."""
    by_value: bool = False
    """Gate, while exploring: among the safe candidates take the best by the critics' mean
    value (Recovery RL / SQRL's choice) instead of the sampled action whenever it is safe.
    Deterministic decisions (evaluation, the exported artifact) always keep the policy's own
    action while it is safe: critics trained on demonstrations extrapolate, and their argmax
    picked out-of-distribution actions (push, 96 episodes, same weights: 0% success by
    value against 10.4% keeping the policy's action; docs/learners.md)."""
    fallback: Literal["least_cost", "hold"] = "least_cost"
    """Gate: what to do when every candidate is rejected."""
    cost_limit: float = 1.0
    """Lagrangian: the mean episode cost the policy may spend (cost steps per episode)."""
    lambda_lr: float = 1e-3
    """Lagrangian: Adam learning rate of the multiplier, one step per round of collection
    and learning (the runner's: a vector step of every env). Adam's step is about this size
    whatever the cost excess, so the multiplier's growth is bounded by it (OmniSafe's
    SAC-Lag: Adam, 1e-5 per env step)."""
    lambda_init: float = 0.0
    """Lagrangian: initial multiplier."""
    lambda_max: float = 100.0
    """Lagrangian: upper bound of the multiplier."""
    cost_window: int = 10
    """Lagrangian: the episode cost the multiplier compares with ``cost_limit`` is the mean
    of the last this many training episodes (OmniSafe's window)."""

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
        if self.lambda_lr < 0 or self.lambda_max < 0 or self.cost_window < 1:
            raise ConfigError("safety lambda_lr and lambda_max must be >= 0, cost_window >= 1")
        if self.candidates < 1 or self.num_critics < 1:
            raise ConfigError("safety candidates and num_critics must be >= 1")
        if self.candidate_noise < 0:
            raise ConfigError(f"safety candidate_noise must be >= 0, got {self.candidate_noise}")
