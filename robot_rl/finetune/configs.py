"""The configs of fine-tuning from demonstrations (``robot-rl finetune``: RLPD and WSRL with
Cal-QL) and of fine-tuning a flow policy (``robot-rl dsrl``, ``robot-rl residual``). Plain
dataclasses, importable without torch (``--help`` reads them)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Any, Literal

import tyro

from robot_rl.algos.configs import SACConfig
from robot_rl.errors import ConfigError
from robot_rl.sim.tasks import make_task_config
from robot_rl.sim.tasks.config import TaskConfig
from robot_rl.train_config import TrainConfig


def rlpd_sac() -> SACConfig:
    """RLPD's SAC (``ikostrikov/rlpd`` README commands, ``configs/rlpd_config.py``), for one
    env: UTD 20 with the actor once per env step."""
    return SACConfig(num_critics=10, critic_subset=2, layer_norm=True, tau=0.005,
                     init_alpha=1.0, updates_per_step=20, actor_update_every=20,
                     learning_starts=5_000, freeze_normalizer=True)


def wsrl_sac() -> SACConfig:
    """WSRL's online SAC (``zhouzypaul/wsrl``: ``wsrl_config.py``, ``sac_config.py``,
    ``launch_wsrl_finetune.sh``), for one env: UTD 4 with the actor once per env step."""
    return SACConfig(num_critics=10, critic_subset=2, layer_norm=True, tau=0.005,
                     actor_lr=1e-4, alpha_lr=1e-4, init_alpha=1.0, updates_per_step=4,
                     actor_update_every=4, backup_entropy=False, target_entropy_per_dim=-1.0,
                     freeze_normalizer=True)


METHOD_SAC = {"rlpd": rlpd_sac, "wsrl": wsrl_sac}
"""Each method's reference SAC settings (``--method`` picks them as the defaults of
``--sac.*``)."""


NoiseSteps = Literal["executed", "horizon"]
"""Which chunk steps' noise a DSRL action sets: the executed ones or the whole horizon."""


def dsrl_sac() -> SACConfig:
    """DSRL's SAC over the noise (``ajwagen/dsrl``, ``cfg/robomimic/dsrl_*.yaml``): 20
    gradient steps per vector step of 4 envs (5 per chunk), target entropy 0, initial
    temperature 1, tau 0.005, tanh networks with LayerNorm, 2 critics, the actor's noise
    starting at sigma 1, 1,500 chunks of the flow policy's own noise before learning. Its
    networks are 3 x 2048; here 3 x 256 (the CPU's fit: a 2,048-wide update costs about 60x
    more; ``--sac.actor-hidden 2048 2048 2048 --sac.critic-hidden 2048 2048 2048``)."""
    return SACConfig(updates_per_step=20, learning_starts=6_000, num_critics=2,
                     critic_subset=2, target_entropy=0.0, init_alpha=1.0, tau=0.005,
                     activation="tanh", layer_norm=True, actor_layer_norm=True,
                     actor_hidden=(256, 256, 256), critic_hidden=(256, 256, 256),
                     actor_log_std_init=0.0, freeze_normalizer=True)


DECISION_PERIOD = 0.1
"""Seconds per residual decision by default (``ResidualConfig.every``): 5 control steps at
50 Hz, 1 at 10 Hz."""


def residual_sac() -> SACConfig:
    """SAC for the residual: LayerNorm critics, 20 gradient steps per vector step of 16
    envs (16 decisions), 2,000 transitions of uniform residuals before learning (the actor's
    mean starts at zero correction: ``ResidualRunner.build_agent``)."""
    return SACConfig(updates_per_step=20, learning_starts=2_000, freeze_normalizer=True)


@dataclasses.dataclass(kw_only=True)
class CalQLConfig:
    """The conservative regularizer of WSRL's offline phase (its adroit defaults)."""

    alpha: float = 1.0
    """Weight of the regularizer (WSRL: 1 on adroit's few demonstrations, 5 on kitchen)."""
    actions: int = 10
    """Sampled actions of each kind (uniform, policy at s, policy at s') per state."""
    temperature: float = 1.0
    """Temperature of the logsumexp."""
    calibrated: bool = True
    """Bound the policy samples' values below by the Monte-Carlo return (Cal-QL); False:
    CQL."""

    def validate(self) -> None:
        if self.alpha < 0 or self.actions < 1 or self.temperature <= 0:
            raise ConfigError("Cal-QL needs alpha >= 0, actions >= 1 and temperature > 0")


@dataclasses.dataclass(kw_only=True)
class FinetuneConfig(TrainConfig):
    """Fine-tune from demonstrations with RLPD or WSRL (and the safety critic).

    Example: robot-rl finetune --demos data/push --task push --method rlpd
    """

    gym: tyro.conf.Suppress[str | None] = None
    """Not here: --gym trains robot-rl train runs."""

    demos: Path
    """Dataset of demonstrations (robot-rl record); it must match the task's actions."""
    task: str = "push"
    """Task name (the demonstrations' task)."""
    method: Literal["rlpd", "wsrl"] = "rlpd"
    """rlpd: demos in every batch; wsrl: Cal-QL pre-training, warm-up, then online only.
    Picks the defaults of --sac.*."""
    max_episodes: int | None = None
    """Use the dataset's first N episodes only (default: all)."""
    demo_ratio: float = 0.5
    """RLPD: share of each batch drawn from the demonstrations."""
    offline_steps: int = 20_000
    """WSRL: gradient steps on the demonstrations before any env step (its adroit runs)."""
    offline: Literal["calql", "cql", "sac"] = "calql"
    """WSRL's offline phase: Cal-QL (WSRL's), CQL, or plain SAC (no conservatism)."""
    calql: CalQLConfig = dataclasses.field(default_factory=CalQLConfig)
    """WSRL: the conservative regularizer of the offline phase."""
    warmup_steps: int = 5_000
    """WSRL: env steps collected by the pre-trained policy before online updates begin."""
    bc_steps: int = 0
    """Gradient steps of behaviour cloning of the actor's mean on the demos first (0: none)."""
    critic_warmup: int = 0
    """Gradient steps of the critics alone on the demos after --bc-steps (0: none)."""
    num_envs: int = 1
    """Parallel training envs (RLPD and WSRL step one; the UTD is updates_per_step / this)."""
    sac: SACConfig = dataclasses.field(default_factory=rlpd_sac)
    """SAC hyper-parameters (default: the method's reference recipe, ``METHOD_SAC``)."""

    @property
    def method_name(self) -> str:
        return self.method

    def __post_init__(self) -> None:
        super().__post_init__()
        # the method's recipe, where the sac config given is another method's untouched one
        for name, make in METHOD_SAC.items():
            if name != self.method and self.sac == make():
                self.sac = METHOD_SAC[self.method]()

    def validate(self) -> None:
        super().validate()
        if not 0.0 <= self.demo_ratio <= 1.0:
            raise ConfigError(f"--demo-ratio must be in [0, 1], got {self.demo_ratio}")
        if min(self.offline_steps, self.warmup_steps, self.bc_steps, self.critic_warmup) < 0:
            raise ConfigError("--offline-steps, --warmup-steps, --bc-steps and "
                              "--critic-warmup must be >= 0")
        self.calql.validate()


@dataclasses.dataclass(kw_only=True)
class DSRLConfig(TrainConfig):
    """Fine-tune a flow policy (robot-rl bc) with DSRL: SAC and the safety critic choose the
    policy's noise; its weights stay frozen.

    Example: robot-rl dsrl runs/push__bc-flow__0__20261123-101500 --time-budget 1800
    """

    gym: tyro.conf.Suppress[str | None] = None
    """Not here: --gym trains robot-rl train runs."""

    policy: Annotated[Path, tyro.conf.Positional]
    """The flow policy's run directory (robot-rl bc --algo bc-flow) or checkpoint."""
    # the task and its config come from the flow policy's run (its dataset's task)
    task: tyro.conf.Suppress[str] = "reach"
    env: tyro.conf.Suppress[TaskConfig] = dataclasses.field(
        default_factory=lambda: make_task_config("reach"))
    num_envs: int = 4
    """Parallel environments (few, with several updates per step, as in DSRL)."""
    noise_scale: float = 1.5
    """SAC's actions in [-1, 1] become noise of this magnitude (the flow's input; DSRL's
    action_magnitude on robomimic)."""
    noise: NoiseSteps = "executed"
    """Which of the chunk's noise SAC chooses: that of the executed steps (DSRL, whose
    diffusion horizon is the executed chunk; the rest of the chunk's noise is 0), or the
    whole horizon's."""
    step_gamma: float | None = None
    """Discount per control step (default: the task's horizon in seconds at its control
    rate; DSRL: 0.99 per chunk); each chunk of K steps is discounted by step_gamma^K (this
    sets --sac.gamma)."""
    sac: SACConfig = dataclasses.field(default_factory=dsrl_sac)
    """SAC hyper-parameters over the noise, DSRL's by default (its gamma is set from
    --step-gamma; learning_starts counts control steps, 6,000 = 1,500 chunks of the flow
    policy's own noise)."""

    @property
    def method_name(self) -> str:
        return "dsrl"

    def validate(self) -> None:
        super().validate()
        if self.noise_scale <= 0 or (self.step_gamma is not None and
                                     not 0.0 < self.step_gamma < 1.0):
            raise ConfigError("--noise-scale must be > 0 and --step-gamma in (0, 1)")
        if self.mirror:
            raise ConfigError("--mirror: DSRL's actions are the flow's noise, whose mirror "
                              "image is not known (mirror the flow's demonstrations instead: "
                              "robot-rl bc --mirror)")


@dataclasses.dataclass(kw_only=True)
class ResidualConfig(TrainConfig):
    """Fine-tune a flow policy (robot-rl bc) with a bounded residual learned by SAC and the
    safety critic; the flow's weights stay frozen.

    Example: robot-rl residual runs/push__bc-flow__0__20261123-101500 --time-budget 1800
    """

    gym: tyro.conf.Suppress[str | None] = None
    """Not here: --gym trains robot-rl train runs."""

    policy: Annotated[Path, tyro.conf.Positional]
    """The flow policy's run directory (robot-rl bc --algo bc-flow, bc-filtered) or
    checkpoint."""
    task: tyro.conf.Suppress[str] = "reach"
    env: tyro.conf.Suppress[TaskConfig] = dataclasses.field(
        default_factory=lambda: make_task_config("reach"))
    scale: float = 0.4
    """The residual's bound: the executed action is clip(base + scale * residual) with the
    residual in [-1, 1] (actions span [-1, 1]; Policy Decorator and ResFiT: 0.1-0.2)."""
    every: int | None = None
    """Control steps per residual decision: the correction chosen at one is held for this
    many steps on the flow's actions, env steps still counted at the control rate, the
    discount per decision from the task's horizon. Default: the control steps in 0.1 s
    (5 on a 50-Hz task, 1 at 10 Hz), or 1 with --demo-ratio (demonstrations are single
    control steps)."""
    sac: SACConfig = dataclasses.field(default_factory=residual_sac)
    """SAC hyper-parameters of the residual (its --sac.gamma is per decision: unset, the
    task's horizon gives 0.970 per decision of 5 control steps on push)."""
    explore_ramp: int = 100_000
    """Policy Decorator's progressive exploration (its --prog-explore): over the first this
    many env steps, each env's decision applies the residual the actor chose with
    probability env steps / explore_ramp, else no correction (stored as a zero residual),
    so the early replay is mostly the flow's own actions; evaluation always applies it. 0:
    always (Policy Decorator: 30k-300k decisions of 4 control steps by task on a diffusion
    base, up to 8M on a BeT one)."""
    anchor_steps: int | None = None
    """Env steps over which --sac.anchor (a pull of the actor's mean toward zero
    correction) fades linearly to nothing: the critics know little of residuals while the
    ramp applies few. None: --explore-ramp's; 0: it never fades."""
    critic_warmup: int = 0
    """Gradient steps of the critics alone before the actor and temperature move (ResFiT:
    10,000): the residual stays at zero correction until its critic has learned the base's
    values."""
    critic_action: Literal["residual", "executed"] = "residual"
    """What the critics score with the observation and the base action: the residual the
    actor chose, or the action executed, clip(base + scale * residual) (ResFiT, and Policy
    Decorator's --critic-input sum; the replay then holds executed actions, with --every
    K > 1 each decision's first, from which its held correction follows; demonstrations
    can join it: --demo-ratio)."""
    demo_ratio: float = 0.0
    """Fraction of every batch drawn from demonstrations (ResFiT: 0.5), their observations
    completed with the base's action along each recorded episode; needs --critic-action
    executed."""
    demos: Path | None = None
    """The demonstrations of --demo-ratio (default: the flow policy's own dataset)."""
    overtime: float = 0.0
    """Seconds a training episode that has not succeeded at its end runs on, ending at its
    first success (rounded to whole decisions; evaluation episodes never do): the
    residual meets more of the states its failures end in (a puck stopped short of its
    goal, the flow standing still). No reference does this: 0 (on push, 2 s ended level
    with it, docs/performance/history/learners-3.md)."""

    @property
    def method_name(self) -> str:
        return "residual"

    def validate(self) -> None:
        super().validate()
        if not 0.0 < self.scale <= 2.0:
            raise ConfigError(f"--scale must be in (0, 2], got {self.scale}")
        if self.explore_ramp < 0:
            raise ConfigError(f"--explore-ramp must be >= 0 env steps, got {self.explore_ramp}")
        if self.anchor_steps is not None and self.anchor_steps < 0:
            raise ConfigError(f"--anchor-steps must be >= 0 env steps, got {self.anchor_steps}")
        if self.overtime < 0:
            raise ConfigError(f"--overtime must be >= 0 seconds, got {self.overtime}")
        if self.critic_warmup < 0:
            raise ConfigError(f"--critic-warmup must be >= 0, got {self.critic_warmup}")
        if self.every is not None and self.every < 1:
            raise ConfigError(f"--every must be >= 1, got {self.every}")
        if self.every is not None and self.every > 1 and self.demo_ratio > 0:
            raise ConfigError("--demo-ratio takes demonstrations of single control steps; "
                              "leave --every at 1")
        if not 0.0 <= self.demo_ratio < 1.0:
            raise ConfigError(f"--demo-ratio must be in [0, 1), got {self.demo_ratio}")
        if self.demo_ratio > 0 and self.critic_action != "executed":
            raise ConfigError("--demo-ratio needs --critic-action executed: a demonstration's "
                              "action is an executed action, not a residual")
        if self.demo_ratio > 0 and self.sac.n_step > 1:
            raise ConfigError("--demo-ratio takes one-step transitions; leave --sac.n-step "
                              "at 1")

    @classmethod
    def from_saved(cls, data: dict[str, Any]) -> ResidualConfig:
        """As ``TrainConfig.from_saved``; a run saved before a field existed ran without
        it: no ramp (before 2026-11-28's ``explore_ramp``), a decision every control step
        (before ``every``), not today's defaults."""
        return super().from_saved({"explore_ramp": 0, "every": 1, **data})

    def anchor_fade(self) -> int:
        """Env steps over which --sac.anchor fades (0: it does not)."""
        return self.explore_ramp if self.anchor_steps is None else self.anchor_steps

    def overtime_steps(self, control_dt: float) -> int:
        """--overtime in control steps, whole decisions of ``decision_steps``."""
        every = self.decision_steps(control_dt)
        return every * round(self.overtime / (control_dt * every))

    def decision_steps(self, control_dt: float) -> int:
        """Control steps per decision: ``every``, or its default at this control step."""
        if self.every is not None:
            return self.every
        if self.demo_ratio > 0:
            return 1
        return max(1, round(DECISION_PERIOD / control_dt))
