"""Env-runners as Ray actors, and the pool through which the learner drives them.

    handles = start_env_runners(cfg)             # cfg.env_runners actors, restarted if they die
    pool = RayPool(handles, cfg.dist.max_runner_failures)
    pool.publish(acting_state(agent), version=3)  # ray.put: one copy in the object store
    pool.submit(0, steps=16, uniform=False)       # runner 0 pulls version 3 if it lacks it
    rollout = pool.next()                         # whichever runner finishes first

Weights are passed as an object reference wrapped in a list, so Ray does not fetch them for
every call: a runner fetches them (``ray.get``) only when the version differs from its own.
A runner that dies (its process killed, its node lost) is restarted by Ray
(``max_restarts=-1``) with a fresh env; its lost rollout is asked again, and the run stops
only after ``max_failures`` deaths together. The restarted runner starts new episodes; the
transitions of the rollout it was collecting never reached the learner and are not counted.
"""

from __future__ import annotations

from typing import Any

import ray
import torch
from ray.exceptions import RayActorError

from robot_rl.cluster.env_runner import EnvRunner
from robot_rl.cluster.placement import where
from robot_rl.cluster.rollout import Rollout
from robot_rl.train_config import TrainConfig


class EnvRunnerActor:
    """The Ray actor around an ``EnvRunner``."""

    def __init__(self, cfg: TrainConfig, index: int, threads: int):
        self.runner = EnvRunner(cfg, index, threads)

    def collect(self, steps: int, uniform: bool, version: int,
                weights: list[ray.ObjectRef]) -> Rollout:
        if version != self.runner.version and not uniform:
            state: dict[str, torch.Tensor] = ray.get(weights[0])
            self.runner.set_weights(state, version)
        return self.runner.collect(steps, uniform)

    def where(self) -> tuple[str, int]:
        """(Ray node id, process id) of this runner."""
        return where()


def start_env_runners(cfg: TrainConfig) -> list[Any]:
    """``cfg.env_runners`` env-runner actors, each reserving ``runner_cpus`` CPUs."""
    opts = cfg.dist
    cpus = opts.actor_cpus()
    # SPREAD: runners go to different nodes where there are several (their cores add up)
    actor = ray.remote(EnvRunnerActor).options(num_cpus=cpus, max_restarts=-1,
                                               max_task_retries=0, scheduling_strategy="SPREAD")
    return [actor.remote(cfg, i, opts.runner_threads) for i in range(cfg.env_runners)]


class RayPool:
    """The learner's view of the env-runner actors (``collector.RunnerPool``)."""

    def __init__(self, handles: list[Any], max_failures: int = 10, log: Any = print):
        self.handles, self.size = handles, len(handles)
        self.max_failures, self.failures = max_failures, 0
        self._log = log
        self._pending: dict[ray.ObjectRef, tuple[int, int, bool]] = {}
        self._weights: list[ray.ObjectRef] = []
        self._version = -1

    def publish(self, state: dict, version: int) -> None:
        self._weights = [ray.put(state)]
        self._version = version

    def submit(self, index: int, steps: int, uniform: bool) -> None:
        ref = self.handles[index].collect.remote(steps, uniform, self._version, self._weights)
        self._pending[ref] = (index, steps, uniform)

    def next(self) -> Rollout:
        while True:
            if not self._pending:
                raise RuntimeError("no rollout was asked for")
            [ref], _ = ray.wait(list(self._pending), num_returns=1)
            index, steps, uniform = self._pending.pop(ref)
            try:
                return ray.get(ref)
            except RayActorError as e:
                self.failures += 1
                if self.failures > self.max_failures:
                    raise RuntimeError(f"env-runners died {self.failures} times; the last: "
                                       f"{e}") from None
                self._log(f"env-runner {index} died ({type(e).__name__}); Ray restarts it "
                          f"and its rollout is asked again ({self.failures} deaths so far)")
                self.submit(index, steps, uniform)

    def cancel(self) -> None:
        """Forget the rollouts still being collected (at the end of a run): the runners
        finish them and Ray frees them."""
        self._pending.clear()


class EnvRunners:
    """The fleet of ``robot-rl train --ray`` and ``finetune --ray`` (``driver.Fleet``):
    ``cfg.env_runners`` env-runner actors, driven through a ``RayPool``."""

    collects = "env"

    def actors(self, cfg: TrainConfig) -> int:
        return cfg.env_runners

    def actor_cpus(self, cfg: TrainConfig) -> float:
        return cfg.dist.actor_cpus()

    def describe(self, cfg: TrainConfig) -> str:
        return f"{cfg.env_runners} env-runners"

    def prepare(self, cfg: TrainConfig) -> TrainConfig:
        return cfg

    def start(self, cfg: TrainConfig) -> list[Any]:
        return start_env_runners(cfg)

    def pool(self, handles: list[Any], learner: Any, log: Any) -> tuple[RayPool, None]:
        return RayPool(handles, learner.cfg.dist.max_runner_failures, log=log), None

    def close(self, handles: list[Any], log: Any) -> None:
        pass


ENV_RUNNERS = EnvRunners()
