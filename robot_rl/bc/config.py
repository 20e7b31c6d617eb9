"""The configs of behaviour cloning (``robot-rl bc``: the dataset, the chunked policy, its
optimisation, evaluation and run directory) and of filtered BC (``robot-rl bc-filtered``).
No torch here: ``--help`` reads them."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Literal

import tyro

from robot_rl.errors import ConfigError
from robot_rl.policies import PolicyConfig
from robot_rl.run_config import RunConfig
from robot_rl.sim.configs import DRPreset

BCAlgo = Literal["bc-flow", "bc-mlp"]


@dataclasses.dataclass(kw_only=True)
class BCConfig(RunConfig):
    """Behaviour cloning of a chunked policy (flow matching, or the MLP baseline) from a
    dataset, evaluated in simulation as it learns.

    Example: robot-rl bc --demos data/push --algo bc-flow --steps 20000
    """

    demos: Path
    """Dataset to learn from (robot-rl record, the ROS teleop node, robot-rl data import, or
    any LeRobot dataset with observation.state and action)."""
    algo: BCAlgo = "bc-flow"
    """bc-flow: flow-matching chunk policy; bc-mlp: an MLP regressing the chunk (baseline)."""
    policy: PolicyConfig = dataclasses.field(default_factory=PolicyConfig)
    """Chunk horizon and execution, observation history, network, flow steps."""
    max_episodes: int | None = None
    """Learn from the dataset's first N episodes only (default: all)."""
    drop_idle: bool = True
    """Leave out the training frames whose action is 0 in every element (the teleoperator
    paused; the arm holds still): a policy of the state cannot tell when a pause ends,
    and cloned from pauses it stalls. Flow-BC of push's 20 multimodal-human
    demonstrations (21% of their frames idle) ends at the goal 2x as often without them
    (three seeds: 24.7% against 12.2% over 600 episodes; docs/learners.md).
    Absolute-position actions are never all 0, so such datasets keep every frame;
    --no-drop-idle keeps them everywhere (the reference's choice)."""
    mirror: bool = False
    """Learn from every training episode twice: as recorded and as its mirror image about
    the arm base's x-z plane (y -> -y), for a task and an arm that declare that symmetry
    (push and lift on arm7; ``robot_rl/data/mirror.py``), as rsl_rl's symmetry augmentation does.
    Off by default (the reference does not); push's 20 multimodal-human demonstrations:
    docs/learners.md."""
    holdout: float | None = None
    """Fraction of the episodes (drawn with --seed, at least one) held out to measure the
    action error on (default: 0.1 for a dataset that matches none of our simulated tasks,
    whose only evaluation that is; 0 for ours, evaluated in simulation)."""
    steps: int = 20_000
    """Gradient steps."""
    batch_size: int = 256
    """Frames per gradient step."""
    lr: float = 1e-3
    """AdamW learning rate (cosine decay to a tenth of it over --steps)."""
    weight_decay: float = 1e-6
    """AdamW weight decay."""
    ema: float = 0.999
    """Decay of the exponential moving average of the weights that act (0: no EMA)."""
    grad_clip: float = 1.0
    """Gradient norm clip."""
    eval_every: int = 2_000
    """Evaluate in simulation every this many gradient steps (and at the end)."""
    eval_episodes: int = 32
    """Episodes per evaluation (0: no evaluation, e.g. a task not in the registry)."""
    eval_envs: int = 16
    """Parallel simulated envs of the evaluation."""
    ensemble: float | None = None
    """Temporal ensembling rate when acting (ACT's exp(-m i) weights; default: receding
    horizon, executing --policy.execute actions per chunk)."""
    dr: DRPreset | None = None
    """Domain randomization of the evaluation env (default: the dataset's)."""
    log_every: int = 500
    """Log the loss every this many gradient steps."""
    seed: int = 0
    """Seed of the networks, batches, noise and evaluation episodes."""
    device: str = "cpu"
    """Torch device of training and evaluation."""

    def validate(self) -> None:
        self.validate_run()
        self.policy.validate()
        if self.steps < 1 or self.batch_size < 1 or self.lr <= 0:
            raise ConfigError("--steps and --batch-size must be >= 1 and --lr > 0")
        if not 0.0 <= self.ema < 1.0:
            raise ConfigError(f"--ema must be in [0, 1), got {self.ema}")
        if self.eval_every < 1 or self.eval_episodes < 0 or self.eval_envs < 1 or \
                self.log_every < 1:
            raise ConfigError("--eval-every, --eval-envs and --log-every must be >= 1 and "
                              "--eval-episodes >= 0")
        if self.holdout is not None and not 0.0 <= self.holdout < 1.0:
            raise ConfigError(f"--holdout must be in [0, 1), got {self.holdout}")
        if self.max_episodes is not None and self.max_episodes < 1:
            raise ConfigError(f"--max-episodes must be >= 1, got {self.max_episodes}")

    @property
    def kind(self) -> Literal["flow", "mlp"]:
        return "flow" if self.algo == "bc-flow" else "mlp"


@dataclasses.dataclass(kw_only=True)
class FilteredBCConfig(RunConfig):
    """Re-train a BC policy on its own successful rollouts, round after round.

    Example: robot-rl bc-filtered runs/push__bc-flow__0__20261123-101500 --rounds 10
    """

    policy: Annotated[Path, tyro.conf.Positional]
    """The BC run (robot-rl bc) to start from; its dataset and task are used."""
    rounds: int = 10
    """Rounds of rollouts then training."""
    rollouts: int = 64
    """Episodes rolled out per round (the successful ones are kept)."""
    steps: int = 2_000
    """Gradient steps per round, on the demonstrations and every episode kept."""
    lr: float = 3e-4
    """AdamW learning rate (cosine decay to a tenth over all rounds)."""
    num_envs: int = 16
    """Parallel envs of the rollouts."""
    total_steps: int | None = None
    """Stop once this many env steps were rolled out (default: the rounds decide)."""
    eval_episodes: int = 64
    """Evaluation episodes after each round (as the exported policy acts)."""
    seed: int = 0
    """Seed of the rollouts, batches and evaluation episodes."""
    resume: tyro.conf.Suppress[Path | None] = None
    """Not taken: a filtered run starts from its BC run (the episodes it kept are not in its
    checkpoint)."""

    def validate(self) -> None:
        self.validate_run()
        if self.resume is not None:
            raise ConfigError("bc-filtered does not resume a run: start it again from the BC "
                              "run")
        if min(self.rounds, self.rollouts, self.steps, self.num_envs, self.eval_episodes) < 1:
            raise ConfigError("--rounds, --rollouts, --steps, --num-envs and --eval-episodes "
                              "must be >= 1")
        if self.lr <= 0:
            raise ConfigError(f"--lr must be > 0, got {self.lr}")
