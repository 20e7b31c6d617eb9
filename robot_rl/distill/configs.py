"""The configs of distillation: DAgger's schedule (``DaggerConfig``), the state student's
(``robot-rl distill``, ``DistillConfig``) and the pixel student's (``robot-rl
distill-pixels``, ``PixelDistillConfig``: what it sees, its networks and the two training
stages' own settings). Importable without torch (``--help`` reads them)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Any, Literal

import tyro

from robot_rl.config_io import from_dict, nest
from robot_rl.errors import ConfigError
from robot_rl.sim.configs import DRPreset
from robot_rl.vision.configs import PixelInputs, PixelPolicyConfig, saved_policy


@dataclasses.dataclass(kw_only=True)
class DaggerConfig:
    """DAgger's schedule, the student's optimizer and the comparison with the teacher:
    what every distillation shares."""

    iterations: int = 6
    """DAgger iterations (the first rolls out the teacher)."""
    rollout_steps: int | None = None
    """Control steps per iteration and env (default: one episode)."""
    num_envs: int = 32
    """Parallel envs of the rollouts."""
    dr: DRPreset = "default"
    """Domain randomization of the rollouts and the evaluation."""
    beta_decay: float = 0.5
    """Probability of executing the teacher's action in iteration i is beta_decay ** i."""
    grad_steps: int = 600
    """Student gradient steps per iteration."""
    batch_size: int = 512
    """Samples per gradient step."""
    lr: float = 1e-3
    """Adam learning rate of the student."""
    eval_episodes: int = 64
    """Episodes to compare student and teacher (0: skip)."""
    seed: int = 0
    """Seed of rollouts and the student's initialization."""
    progress: bool = True
    """Show the progress bar in a terminal (elsewhere, or without it: one line per
    iteration)."""

    def validate(self) -> None:
        if min(self.iterations, self.grad_steps, self.num_envs, self.batch_size) < 1:
            raise ConfigError("--iterations, --grad-steps, --num-envs and --batch-size must "
                              "be >= 1")
        if not 0.0 <= self.beta_decay <= 1.0:
            raise ConfigError(f"--beta-decay must be in [0, 1], got {self.beta_decay}")
        if self.eval_episodes < 0:
            raise ConfigError(f"--eval-episodes must be >= 0, got {self.eval_episodes}")


@dataclasses.dataclass(kw_only=True)
class DistillConfig:
    """Distill a run's actor into a small student MLP (DAgger under domain randomization).

    Example: robot-rl distill runs/reach__sac__0__20261121-101500 --hidden 64 64
    """

    run: Annotated[Path, tyro.conf.Positional]
    """Run directory (or checkpoint file) of the teacher."""
    hidden: tuple[int, ...] = (64, 64)
    """Hidden layer sizes of the student."""
    chunk_block: Literal["residual", "plain"] = "residual"
    """A chunked teacher's (bc-flow, dsrl) one-step student: residual blocks of width
    max(hidden), len(hidden) of them, or plain hidden layers (``PolicyConfig.block``)."""
    sees: Literal["teacher", "all"] = "teacher"
    """A chunked teacher's student sees what its teacher sees, or every observation element
    (the last action too, which a flow policy cloned from demonstrations leaves out)."""
    clock: bool = True
    """A residual run's one-step student sees its teacher's clock (``PolicyConfig.clock``):
    the steps since the episode's start mod the flow's executed steps and mod the residual's
    decision period, the phase that no observation carries (docs/diffusion.md). Ignored for
    other teachers, whose students keep their chunking."""
    dagger: Annotated[DaggerConfig, tyro.conf.arg(name="")] = dataclasses.field(
        default_factory=DaggerConfig)
    """DAgger's schedule, the student's optimizer and the evaluation (flags without a
    prefix: ``--iterations``, ``--num-envs``, ...)."""


def _pixel_dagger() -> DaggerConfig:
    """distill-pixels' schedule: more envs (each env's episode is one draw of the visual
    and dynamics randomization and one puck and goal: 48 rather than 16 raised push's
    student from 0.83 to 0.94 of its teacher, docs/vision-history.md; ~1 GB of images per
    100,000 samples with two 48x48 cameras), more iterations, and gradient steps on images
    (the encoder and the state head; with ``--policy.act-on features`` the whole student)
    in batches of 128 images."""
    return DaggerConfig(iterations=8, num_envs=48, grad_steps=1500, batch_size=128)


@dataclasses.dataclass(kw_only=True)
class PixelDistillConfig:
    """Distil a state teacher (a trained run, or the task's scripted expert) into a student
    that sees camera images and proprioception (DAgger under dynamics and visual
    randomization).

    Example: robot-rl distill-pixels --task push --cameras front wrist --iterations 6
    """

    task: str = "push"
    """Task (with --teacher: taken from the run)."""
    robot: str | None = None
    """The arm (default: the task's own, arm7; with --teacher: taken from the run)."""
    teacher: Path | None = None
    """Run directory of a trained state policy (default: the task's scripted expert)."""
    inputs: Annotated[PixelInputs, tyro.conf.arg(name="")] = dataclasses.field(
        default_factory=PixelInputs)
    """What the student sees (flags without a prefix: ``--cameras``, ``--size``, ...)."""
    policy: PixelPolicyConfig = dataclasses.field(
        default_factory=lambda: PixelPolicyConfig(activation="elu"))
    """The student's networks and augmentation (here an ELU action MLP: it clones the push
    expert as a state policy better than ReLU's, docs/vision-history.md)."""
    dagger: Annotated[DaggerConfig, tyro.conf.arg(name="")] = dataclasses.field(
        default_factory=_pixel_dagger)
    """DAgger's schedule of the image stage, the optimizer and the evaluation (flags without
    a prefix: ``--iterations``, ``--num-envs``, ``--grad-steps`` on images, ...; 8
    iterations of 48 envs, 1500 steps of 128 images by default)."""
    state_weight: float = 1.0
    """The student estimates, from its images and proprioception, the observation terms the
    robot does not measure (the ones the cameras stand in for, e.g. push's puck position),
    labelled from the simulator's state. With ``--policy.act-on features`` this is the
    weight of that auxiliary loss; 0 gives the student no state head (then it acts on the
    features)."""
    action_steps: int = 0
    """With a student that acts on its state estimate: gradient steps of the action MLP per
    image iteration, on vectors: the proprioception and the true hidden state blurred by the
    estimator's current error (per term, measured on the last image batches). 0: the action
    MLP ``--policy-iterations`` trained stays as it is."""
    action_batch: int = 512
    policy_iterations: int = 16
    """With a student that acts on its state estimate: DAgger iterations that first train its
    action MLP alone, as a state policy in an env without cameras (nothing rendered), on the
    proprioception and the true hidden state plus Gaussian noise of ``--state-noise``; then
    the image iterations train the encoder and state head (and, with ``--action-steps`` > 0,
    go on training the action MLP on the blurred state). 0: the action MLP learns only in the
    image iterations (then give ``--action-steps``)."""
    policy_steps: int = 3000
    """Gradient steps of the action MLP per ``--policy-iterations`` iteration (batches of
    ``--action-batch``)."""
    policy_envs: int = 32
    """Parallel envs of the ``--policy-iterations`` rollouts (no cameras: cheap). 32
    rather than 16 raised push's action MLP from 77.3% to 84.4% on the true state (256
    episodes, docs/vision-history.md)."""
    state_noise: float = 0.0
    """Standard deviation of Gaussian noise on the hidden state in ``--policy-iterations``
    [normalized units], for an action MLP that must act on an estimate. 0.1 cost lift's
    action MLP 59 points on the true state (26.6% against 85.9%) and push's none measurable
    (docs/vision-history.md)."""
    out: Path = Path("runs/pixel_student.pt")
    """Where the student is saved."""

    def validate(self) -> None:
        self.dagger.validate()
        self.inputs.validate()
        if min(self.action_batch, self.policy_steps, self.policy_envs) < 1:
            raise ConfigError("--action-batch, --policy-steps and --policy-envs must be >= 1")
        if self.action_steps < 0 or self.policy_iterations < 0 or self.state_noise < 0:
            raise ConfigError("--action-steps, --policy-iterations and --state-noise must be "
                              ">= 0")
        acts_on_state = self.policy.act_on == "state" and self.state_weight > 0
        if acts_on_state and self.action_steps == 0 and self.policy_iterations == 0:
            raise ConfigError("--policy-iterations 0 with --action-steps 0 leaves the action "
                              "MLP untrained: give --action-steps (e.g. 2000)")
        if self.state_weight < 0:
            raise ConfigError(f"--state-weight must be >= 0, got {self.state_weight}")

    @classmethod
    def from_saved(cls, data: dict[str, Any]) -> PixelDistillConfig:
        """The config a pixel student file holds (files written before ``inputs`` and
        ``dagger`` were their own configs had their fields flat)."""
        data = dict(nest(nest(data, "inputs", PixelInputs), "dagger", DaggerConfig))
        data["policy"] = saved_policy(data.get("policy", {}))
        return from_dict(cls, data)
