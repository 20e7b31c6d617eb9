"""The config of pixel distillation (``robot-rl distill-pixels``) and what its loop and its
evaluation share: the teacher's type, the env with cameras, the terms the cameras stand in
for and the columns the student sees."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import torch

from robot_rl.errors import ConfigError
from robot_rl.sim import TaskConfig, make_env
from robot_rl.sim.cameras import CameraConfig
from robot_rl.sim.env import BatchedEnv
from robot_rl.sim.randomization import DRPreset
from robot_rl.sim.vec_env import Layout, layout_columns
from robot_rl.sim.visual_dr import VISUAL_PRESETS, VisualPreset
from robot_rl.vision.encoder import MIN_SIZE
from robot_rl.vision.student import PixelPolicyConfig


@dataclasses.dataclass(kw_only=True)
class PixelDistillConfig:
    """Distil a state teacher (a trained run, or the task's scripted expert) into a student
    that sees camera images and proprioception (DAgger under dynamics and visual
    randomization).

    Example: robot-rl distill-pixels --task push --cameras front wrist --iterations 6
    """

    task: str = "push"
    """Task (with --teacher: taken from the run)."""
    teacher: Path | None = None
    """Run directory of a trained state policy (default: the task's scripted expert)."""
    cameras: tuple[str, ...] = ("front", "wrist")
    """Cameras the student sees."""
    size: int = 48
    """Square image size [px] (48: ~20 ms per 128-image training batch and camera on 2
    CPU cores with the default encoder; 64 costs 2.5x)."""
    depth: bool = False
    """The student also sees depth."""
    visual: VisualPreset = "default"
    """Visual randomization preset (``sim.visual_dr``: camera pose and field of view, lights,
    colours, pixel and depth noise, and frames as old as a 30 fps camera's)."""
    dr: DRPreset = "default"
    """Dynamics randomization preset."""
    policy: PixelPolicyConfig = dataclasses.field(
        default_factory=lambda: PixelPolicyConfig(activation="elu"))
    """The student's networks and augmentation (here an ELU action MLP: it clones the push
    expert as a state policy better than ReLU's, docs/vision-history.md)."""
    drop_terms: tuple[str, ...] = ("last_action", "prev_action")
    """Observation terms the student does not see. The last action predicts the teacher's
    next one so well that a cloned student copies it and ignores the cameras (the copycat
    problem of behaviour cloning with action history)."""
    iterations: int = 8
    """DAgger iterations (the first rolls out the teacher)."""
    num_envs: int = 48
    """Parallel envs of the image rollouts. Each env's episode is one draw of the visual and
    dynamics randomization and one puck and goal: the estimate generalizes to new episodes
    with many of them (48 rather than 16 raised push's student from 0.83 to 0.94 of its
    teacher, docs/vision-history.md). ~1 GB of images per 100,000 samples (two 48x48 cameras)."""
    rollout_steps: int | None = None
    """Control steps per iteration and env (default: one episode)."""
    beta_decay: float = 0.5
    """Probability of executing the teacher's action in iteration i is beta_decay ** i."""
    state_weight: float = 1.0
    """The student estimates, from its images and proprioception, the observation terms the
    robot does not measure (the ones the cameras stand in for, e.g. push's puck position),
    labelled from the simulator's state. With ``--policy.act-on features`` this is the
    weight of that auxiliary loss; 0 gives the student no state head (then it acts on the
    features)."""
    grad_steps: int = 1500
    """Gradient steps on images per iteration (the encoder and the state head; with
    ``--policy.act-on features`` the whole student)."""
    batch_size: int = 128
    """Images per gradient step."""
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
    lr: float = 1e-3
    eval_episodes: int = 64
    """Episodes to compare student and teacher (0: skip)."""
    seed: int = 0
    out: Path = Path("runs/pixel_student.pt")
    """Where the student is saved."""
    progress: bool = True

    def validate(self) -> None:
        if min(self.iterations, self.grad_steps, self.num_envs, self.batch_size,
               self.action_batch, self.policy_steps, self.policy_envs) < 1:
            raise ConfigError("iterations, grad_steps, num_envs, batch_size, action_batch, "
                              "policy_steps and policy_envs must be >= 1")
        if self.action_steps < 0 or self.policy_iterations < 0 or self.state_noise < 0:
            raise ConfigError("action_steps, policy_iterations and state_noise must be >= 0")
        acts_on_state = self.policy.act_on == "state" and self.state_weight > 0
        if acts_on_state and self.action_steps == 0 and self.policy_iterations == 0:
            raise ConfigError("--policy-iterations 0 with --action-steps 0 leaves the action "
                              "MLP untrained: give --action-steps (e.g. 2000)")
        if not 0.0 <= self.beta_decay <= 1.0:
            raise ConfigError(f"--beta-decay must be in [0, 1], got {self.beta_decay}")
        if self.state_weight < 0:
            raise ConfigError(f"--state-weight must be >= 0, got {self.state_weight}")
        if self.size < MIN_SIZE:
            raise ConfigError(f"--size must be >= {MIN_SIZE} px, got {self.size}")


Teacher = Callable[[BatchedEnv], torch.Tensor]
"""The teacher's actions (E, A) at an env's current state."""


def pixel_env(cfg: PixelDistillConfig, task_cfg: str | TaskConfig, num_envs: int,
              seed: int) -> BatchedEnv:
    cams = CameraConfig(names=cfg.cameras, height=cfg.size, width=cfg.size, depth=cfg.depth,
                        visual=VISUAL_PRESETS[cfg.visual])
    return make_env(task_cfg, num_envs, dr=cfg.dr, seed=seed, cameras=cams)


def hidden_terms(env: BatchedEnv) -> list[str]:
    """The observation terms an env with cameras keeps from its policy (the robot does not
    measure them; ``sim.measurable``), in the ``critic`` group's order."""
    shown = {n for n, _ in env.obs_layout}
    return [n for n, _ in env.critic_layout[:len(env.task.observations)] if n not in shown]


def student_columns(layout: Layout, drop: tuple[str, ...]) -> torch.Tensor:
    """Indices of the observation columns the student sees (the terms not in ``drop``)."""
    return torch.tensor(layout_columns(layout, [n for n, _ in layout if n not in drop]),
                        dtype=torch.long)
