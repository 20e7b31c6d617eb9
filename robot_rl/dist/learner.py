"""The learner: the SAC runner (or the fine-tuning runner) fed by env-runners.

    learner = make_learner(cfg)                  # a DistRunner or DistFinetuneRunner
    history = learner.train_distributed(pool)    # pool: the env-runners (ray_pool.RayPool)

The loop, per rollout received from whichever env-runner finished first:

    store the rollout's transitions; count its env steps and episodes
    gradient updates owed: rollout transitions x updates_per_step / num_envs  (the UTD ratio
        of the single-process runner; fractions carry over to the next rollout)
    publish the acting weights (when they changed) and hand that runner its next collection
    log, evaluate, stop rules, checkpoint: as the single-process runner (TrainSession)

While the learner updates, the other runners keep stepping, so collection and learning
overlap; a runner that finishes waits for the learner, which keeps the update-to-data ratio
of the config (the learner bounds throughput once updates take longer than collection).
Before ``learning_starts`` the runners act uniformly at random (WSRL: with the pre-trained
policy). Weights travel as ``acting_state``: the runners' copies gate as the learner would.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Protocol

import torch
from rich.console import Console

from robot_rl.algos import SAC
from robot_rl.dist.rollout import Rollout
from robot_rl.dist.weights import acting_state
from robot_rl.finetune import FinetuneConfig, FinetuneRunner
from robot_rl.finetune.demos import add_transitions
from robot_rl.runner import Runner, TrainConfig
from robot_rl.train_session import TrainSession
from robot_rl.run_control import torch_threads


class RunnerPool(Protocol):
    """The env-runners as the learner drives them."""

    size: int

    def publish(self, state: dict, version: int) -> None:
        """Make ``state`` (version ``version``) the weights of the next collections."""

    def submit(self, index: int, steps: int, uniform: bool) -> None:
        """Ask runner ``index`` for a rollout of ``steps`` vector steps."""

    def next(self) -> Rollout:
        """The first rollout to arrive (blocking)."""


class DistributedTraining:
    """The learner's loop over rollouts (see the module docstring); mixed into a ``Runner``."""

    n_step_ok = False  # rollouts arrive as one-step transitions
    cfg: TrainConfig
    agent: SAC
    console: Console
    env_steps: int
    history: list[dict[str, float]]

    def train_distributed(self, pool: RunnerPool) -> list[dict[str, float]]:
        """Train on the rollouts of ``pool``'s env-runners until total_steps, the time budget
        or the target success; returns the evaluation history (also in eval.csv)."""
        assert isinstance(self, Runner)
        cfg = self.cfg
        self.before_training()
        utd = cfg.sac.updates_per_step / cfg.num_envs
        owed, version = 0.0, 0
        stats = LoopStats(env_runners=pool.size)
        pool.publish(acting_state(self.agent), version)
        with torch_threads(cfg.threads), \
                TrainSession(self) as session:
            self.console.print(f"run dir: {self.run_dir}\nlearner on {cfg.device}; "
                               f"{pool.size} env-runners x {cfg.num_envs} envs of "
                               f"{cfg.task}, rollouts of {cfg.dist.collect_steps} steps; "
                               f"safety: {cfg.safety}; update-to-data ratio {utd:g}")
            for i in range(pool.size):
                pool.submit(i, cfg.dist.collect_steps, self._uniform())
            while self.env_steps < cfg.total_steps:
                session.check_interrupt()
                t0 = time.perf_counter()
                ro = pool.next()
                waited = time.perf_counter() - t0
                if not self.accepts(ro):
                    pool.submit(ro.runner, cfg.dist.collect_steps, self._uniform())
                    continue
                self.store_rollout(ro)
                self.env_steps += ro.env_steps
                session.add_steps(ro.steps, ro.sums, ro.rejected, float(ro.cost.sum()))
                session.add_episodes(ro.episode_return, ro.episode_cost, ro.episode_success)
                t1 = time.perf_counter()
                n_updates = 0
                if self.ready_to_learn():
                    owed += ro.steps * utd
                    while owed >= 1.0:
                        session.add_losses(self.learn())
                        owed -= 1.0
                        n_updates += 1
                if n_updates:
                    version += 1
                    pool.publish(acting_state(self.agent), version)
                pool.submit(ro.runner, cfg.dist.collect_steps, self._uniform())
                learn_s = time.perf_counter() - t1
                session.add_losses({
                    "dist/wait_seconds": waited, "dist/learn_seconds": learn_s,
                    "dist/collect_seconds": ro.seconds,
                    "dist/weight_lag": float(version - ro.version) if ro.version >= 0 else 0.0,
                    "dist/updates_per_second": n_updates / max(learn_s, 1e-9)})
                stats.add(ro, waited, learn_s, n_updates)
                if session.tick():
                    break
        stats.write(self.run_dir / DIST_STATS, self.console)
        return self.history

    def accepts(self, ro: Rollout) -> bool:
        """Whether to learn from ``ro`` (a restarted robot learner skips what it has)."""
        return True

    def store_rollout(self, ro: Rollout) -> None:
        """Add a rollout's transitions to the replay buffer and fold its observations into
        the normalizer."""
        assert isinstance(self, Runner)
        if len(ro):
            self.store_transitions(ro.tensors(self.cfg.device))

    def store_transitions(self, tr: dict[str, torch.Tensor]) -> None:
        """Add transitions (``finetune.demos`` keys: obs, action, reward, cost, next_obs,
        terminated) to the replay buffer and their observations to the normalizer."""
        assert isinstance(self, Runner)
        add_transitions(self.buffer, tr)
        self.agent.observe(tr["obs"])

    def _uniform(self) -> bool:
        assert isinstance(self, Runner)
        return self.env_steps < self.cfg.sac.learning_starts and self.warmup_is_uniform()


DIST_STATS = "dist_stats.json"
"""The learner's totals of its last session (``LoopStats``), in the run directory."""


@dataclasses.dataclass
class LoopStats:
    """What the learner's loop did in one session (since it started or was restarted)."""

    env_runners: int
    rollouts: int = 0
    env_steps: int = 0
    updates: int = 0
    wait_seconds: float = 0.0
    """Blocked on the env-runners (collection slower than learning)."""
    learn_seconds: float = 0.0
    """Storing rollouts, updating, publishing weights."""
    collect_seconds: float = 0.0
    """Summed over the runners' rollouts."""
    _t0: float = dataclasses.field(default_factory=time.perf_counter, repr=False)

    def add(self, ro: Rollout, waited: float, learn_s: float, n_updates: int) -> None:
        self.rollouts += 1
        self.env_steps += ro.env_steps
        self.updates += n_updates
        self.wait_seconds += waited
        self.learn_seconds += learn_s
        self.collect_seconds += ro.seconds

    def summary(self) -> dict[str, float]:
        wall = time.perf_counter() - self._t0
        return {"env_runners": self.env_runners, "rollouts": self.rollouts,
                "env_steps": self.env_steps, "updates": self.updates, "seconds": wall,
                "env_steps_per_second": self.env_steps / max(wall, 1e-9),
                "updates_per_second": self.updates / max(wall, 1e-9),
                "updates_per_learning_second": self.updates / max(self.learn_seconds, 1e-9),
                "wait_seconds": self.wait_seconds, "learn_seconds": self.learn_seconds,
                "runner_env_steps_per_second": self.env_steps / max(self.collect_seconds,
                                                                    1e-9)}

    def write(self, path: Path, console: Console) -> None:
        s = self.summary()
        path.write_text(json.dumps(s, indent=2) + "\n")
        console.print(f"learner: {s['env_steps']:,} env steps from {self.env_runners} "
                      f"env-runners in {s['seconds']:.0f} s ({s['env_steps_per_second']:,.0f}"
                      f"/s; each runner {s['runner_env_steps_per_second']:,.0f}/s while "
                      f"collecting), {s['updates']:,} updates ({s['updates_per_second']:.0f}/s);"
                      f" waited for rollouts {s['wait_seconds']:.0f} s, learned "
                      f"{s['learn_seconds']:.0f} s", highlight=False)


class DistRunner(DistributedTraining, Runner):
    """The SAC runner learning from env-runners' rollouts."""


class DistFinetuneRunner(DistributedTraining, FinetuneRunner):  # type: ignore[misc]
    """The fine-tuning runner (RLPD / WSRL with demonstrations) learning from rollouts."""


def make_learner(cfg: TrainConfig, console: Console | None = None) -> DistributedTraining:
    """The learner of ``cfg``: fine-tuning for a FinetuneConfig, else SAC."""
    if isinstance(cfg, FinetuneConfig):
        return DistFinetuneRunner(cfg, console)
    if type(cfg) is not TrainConfig:
        raise TypeError(f"training on Ray takes robot-rl train and finetune configs, not "
                        f"{type(cfg).__name__}")
    return DistRunner(dataclasses.replace(cfg), console)
