"""The robot actor on Ray, and the learner's view of it: the fleet of ``robot-rl
finetune-robot`` (``cluster.driver.Fleet``).

    training = RayTraining(cfg, RobotFinetuneRunner, ROBOT).start()   # cfg: RobotFinetuneConfig
    training.run()
    ROBOT.summary(training.runners)            # the robot's loop timing, swaps, episodes

The robot actor (``actor.RobotActor``) is one threaded Ray actor; the learner drives it
through a ``RobotPool`` (a pool of size 1 whose rollouts are the robot's committed episodes)
and learns with ``RobotFinetuneRunner``'s hooks (episodes it already has are skipped, the
person's interventions kept).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ray
from ray.exceptions import RayActorError

from robot_rl.cluster.rollout import Rollout
from robot_rl.finetune.robot.configs import RobotFinetuneConfig
from robot_rl.finetune.robot.learner import RobotFinetuneRunner, resolve_init


def start_robot_actor(cfg: Any) -> Any:
    """The robot actor of a ``RobotFinetuneConfig``: a threaded actor (the control loop on
    one thread, the learner's calls on others), on the node with the ``robot_resource``
    custom resource where one is named (``ray start --resources='{"robot": 1}'`` on the
    robot's machine), restarted by Ray if it dies (the dataset is appended to)."""
    from robot_rl.finetune.robot.actor import RobotActor

    opts = cfg.dist
    cpus = opts.actor_cpus(robot=True)
    resources = {opts.robot_resource: 1.0} if opts.robot_resource else None
    actor = ray.remote(RobotActor).options(num_cpus=cpus, max_concurrency=4, max_restarts=-1,
                                           max_task_retries=0, resources=resources)
    return actor.remote(cfg, cfg.robot)


class RobotPool:
    """The learner's view of the robot actor (``cluster.collector.RunnerPool`` of size 1): each
    ``next`` is the robot's next committed episode; new weights ride along with the request
    (Ray resolves them on the robot's node) only when the robot lacks them."""

    size = 1

    def __init__(self, handle: Any, wait: float = 5.0, log: Any = print):
        self.handle, self.wait, self._log = handle, wait, log
        self._state: ray.ObjectRef | None = None
        self._version, self._sent, self._sending = -1, -1, -1
        self._ref: ray.ObjectRef | None = None
        self.failures = 0

    def publish(self, state: dict, version: int) -> None:
        self._state, self._version = ray.put(state), version

    def submit(self, index: int, steps: int, uniform: bool) -> None:
        send = self._state if self._version > self._sent else None
        self._sending = self._version if send is not None else self._sent
        self._ref = self.handle.next_episode.remote(self._version, send, self.wait)

    def next(self) -> Rollout:
        while True:
            assert self._ref is not None, "no episode was asked for"
            try:
                ro = ray.get(self._ref)
            except RayActorError as e:
                self.failures += 1
                self._log(f"the robot actor died ({type(e).__name__}); Ray restarts it "
                          f"({self.failures} deaths so far)")
                self._sent = -1  # a restarted actor has no weights
                self.submit(0, 0, False)
                continue
            self._sent = self._sending
            if ro is None:  # no episode committed within the wait: ask again
                self.submit(0, 0, False)
                continue
            return ro

    def cancel(self) -> None:
        self._ref = None

    def summary(self) -> dict:
        """The robot's loop timing, swaps and episodes."""
        return ray.get(self.handle.summary.remote())


class RobotFleet:
    """The robot actor as the learner's fleet (``cluster.driver.Fleet``)."""

    collects = "robot"

    def actors(self, cfg: RobotFinetuneConfig) -> int:
        return 1

    def actor_cpus(self, cfg: RobotFinetuneConfig) -> float:
        return cfg.dist.actor_cpus(robot=True)

    def describe(self, cfg: RobotFinetuneConfig) -> str:
        return "the robot actor"

    def prepare(self, cfg: RobotFinetuneConfig) -> RobotFinetuneConfig:
        return resolve_init(cfg)

    def start(self, cfg: RobotFinetuneConfig) -> list[Any]:
        return [start_robot_actor(cfg)]

    def pool(self, handles: list[Any], learner: RobotFinetuneRunner, log: Any
             ) -> tuple[RobotPool, RobotFinetuneRunner]:
        return RobotPool(handles[0], log=log), learner

    def close(self, handles: list[Any], log: Any) -> None:
        """The robot's loop holds the arm and closes its dataset."""
        try:
            ray.get(handles[0].close.remote(), timeout=20.0)
        except Exception as e:  # noqa: BLE001 - a dead actor has nothing to close
            log(f"the robot actor did not close cleanly: {e}")

    def summary(self, handles: list[Any]) -> dict[str, Any]:
        """The robot actor's loop timing, swaps, episodes and interventions."""
        summary: dict[str, Any] = ray.get(handles[0].summary.remote(), timeout=20.0)
        return summary

    def dataset(self, cfg: RobotFinetuneConfig) -> Path:
        """The robot's dataset (under the run directory once ``prepare``d)."""
        return Path(cfg.robot.dataset)


ROBOT = RobotFleet()
