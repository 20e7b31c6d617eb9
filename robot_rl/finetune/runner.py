"""Offline-to-online fine-tuning from demonstrations: RLPD and WSRL, with the safety critic.

    robot-rl finetune --demos data/push --task push --method rlpd
    robot-rl finetune --demos data/push --task push --method wsrl --offline-steps 20000

Both run the SAC agent of ``robot-rl train`` (critic ensemble with LayerNorm, REDQ-style
target subset, the safety critic as configured by ``--safety``) and its runner (evaluation,
checkpoints, TensorBoard), and differ in how they use the demonstrations:

* **RLPD** (Ball et al. 2023): every gradient batch is ``demo_ratio`` demonstrations and the
  rest online experience (symmetric sampling: 50/50 by default), a 10-critic LayerNorm
  ensemble, and several gradient steps per env step (update-to-data ratio > 1). Learning
  starts at once; the demos fill the batches until online data arrives.
* **WSRL** (Zhou et al. 2024): ``offline_steps`` gradient steps on the demonstrations alone,
  then ``warmup_steps`` env steps collected by the pre-trained policy with no updates (the
  warm start that keeps the Q-function from collapsing), then online training on online data
  only; the demonstrations are never replayed online.

``--bc-steps N`` first fits the actor's mean to the demonstrated actions (behaviour cloning),
for either method, and ``--critic-warmup M`` then trains the critics alone (the actor frozen)
for M gradient steps on the demonstrations, so that the first actor updates follow critics
that already value the warm-started policy instead of undoing it. The observation normalizer
starts from the demonstrations' statistics.

A dataset may also hold policy-driven episodes a person corrected (``robot-rl record
--policy``, or the ROS teleop node with an artifact): as in HIL-SERL, their intervention steps
join the demonstrations, and all their steps start the online buffer (``finetune/demos.py``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Literal

import torch
from rich.console import Console

from robot_rl.algos import SACConfig
from robot_rl.data.reader import Dataset
from robot_rl.errors import ConfigError
from robot_rl.finetune.demos import add_transitions, demo_and_online
from robot_rl.replay import Batch, ReplayBuffer
from robot_rl.runner import Runner, TrainConfig
from robot_rl.sim.vec_env import VecEnv


def _rlpd_sac() -> SACConfig:
    return SACConfig(num_critics=10, critic_subset=2, layer_norm=True, updates_per_step=8,
                     learning_starts=0)


@dataclasses.dataclass(kw_only=True)
class FinetuneConfig(TrainConfig):
    """Fine-tune from demonstrations with RLPD or WSRL (and the safety critic).

    Example: robot-rl finetune --demos data/push --task push --method rlpd
    """

    demos: Path
    """Dataset of demonstrations (robot-rl record); it must match the task's actions."""
    task: str = "push"
    """Task name (the demonstrations' task)."""
    method: Literal["rlpd", "wsrl"] = "rlpd"
    """rlpd: demos in every batch; wsrl: offline pre-training, warm-up, then online only."""
    max_episodes: int | None = None
    """Use the dataset's first N episodes only (default: all)."""
    demo_ratio: float = 0.5
    """RLPD: share of each batch drawn from the demonstrations."""
    offline_steps: int = 20_000
    """WSRL: gradient steps on the demonstrations before any env step."""
    warmup_steps: int = 5_000
    """WSRL: env steps collected by the pre-trained policy before online updates begin."""
    bc_steps: int = 0
    """Gradient steps of behaviour cloning of the actor's mean on the demos first (0: none)."""
    critic_warmup: int = 0
    """Gradient steps of the critics alone on the demos after --bc-steps (0: none)."""
    num_envs: int = 4
    sac: SACConfig = dataclasses.field(default_factory=_rlpd_sac)
    """SAC hyper-parameters (RLPD's defaults: 10 LayerNorm critics, 8 updates per vector
    step of 4 envs = UTD 2)."""

    def validate(self) -> None:
        super().validate()
        if not 0.0 <= self.demo_ratio <= 1.0:
            raise ConfigError(f"--demo-ratio must be in [0, 1], got {self.demo_ratio}")
        if min(self.offline_steps, self.warmup_steps, self.bc_steps, self.critic_warmup) < 0:
            raise ConfigError("--offline-steps, --warmup-steps, --bc-steps and "
                              "--critic-warmup must be >= 0")


class FinetuneRunner(Runner):
    """The training runner with demonstrations (see module docstring)."""

    cfg: FinetuneConfig

    def __init__(self, cfg: FinetuneConfig, console: Console | None = None,
                 env: VecEnv | None = None, eval_env: VecEnv | None = None):
        """``env`` / ``eval_env``: as for ``Runner`` (any ``VecEnv``; a BatchedEnv is checked
        against the dataset's task, robot and action space, another env by its widths)."""
        if cfg.method == "wsrl" and cfg.resume is None:
            # online updates begin after the warm-up of the pre-trained policy
            cfg = dataclasses.replace(cfg, sac=dataclasses.replace(
                cfg.sac, learning_starts=cfg.warmup_steps))
        dataset = Dataset(cfg.demos)  # a missing or corrupt dataset fails before the run dir
        super().__init__(cfg, console, env=env, eval_env=eval_env)
        self.demos, online = demo_and_online(dataset, self.env, self.cfg.device,
                                             self.cfg.max_episodes)
        self._pretrained = cfg.resume is not None
        n_online = 0 if self._pretrained else add_transitions(self.buffer, online, cfg.demos)
        n_int = int(online["intervention"].sum())
        self.console.print(f"demonstrations: {len(self.demos):,} transitions from "
                           f"{self.cfg.demos}" + (f" ({n_int:,} of them interventions; "
                           f"{n_online:,} policy-driven steps start the online buffer)"
                           if n_online else "") + f"; method {self.cfg.method}")

    # -- the phases before online training -------------------------------------------------

    def before_training(self) -> None:
        if not self._pretrained:
            self.agent.observe(self.demos.obs[:len(self.demos)])
            if self.cfg.bc_steps:
                self.behaviour_cloning(self.cfg.bc_steps)
            if self.cfg.critic_warmup:
                self.offline_pretraining(self.cfg.critic_warmup, actor=False)
            if self.cfg.method == "wsrl" and self.cfg.offline_steps:
                self.offline_pretraining(self.cfg.offline_steps)
            self._pretrained = True

    def behaviour_cloning(self, steps: int) -> float:
        """Fit the actor's mean action to the demonstrated actions (MSE); returns the last
        loss."""
        agent, bs = self.agent, self.cfg.sac.batch_size
        loss = torch.zeros(())
        for _ in range(steps):
            b = self.demos.sample(bs, agent.gen)
            loss = ((agent.gaussian_actor.mean_action(agent.normalize(b.obs)) - b.action) ** 2
                    ).mean()
            agent.actor_opt.zero_grad()
            loss.backward()
            agent.actor_opt.step()
        mse = float(loss.detach())
        self.console.print(f"behaviour cloning: {steps} steps, action MSE {mse:.4f}")
        return mse

    def offline_pretraining(self, steps: int, actor: bool = True) -> None:
        """SAC updates on the demos: of every network (WSRL's offline phase), or of the
        critics alone (``actor=False``: the critic warm-up)."""
        metrics: dict[str, float] = {}
        for _ in range(steps):
            metrics = self.agent.update(self.demos.sample(self.cfg.sac.batch_size,
                                                          self.agent.gen), actor=actor)
        what = "offline pre-training" if actor else "critic warm-up"
        self.console.print(f"{what}: {steps} steps on the demonstrations, "
                           f"critic loss {metrics.get('losses/critic', float('nan')):.3f}")

    # -- hooks of the runner ---------------------------------------------------------------

    def warmup_action(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None,
                                                        torch.Tensor | None]:
        if self.cfg.method == "wsrl":  # the pre-trained policy collects, frozen
            act = self.agent.act(obs)
            return act.action, act.hold, act.rejected
        return super().warmup_action(obs)

    def warmup_is_uniform(self) -> bool:
        return self.cfg.method != "wsrl"

    def ready_to_learn(self) -> bool:
        if self.cfg.method == "rlpd":  # the demos fill the batch until online data arrives
            return self.env_steps >= self.cfg.sac.learning_starts
        return super().ready_to_learn()

    def sample_batch(self) -> Batch:
        if self.cfg.method == "wsrl":
            return super().sample_batch()  # online data only
        return mixed_batch(self.demos, self.buffer, self.cfg.sac.batch_size,
                           self.cfg.demo_ratio, self.agent.gen)


def mixed_batch(demos: ReplayBuffer, online: ReplayBuffer, size: int, demo_ratio: float,
                gen: torch.Generator) -> Batch:
    """``round(size * demo_ratio)`` transitions from ``demos`` and the rest from ``online``
    (all from ``demos`` while ``online`` is empty), concatenated."""
    n_demo = size if len(online) == 0 else round(size * demo_ratio)
    parts = []
    if n_demo:
        parts.append(demos.sample(n_demo, gen))
    if size - n_demo:
        parts.append(online.sample(size - n_demo, gen))
    return concat_batches(parts)


def concat_batches(parts: list[Batch]) -> Batch:
    """The batches of ``parts`` as one, in order."""
    def cat(name: str) -> torch.Tensor:
        return torch.cat([getattr(p, name) for p in parts])

    return Batch(cat("obs"), cat("action"), cat("reward"), cat("cost"), cat("next_obs"),
                 cat("terminated"),
                 extra={k: torch.cat([p.extra[k] for p in parts]) for k in parts[0].extra})
