"""Offline-to-online fine-tuning from demonstrations: RLPD and WSRL, with the safety critic.

    robot-rl finetune --demos data/push --task push --method rlpd
    robot-rl finetune --demos data/push --task push --method wsrl --offline-steps 20000

Both run the SAC agent of ``robot-rl train`` and its runner (evaluation, checkpoints,
TensorBoard, the safety critic as ``--safety`` sets it) and follow a reference recipe by
default; ``--method`` picks the recipe's SAC settings (``METHOD_SAC``), and every flag still
overrides them:

* **RLPD** (Ball et al. 2023; ``ikostrikov/rlpd``, its README's commands with
  ``configs/rlpd_config.py``): every gradient batch is half demonstrations and half online
  experience (128 + 128), 10 LayerNorm critics whose TD target takes the min over a random
  2, 20 critic steps per env step and one actor and temperature step per env step, initial
  temperature 1, tau 0.005, 5,000 uniform-random env steps before learning.
* **WSRL** (Zhou et al. 2024; ``zhouzypaul/wsrl``): ``offline_steps`` gradient steps of
  Cal-QL on the demonstrations alone (10 LayerNorm critics; ``calql.py``), then
  ``warmup_steps`` env steps collected by the pre-trained policy with no updates, then SAC
  on online data only (no CQL, the demonstrations never replayed), 4 critic steps and one
  actor step per env step, no entropy backup, actor and temperature learning rates 1e-4,
  target entropy -A.

Deviations from the references, each an option: the discount comes from the task's horizon
in seconds (push: 0.994 at 50 Hz; RLPD and WSRL use 0.99 per step); observations are
normalized with statistics frozen from the demonstrations (the references normalize
nothing; a fixed affine map of the inputs); WSRL's actor steps on a 256-batch (WSRL: the
1,024 of its 4 critic steps). The compute each recipe costs on a CPU, and the choices the
benchmark fits to 2 cores, are in docs/data.md.

``--bc-steps N`` first fits the actor's mean to the demonstrated actions (behaviour cloning),
for either method, and ``--critic-warmup M`` then trains the critics alone (the actor frozen)
for M gradient steps on the demonstrations (neither is in the references; both off by
default).

A dataset may also hold policy-driven episodes a person corrected (``robot-rl record
--policy``, or the ROS teleop node with an artifact): as in HIL-SERL, their intervention steps
join the demonstrations, and all their steps start the online buffer (``finetune/demos.py``).
"""

from __future__ import annotations

import dataclasses

import torch
from rich.console import Console

from robot_rl.algos.sac import Metrics
from robot_rl.data.reader import Dataset
from robot_rl.finetune.calql import CalQL
from robot_rl.finetune.configs import FinetuneConfig
from robot_rl.finetune.demos import add_transitions, demo_and_online
from robot_rl.replay import Batch, ReplayBuffer, sample_mixed
from robot_rl.runner import Runner
from robot_rl.sim.vec_env import VecEnv


class FinetuneRunner(Runner):
    """The training runner with demonstrations (see module docstring)."""

    cfg: FinetuneConfig
    n_step_ok = False  # its demonstration batches are one-step transitions
    config_type = FinetuneConfig

    def __init__(self, cfg: FinetuneConfig, console: Console | None = None,
                 env: VecEnv | None = None, eval_env: VecEnv | None = None):
        """``env`` / ``eval_env``: as for ``Runner`` (any ``VecEnv``; a BatchedEnv is checked
        against the dataset's task, robot and action space, another env by its widths)."""
        if cfg.method == "wsrl" and cfg.resume is None:
            # online updates begin after the warm-up of the pre-trained policy
            cfg = dataclasses.replace(cfg, sac=dataclasses.replace(
                cfg.sac, learning_starts=cfg.warmup_steps))
        dataset = Dataset(cfg.demos)  # a missing or corrupt dataset fails before the run dir
        if cfg.method == "wsrl":  # the pre-trained policy collects, frozen
            self.warmup = "policy"
        super().__init__(cfg, console, env=env, eval_env=eval_env)
        calibrated = cfg.method == "wsrl" and cfg.offline == "calql"
        self.demos, online = demo_and_online(dataset, self.env, self.cfg.device,
                                             self.cfg.max_episodes,
                                             self.agent.gamma if calibrated else None)
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
            if self.cfg.sac.freeze_normalizer:  # the demonstrations' statistics, fixed
                self.before_update()
            if self.cfg.bc_steps:
                self.behaviour_cloning(self.cfg.bc_steps)
            if self.cfg.critic_warmup:
                self.offline_pretraining(self.cfg.critic_warmup, actor=False)
            if self.cfg.method == "wsrl" and self.cfg.offline_steps:
                self.offline_pretraining(self.cfg.offline_steps, regularizer=self._offline_reg())
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

    def _offline_reg(self) -> CalQL | None:
        """WSRL's offline regularizer: Cal-QL, CQL (uncalibrated) or none (plain SAC)."""
        if self.cfg.offline == "sac":
            return None
        return CalQL(dataclasses.replace(self.cfg.calql,
                                         calibrated=self.cfg.offline == "calql"))

    def offline_pretraining(self, steps: int, actor: bool = True,
                            regularizer: CalQL | None = None) -> None:
        """Updates on the demos alone: of every network, the actor at every step (WSRL's
        offline phase; with Cal-QL's or CQL's ``regularizer``), or of the critics alone
        (``actor=False``: the critic warm-up)."""
        metrics: Metrics = {}
        for _ in range(steps):
            metrics = self.agent.update(self.demos.sample(self.cfg.sac.batch_size,
                                                          self.agent.gen), actor=actor,
                                        critic_regularizer=regularizer, actor_every=1)
        what = ("offline pre-training" + (f" ({self.cfg.offline})" if regularizer else "")
                if actor else "critic warm-up")
        extra = f", CQL gap {metrics['losses/cql']:.3f}" if "losses/cql" in metrics else ""
        self.console.print(f"{what}: {steps} steps on the demonstrations, "
                           f"critic loss {metrics.get('losses/critic', float('nan')):.3f}"
                           + extra)

    # -- hooks of the runner ---------------------------------------------------------------

    def ready_to_learn(self) -> bool:
        if self.cfg.method == "rlpd":  # the demos fill the batch until online data arrives
            return self.env_steps >= self.cfg.sac.learning_starts
        return super().ready_to_learn()

    def replay_shares(self) -> list[tuple[ReplayBuffer, float]]:
        """RLPD: ``demo_ratio`` of every batch from the demonstrations (all of it until
        online data arrives); WSRL: online data only."""
        return [] if self.cfg.method == "wsrl" else [(self.demos, self.cfg.demo_ratio)]


def mixed_batch(demos: ReplayBuffer, online: ReplayBuffer, size: int, demo_ratio: float,
                gen: torch.Generator) -> Batch:
    """``round(size * demo_ratio)`` transitions from ``demos`` and the rest from ``online``
    (all from ``demos`` while ``online`` is empty), concatenated (``sample_mixed``)."""
    return sample_mixed(online, [(demos, demo_ratio)], size, gen)
