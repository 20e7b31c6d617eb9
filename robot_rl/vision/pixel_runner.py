"""Train a pixel policy with asymmetric SAC, from scratch or from a DAgger student.

    robot-rl train-pixels --task push --cameras front wrist --time-budget 3600
    robot-rl train-pixels --student runs/pixel_student.pt --time-budget 1800   # fine-tune

    runner = PixelRunner(PixelTrainConfig(task="push"))
    runner.train()      # run dir as robot-rl train's, plus pixel_policy.pt (a pixel student)

The loop is ``Runner``'s (collect, learn, evaluate, checkpoint, resume); what differs is
what the agent reads (``robot_rl.vision.pixel_sac``): the actor the student's
proprioception columns and the env's camera images, the critics and the safety critic the
``critic`` observation group. The replay buffer stores both, images as uint8 (depth as
float16): 48x48 RGB from two cameras is ~28 kB per transition, 1.4 GB at the default
50,000.

From a student (``--student``, a ``robot-rl distill-pixels`` file), its cameras, image size,
inputs and networks are taken, its weights start the actor, the first
``learning_starts`` transitions are its own sampled actions, and the critics train alone for
``critic_warmup`` updates before the actor moves: a random critic's gradient would undo
the student before the critic knows anything. The safety gate, where the mode has one,
joins then too.

Every checkpoint also writes ``pixel_policy.pt``, the actor's deterministic policy as a
pixel student file: ``robot-rl export RUN`` exports it, ``robot-rl deploy`` runs it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import torch
from rich.console import Console

from robot_rl.checkpoint import CheckpointError, load_checkpoint, resolve_checkpoint
from robot_rl.config_io import to_dict
from robot_rl.errors import ConfigError
from robot_rl.evaluate import EvalResult, evaluate_decisions
from robot_rl.replay import ReplayBuffer
from robot_rl.runner import Runner
from robot_rl.sim.env import BatchedEnv
from robot_rl.sim.vec_env import CRITIC, VecEnv, layout_columns
from robot_rl.vision.configs import PixelTrainConfig
from robot_rl.vision.pixel_inputs import hidden_terms, pixel_env, student_columns
from robot_rl.vision.pixel_sac import PROPRIO, PixelActor, PixelSAC, image_key, replay_extra
from robot_rl.vision.student import PixelPolicy
from robot_rl.vision.student_file import load_pixel_student, save_pixel_student, student_record

PIXEL_POLICY = "pixel_policy.pt"
"""The run directory's pixel student file (the actor's deterministic policy)."""


def with_student(cfg: PixelTrainConfig) -> tuple[PixelTrainConfig, PixelPolicy | None]:
    """The config with the student's inputs and networks (where ``cfg.student`` is set) and
    the student's policy."""
    if cfg.student is None:
        return cfg, None
    policy, state = load_pixel_student(cfg.student)
    record = student_record(state)
    if record.task != cfg.task:
        raise ConfigError(f"the student {cfg.student} was trained on {record.task!r}, "
                          f"not {cfg.task!r}: give --task {record.task}")
    return dataclasses.replace(cfg, inputs=record.inputs, policy=record.policy,
                               state_weight=record.state_weight if policy.state_dim else 0.0
                               ), policy


class PixelRunner(Runner):
    """Runner of asymmetric pixel SAC (see module docstring)."""

    kind = "pixel_sac"
    n_step_ok = False  # its buffer keeps images and proprioception beside the critic's state
    config_type = PixelTrainConfig

    def __init__(self, cfg: PixelTrainConfig, console: Console | None = None):
        self._student: PixelPolicy | None = None
        if cfg.resume is None:
            cfg, self._student = with_student(cfg)
        self._critic = torch.zeros(0)
        """The training env's current critic observations (E, C)."""
        self._images: dict[str, torch.Tensor] = {}
        """Its current camera images."""
        if self._student is not None:  # its own sampled actions fill the buffer at first
            self.warmup = "policy"
        super().__init__(cfg, console)
        self.cfg: PixelTrainConfig
        self._normalized = self._student is not None or self.agent.updates > 0
        """The policy's proprioception and state normalization is set (a student's own, or
        fitted before the first update; a resumed run's is in its checkpoint)."""

    # -- what differs from the state runner ---------------------------------------------------

    def make_env(self, num_envs: int, seed: int) -> BatchedEnv:
        return pixel_train_env(self.cfg, num_envs, seed)

    @property
    def pixel_env(self) -> BatchedEnv:
        assert isinstance(self.env, BatchedEnv)
        return self.env

    def build_agent(self) -> PixelSAC:
        agent, self.proprio_cols, self.state_terms = pixel_agent(self.cfg, self.pixel_env,
                                                                 self._student)
        return agent

    @property
    def pixel_agent(self) -> PixelSAC:
        assert isinstance(self.agent, PixelSAC)
        return self.agent

    def make_buffer(self) -> ReplayBuffer:
        env = self.pixel_env
        return ReplayBuffer(self.cfg.sac.buffer_size, env.obs_groups[CRITIC], env.act_dim,
                            self.cfg.device,
                            extra=replay_extra(len(self.proprio_cols), env.image_shapes))

    def reset_env(self, seed: int) -> torch.Tensor:
        obs = self.env.reset(seed=seed)
        self._critic = self.env.group_obs()[CRITIC]
        self._images = self.pixel_env.last_images
        return obs

    def act(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None,
                                              torch.Tensor | None]:
        act = self.pixel_agent.act_pixels(obs[:, self.proprio_cols], self._images,
                                          self._critic, gate=self._gate())
        return act.action, act.hold, act.rejected

    def _gate(self) -> bool | None:
        """Whether the safety gate acts (None: as the safety mode says). Starting from a
        student, it waits for the critics' warm-up: an untrained cost critic's rejections
        would replace the student's actions with arbitrary candidates."""
        if self.cfg.student is not None and self.agent.updates < self.cfg.critic_warmup:
            return False
        return None

    def store(self, obs: torch.Tensor, action: torch.Tensor, reward: torch.Tensor,
              cost: torch.Tensor, terminated: torch.Tensor, truncated: torch.Tensor,
              info: dict[str, Any], keep: torch.Tensor | None) -> None:
        cols = self.proprio_cols
        extra = {PROPRIO: obs[:, cols], f"next_{PROPRIO}": info["final_obs"][:, cols]}
        for k, v in self._images.items():
            extra[image_key(k)] = v
            extra[image_key(k, True)] = info["final_images"][k]
        next_critic = info["final_obs_groups"][CRITIC]
        self.buffer.add(self._critic, action, reward, cost, next_critic, terminated,
                        mask=keep, extra=extra)
        self.agent.observe(self._critic)
        self._critic = info["obs_groups"][CRITIC]
        self._images = info["images"]

    def before_update(self) -> None:
        """From scratch, the normalization fits the warm-up data at the first update (the
        pixel agent's statistics, not the runner's running normalizer)."""
        if not self._normalized:
            n = len(self.buffer)
            self.pixel_agent.fit_normalization(self.buffer.extra[PROPRIO][:n],
                                               self.buffer.obs[:n])
            self._normalized = True

    def actor_learns(self) -> bool:
        """A run from a student warms its critics up alone first (``critic_warmup``)."""
        return self.cfg.student is None or self.pixel_agent.updates >= self.cfg.critic_warmup

    def evaluate_policy(self, env: VecEnv, episodes: int, seed: int) -> EvalResult:
        return evaluate_pixel_agent(self.pixel_agent, env, episodes, self.proprio_cols,
                                    seed=seed, gate=self._gate())

    def save(self) -> Path:
        path = super().save()
        cfg = self.cfg
        save_pixel_student(self.run_dir / PIXEL_POLICY, self.pixel_agent.policy,
                           cfg.inputs, cfg.env, self.pixel_env, self.state_terms,
                           dr=cfg.dr or "default", state_weight=cfg.state_weight,
                           config=to_dict(cfg), trained_by="train-pixels", run=str(self.run_dir),
                           teacher=None if cfg.student is None else str(cfg.student),
                           student_success=self.history[-1]["success_rate"]
                           if self.history else None)
        return path


def pixel_train_env(cfg: PixelTrainConfig, num_envs: int, seed: int) -> BatchedEnv:
    """An env of the config's task with its cameras."""
    env = pixel_env(cfg.inputs, cfg.env, num_envs, seed, backend=cfg.backend,
                    device=cfg.device, warp=cfg.warp)
    if CRITIC not in env.obs_groups:
        raise ConfigError(f"task {cfg.task!r} has no critic observation group")
    return env


def pixel_agent(cfg: PixelTrainConfig, env: BatchedEnv, student: PixelPolicy | None = None
                ) -> tuple[PixelSAC, torch.Tensor, list[str]]:
    """(the agent, the proprioception columns of the env's observation the actor reads,
    the terms its state head estimates); its actor is ``student`` or a new PixelPolicy."""
    cols = student_columns(env.obs_layout, cfg.inputs.drop_terms)
    state_terms = hidden_terms(env) if cfg.state_weight > 0 else []
    state_cols = torch.tensor(layout_columns(env.critic_layout, state_terms), dtype=torch.long)
    policy = student or PixelPolicy(cfg.policy, env.image_shapes, len(cols), env.act_dim,
                                    state_dim=len(state_cols))
    if policy.proprio_dim != len(cols) or policy.image_shapes != env.image_shapes \
            or policy.state_dim != len(state_cols):
        raise ConfigError(f"the student's inputs ({policy.proprio_dim} proprioception "
                          f"columns, images {policy.image_shapes}, {policy.state_dim} state "
                          f"terms) are not this env's ({len(cols)}, {env.image_shapes}, "
                          f"{len(state_cols)})")
    safety = dataclasses.replace(cfg.safety_critic, mode=cfg.safety)
    agent = PixelSAC(PixelActor(policy, cfg.init_log_std), env.obs_groups[CRITIC], env.act_dim,
                     cfg.sac.with_gamma(env.control_dt, cfg.env.discount_horizon), safety,
                     state_cols=state_cols if policy.state_dim else None,
                     state_weight=cfg.state_weight,
                     rl_trains_perception=cfg.rl_trains_perception,
                     anchor_weight=cfg.anchor_weight if cfg.anchor_weight is not None else
                     0.4 if cfg.student is not None else 0.0,
                     device=cfg.device, seed=cfg.seed)
    return agent, cols, state_terms


@torch.no_grad()
def evaluate_pixel_agent(agent: PixelSAC, env: VecEnv, episodes: int, cols: torch.Tensor,
                         seed: int = 0, gate: bool | None = None, **kwargs: Any) -> EvalResult:
    """Evaluate a PixelSAC's deterministic policy (gated where its mode gates, or as
    ``gate`` says) in an env with its cameras (a ``BatchedEnv``: the images of its current
    state)."""
    if not isinstance(env, BatchedEnv):
        raise ConfigError("a pixel policy is evaluated in a BatchedEnv with cameras")
    return evaluate_decisions(
        lambda obs: agent.act_pixels(obs[:, cols], env.last_images, env.group_obs()[CRITIC],
                                     deterministic=True, gate=gate),
        env, episodes, seed=seed, **kwargs)


def load_pixel_run(path: str | Path, num_envs: int, seed: int
                   ) -> tuple[PixelSAC, PixelTrainConfig, BatchedEnv, torch.Tensor]:
    """A train-pixels run's agent, config, an env of ``num_envs`` with its cameras and the
    proprioception columns (for ``robot-rl eval``)."""
    state = load_checkpoint(resolve_checkpoint(Path(path)))
    if state.get("kind") != PixelRunner.kind:
        raise CheckpointError(f"{path} is not a train-pixels run")
    cfg = PixelTrainConfig.from_saved(state["config"])
    env = pixel_train_env(cfg, num_envs, seed)
    agent, cols, _ = pixel_agent(cfg, env)
    try:
        agent.load_full_state(state["agent"])
    except (RuntimeError, KeyError) as e:
        raise CheckpointError(f"checkpoint of {path} does not match its config: {e}") from None
    return agent, cfg, env, cols
