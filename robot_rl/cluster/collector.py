"""The learner: the SAC runner (or a subclass: the fine-tuning runner) fed by env-runners.

    learner = make_learner(cfg, runner=FinetuneRunner)   # default: Runner
    history = learner.train(PoolCollector(learner, pool))   # pool: ray_pool.RayPool

The runner's one loop (``robot_rl.collect``), with rollouts for rounds: per rollout received
from whichever env-runner finished first:

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

from robot_rl.cluster.rollout import Rollout
from robot_rl.cluster.weights import acting_state
from robot_rl.collect import Collected
from robot_rl.errors import ConfigError
from robot_rl.runner import Runner
from robot_rl.train_config import TrainConfig
from robot_rl.train_session import Episodes, TrainSession


class RunnerPool(Protocol):
    """The env-runners as the learner drives them."""

    size: int

    def publish(self, state: dict, version: int) -> None:
        """Make ``state`` (version ``version``) the weights of the next collections."""

    def submit(self, index: int, steps: int, uniform: bool) -> None:
        """Ask runner ``index`` for a rollout of ``steps`` vector steps."""

    def next(self) -> Rollout:
        """The first rollout to arrive (blocking)."""

    def cancel(self) -> None:
        """Forget the rollouts still being collected (at the end of a run)."""


class RolloutHooks(Protocol):
    """What a learner of rollouts may add to the pool's defaults (the robot learner: skip
    episodes it already has, keep the person's interventions)."""

    def accepts(self, ro: Rollout) -> bool:
        """Whether to learn from ``ro``."""
        ...

    def stored(self, ro: Rollout, tr: dict[str, torch.Tensor]) -> None:
        """After ``ro``'s transitions ``tr`` went into the replay buffer ({} for an empty
        rollout, which still ends an episode)."""
        ...


def refuse_n_step(cfg: TrainConfig) -> None:
    """ConfigError for ``--sac.n-step`` > 1: rollouts arrive as one-step transitions."""
    if cfg.sac.n_step > 1:
        raise ConfigError(f"--sac.n-step {cfg.sac.n_step}: rollouts arrive as one-step "
                          f"transitions; leave it at 1 with --ray")


def store_transitions(runner: Runner, tr: dict[str, torch.Tensor]) -> None:
    """Add transitions (keys obs, action, reward, cost, next_obs, terminated) to the
    runner's replay buffer and their observations to its normalizer."""
    runner.buffer.add_transitions(tr)
    runner.agent.observe(tr["obs"])


class PoolCollector:
    """The rollouts of a pool of env-runners (or the robot actor) as a ``Runner``'s
    collector (see the module docstring)."""

    def __init__(self, runner: Runner, pool: RunnerPool, hooks: RolloutHooks | None = None):
        cfg = runner.cfg
        refuse_n_step(cfg)
        self.runner, self.pool, self.hooks = runner, pool, hooks
        self.utd = cfg.sac.updates_per_step / cfg.num_envs
        self.owed, self.version = 0.0, 0
        self.stats = LoopStats(env_runners=pool.size)
        self._waited = self._t1 = 0.0

    def begin(self, session: TrainSession) -> None:
        r, cfg, pool = self.runner, self.runner.cfg, self.pool
        pool.publish(acting_state(r.agent), self.version)
        r.console.print(f"run dir: {r.run_dir}\nlearner on {cfg.device}; {pool.size} "
                        f"env-runners x {cfg.num_envs} envs of {cfg.task}, rollouts of "
                        f"{cfg.dist.collect_steps} steps; safety: {cfg.safety}; update-to-data "
                        f"ratio {self.utd:g}")
        for i in range(pool.size):
            pool.submit(i, cfg.dist.collect_steps, self._uniform())

    def collect(self) -> Collected | None:
        t0 = time.perf_counter()
        ro = self.pool.next()
        self._waited = time.perf_counter() - t0
        if self.hooks is not None and not self.hooks.accepts(ro):
            self.pool.submit(ro.runner, self.runner.cfg.dist.collect_steps, self._uniform())
            return None
        tr = ro.tensors(self.runner.cfg.device) if len(ro) else {}
        if tr:
            store_transitions(self.runner, tr)
        if self.hooks is not None:  # also for an empty rollout: a robot episode is counted
            self.hooks.stored(ro, tr)
        return Collected(ro.steps, ro.env_steps, ro.sums, ro.rejected, float(ro.cost.sum()),
                         Episodes.of(ro.episode_return, ro.episode_cost, ro.episode_success),
                         source=ro)

    def updates(self, got: Collected, ready: bool) -> int:
        self._t1 = time.perf_counter()
        n = 0
        if ready:
            self.owed += got.transitions * self.utd
            while self.owed >= 1.0:
                self.owed -= 1.0
                n += 1
        return n

    def learned(self, got: Collected, updates: int, session: TrainSession) -> None:
        r, ro = self.runner, got.source
        if updates:
            self.version += 1
            self.pool.publish(acting_state(r.agent), self.version)
        self.pool.submit(ro.runner, r.cfg.dist.collect_steps, self._uniform())
        learn_s = time.perf_counter() - self._t1
        session.add_losses({
            "dist/wait_seconds": self._waited, "dist/learn_seconds": learn_s,
            "dist/collect_seconds": ro.seconds,
            "dist/weight_lag": float(self.version - ro.version) if ro.version >= 0 else 0.0,
            "dist/updates_per_second": updates / max(learn_s, 1e-9)})
        self.stats.add(ro, self._waited, learn_s, updates)

    def ticked(self, session: TrainSession) -> None:
        pass

    def end(self) -> None:
        self.stats.write(self.runner.run_dir / DIST_STATS, self.runner.console)

    def _uniform(self) -> bool:
        r = self.runner
        return r.env_steps < r.cfg.sac.learning_starts and r.warmup == "uniform"


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


def check_learner(cfg: TrainConfig, runner: type[Runner]) -> None:
    """TypeError unless ``runner`` trains ``cfg``'s type (its ``config_type``); ConfigError
    for what rollouts cannot give (``refuse_n_step``)."""
    if type(cfg) is not runner.config_type:
        raise TypeError(f"{runner.__name__} trains {runner.config_type.__name__}, not "
                        f"{type(cfg).__name__}")
    refuse_n_step(cfg)


def make_learner(cfg: TrainConfig, console: Console | None = None,
                 runner: type[Runner] = Runner) -> Runner:
    """The learner of ``cfg``: a ``runner`` (``Runner``, or a subclass such as
    ``FinetuneRunner``) whose ``train`` takes a ``PoolCollector``; refused
    (``check_learner``) before a run directory is made."""
    check_learner(cfg, runner)
    return runner(dataclasses.replace(cfg), console)
