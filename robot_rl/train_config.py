"""The config of ``robot-rl train`` (``TrainConfig``), which the other SAC runners
(fine-tuning, pixels) extend. Importable without torch or MuJoCo (``robot-rl train
--help`` reads it); ``robot_rl.runner`` runs it."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Literal, TypeVar

import tyro

from robot_rl.algos.configs import SACConfig, SafetyConfig, SafetyMode
from robot_rl.config_io import from_dict, to_dict
from robot_rl.errors import ConfigError
from robot_rl.ray_options import RayOptions
from robot_rl.run_config import RunConfig
from robot_rl.sim.configs import DRPreset, WarpOptions, dr_preset
from robot_rl.sim.tasks import make_task_config
from robot_rl.sim.tasks.config import TaskConfig

_C = TypeVar("_C", bound="TrainConfig")


def _default_env() -> TaskConfig:
    return make_task_config("reach")


Preset = Literal["cpu", "gpu"]
"""The recipe a run's defaults follow (``TrainConfig.preset``)."""


def fastsac_sac() -> SACConfig:
    """SAC at a GPU's scale, after FastSAC (``amazon-far/holosoma``: ``config_values/algo.py``'s
    ``fast_sac``, at its 4,096 envs): batches of 8,192, 8 critic updates per vector step and
    the actor at every 4th, tau 0.125, initial temperature 0.001 with target entropy 0,
    LayerNorm and SiLU in both networks (critics 768-384-192, actor 512-256-128), 1,024
    transitions of replay per env, learning from the 10th vector step, the step compiled
    into a CUDA graph with bf16 autocast. Kept from this runner where FastSAC differs
    (docs/learners.md): the TD target's minimum over the critic pair (FastSAC: each critic
    its own distributional target), Adam (FastSAC: AdamW, weight decay 0.001, betas 0.9,
    0.95), the log-std range [-5, 2] (FastSAC: [-5, 0]), the discount from the task's
    horizon (FastSAC: 0.97; reach's is 0.97), scalar critics (``--sac.critic-atoms 101``
    gives FastSAC's distributional ones)."""
    return SACConfig(batch_size=8192, updates_per_step=8, actor_update_every=4, tau=0.125,
                     init_alpha=0.001, target_entropy=0.0, layer_norm=True,
                     actor_layer_norm=True, activation="silu", actor_hidden=(512, 256, 128),
                     critic_hidden=(768, 384, 192), buffer_size=1024 * GPU_ENVS,
                     learning_starts=10 * GPU_ENVS, compile=True, bf16=True)


GPU_ENVS = 4096
"""Worlds of ``--preset gpu`` (FastSAC's and Isaac Lab's default)."""


def with_preset(cfg: _C, preset: Preset) -> _C:
    """``cfg`` with ``preset``'s values: ``cpu`` changes nothing (the defaults are its);
    ``gpu`` trains on MuJoCo Warp and CUDA with ``GPU_ENVS`` worlds and ``fastsac_sac``'s
    SAC (a fine-tuning recipe keeps its own SAC and takes the scale: batch, updates, replay,
    the compiled step), and logs, evaluates and checkpoints at the cadence that scale
    needs, without the replay buffer in the checkpoints (4M transitions, about 1 GB;
    ``--save-replay`` keeps it). The command line's flags apply on top (the CLI makes
    this the defaults)."""
    if preset != "gpu":
        return cfg
    fast = fastsac_sac()
    if type(cfg.sac) is SACConfig and cfg.sac == SACConfig():
        sac = dataclasses.replace(fast, gamma=cfg.sac.gamma)
    else:  # a method's own recipe, at the GPU's scale
        sac = dataclasses.replace(cfg.sac, batch_size=fast.batch_size,
                                  updates_per_step=fast.updates_per_step,
                                  actor_update_every=min(cfg.sac.actor_update_every,
                                                         fast.actor_update_every),
                                  buffer_size=fast.buffer_size,
                                  learning_starts=fast.learning_starts, compile=True,
                                  bf16=True)
    return dataclasses.replace(cfg, preset=preset, num_envs=GPU_ENVS, backend="warp",
                               device="cuda", threads=None, sac=sac,
                               log_every=50 * GPU_ENVS, eval_every=50 * GPU_ENVS,
                               eval_episodes=64, checkpoint_every=300.0, save_replay=False)


GYM_DISCOUNT = 0.99
"""The discount of a ``--gym`` run without --sac.gamma (SB3's, RLPD's and gymnasium's
benchmarks' own; a gymnasium env declares no horizon to derive one from)."""


@dataclasses.dataclass(kw_only=True)
class TrainConfig(RunConfig):
    """Train a policy with SAC and a safety critic in batched simulation.

    Example: robot-rl train --task reach --safety gate --time-budget 300
    """

    preset: Preset = "cpu"
    """The recipe the defaults follow: cpu (this runner's, measured on a 2-core CPU) or gpu
    (FastSAC's at a GPU's scale: 4,096 MuJoCo Warp worlds on CUDA, batches of 8,192, 8
    updates per vector step, the compiled step in a CUDA graph; ``with_preset``). Any flag
    given with it overrides its value."""
    task: str = "reach"
    """Task name (robot-rl sim info lists them); ``--env`` defaults to its config."""
    gym: str | None = None
    """Train on this gymnasium env id instead of a task (``--gym Pusher-v5``;
    ``module:Env-v0`` imports its package first), through ``robot_rl.interop.GymVecEnv``:
    cost from info['cost'], success from info['success'] / info['is_success']. Its
    discount is 0.99 unless --sac.gamma is given; the run is named after the id; --task,
    --env.*, --dr, --mirror, --backend warp and --ray do not apply."""
    algo: Literal["sac"] = "sac"
    """Learning algorithm."""
    safety: SafetyMode = "both"
    """Safety critic use: gate (reject unsafe candidate actions), lagrangian (penalize expected
    cost), both, or off."""
    num_envs: int = 16
    """Parallel training envs."""
    total_steps: int = 2_000_000
    """Env transitions to collect (all envs together)."""
    target_evals: int = 1
    """Evaluations in a row that must reach target_success before training stops. With 2 or
    more, one lucky evaluation of a policy short of the target does not end training: 31 of
    32 episodes happen to a 90% policy one time in six."""
    seed: int = 0
    """Seed of envs, networks and sampling."""
    threads: int | None = 1
    """CPU threads of the learner (torch) and of the physics (the cpu backend's C pool);
    None: one per core. One is the default: with another process busy on a 2-core machine,
    two made reach's training 2.5-3.4x slower, while on an idle one they saved 6% (128-unit
    networks) to 21% (256). More envs (hundreds) or larger networks on an idle machine gain
    from more. A fixed count also keeps a seed's run the same on every machine."""
    backend: Literal["cpu", "warp"] = "cpu"
    """Simulation backend: cpu (MuJoCo C threads) or warp (MuJoCo Warp; needs the gpu extra)."""
    device: str = "cpu"
    """Torch device of the learner, replay buffer and envs (cuda with --backend warp on a
    GPU; cpu with --backend warp runs Warp's CPU device, slowly)."""
    dr: DRPreset | None = None
    """Domain randomization preset replacing env.dr (default: the task's own; for other
    ranges set --env.dr.* instead)."""
    eval_every: int = 20_000
    """Evaluate every this many env transitions."""
    eval_episodes: int = 32
    """Episodes per evaluation."""
    log_every: int = 2_000
    """Log training scalars every this many env transitions."""
    keep_every: int = 0
    """Also keep the policy of every this many env steps, as checkpoints/step_<env steps>.pt
    beside latest.pt (no replay buffer; ``robot-rl eval`` takes the file): 0 keeps none."""
    save_replay: bool = True
    """Save the replay buffer with checkpoints (exact resumption; larger files)."""
    ray: str | None = None
    """Collect with env-runner actors on Ray and learn in a learner actor: auto (join the
    running cluster, or start Ray here), local (always start one here), or a cluster's
    address (host:6379, ray://host:10001). Default: one process (needs the dist extra)."""
    env_runners: int = 2
    """With --ray: env-runner actors, each stepping --num-envs envs."""
    dist: RayOptions = dataclasses.field(default_factory=RayOptions)
    """With --ray: env-runner batches and the actors' resources."""
    mirror: bool = False
    """Replace each sampled transition by its mirror image about the arm base's x-z plane
    with probability 1/2 (its observations and action; ``robot_rl/sim/mirror.py``), for a
    task and an arm that declare that symmetry (push and lift on arm7; others are refused
    with the reason): the critics and the actor learn from twice the states the env
    showed. Not in SAC, RLPD, WSRL or Policy Decorator (rsl_rl's PPO mirrors its samples,
    ``symmetry_cfg``): off; measured in docs/learners.md."""
    env: TaskConfig = dataclasses.field(default_factory=_default_env)
    """The task's config; every field is a flag (robot-rl train --task push --help lists
    push's): episode length, action space (env.action:ee-delta), controller
    (env.controller:osc), shield, safety costs, reward weights, randomization ranges."""
    sac: SACConfig = dataclasses.field(default_factory=SACConfig)
    """SAC hyper-parameters."""
    warp: WarpOptions = dataclasses.field(default_factory=WarpOptions)
    """Options of the warp backend (contact and constraint room per world, CUDA graphs)."""
    safety_critic: Annotated[SafetyConfig, tyro.conf.arg(name="safety-critic")] = \
        dataclasses.field(default_factory=SafetyConfig)
    """Safety-critic hyper-parameters (its mode is --safety)."""

    def __post_init__(self) -> None:
        if self.gym is not None and self.sac.gamma is None:
            self.sac = dataclasses.replace(self.sac, gamma=GYM_DISCOUNT)
        # ``env`` follows ``task`` unless it was set for that task (the CLI's two-phase parse
        # gives the task's config as the default); ``dr`` replaces its ranges.
        if self.env.name != self.task:
            if self.env != make_task_config(self.env.name):
                raise ConfigError(f"task is {self.task!r} but the env config given is task "
                                  f"{self.env.name!r}'s")
            self.env = make_task_config(self.task)
        if self.dr is not None:
            preset = dr_preset(self.dr)
            if self.env.dr not in (preset, make_task_config(self.task).dr):
                raise ConfigError(f"--dr {self.dr} replaces the randomization ranges; give "
                                  f"either --dr or --env.dr.* flags")
            self.env = dataclasses.replace(self.env, dr=preset)

    @property
    def env_name(self) -> str:
        """What the run trains on: the gymnasium id (``--gym``) or the task."""
        return self.gym or self.task

    @property
    def method_name(self) -> str:
        """What names the run (``{task}__{method}__{seed}__{time}``) and labels its progress
        bar: the algorithm; each fine-tuning recipe names itself."""
        return self.algo

    @classmethod
    def from_saved(cls: type[_C], data: dict[str, Any]) -> _C:
        """The config saved in a run's config.json or checkpoint (runs saved before configs
        held ``env`` had ``episode_length`` instead: migrated)."""
        data = dict(data)
        if "env" not in data:
            length = data.pop("episode_length", None)
            env = make_task_config(data.get("task", "reach"))
            if length is not None:
                env.episode_length = int(length)
            data["env"] = to_dict(env)
        return from_dict(cls, data)

    def validate(self) -> None:
        self.validate_run()
        for name in ("num_envs", "total_steps", "eval_episodes", "eval_every", "log_every",
                     "target_evals"):
            if getattr(self, name) < 1:
                why = ("; the evaluations measure the run (its success curve, "
                       "--target-success): a larger --eval-every evaluates less often"
                       if name == "eval_episodes" else "")
                raise ConfigError(f"--{name.replace('_', '-')} must be >= 1, got "
                                  f"{getattr(self, name)}{why}")
        if self.keep_every < 0:
            raise ConfigError(f"--keep-every must be >= 0 env steps, got {self.keep_every}")
        if self.threads is not None and self.threads < 1:
            raise ConfigError(f"--threads must be >= 1 (or None: one per core), got "
                              f"{self.threads}")
        if self.ray is not None:
            self.dist.validate(self.env_runners)
        if self.gym is not None:
            self._validate_gym()

    def _validate_gym(self) -> None:
        """What ``--gym`` leaves out: the task's own config and what needs our simulation."""
        if type(self) is not TrainConfig:
            raise ConfigError(f"--gym trains robot-rl train runs; {type(self).__name__} "
                              f"learns on our tasks")
        given = [flag for flag, on in (
            ("--task", self.task != TrainConfig.task),
            ("--env.*", self.env != make_task_config(self.task)), ("--dr", self.dr is not None),
            ("--mirror", self.mirror), ("--backend warp", self.backend != "cpu"),
            ("--ray", self.ray is not None)) if on]
        if given:
            verb, them = ("is", "it") if len(given) == 1 else ("are", "them")
            raise ConfigError(f"--gym {self.gym}: {', '.join(given)} {verb} for our simulated "
                              f"tasks, not for a gymnasium env; leave {them} out")
