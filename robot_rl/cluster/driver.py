"""Start or join Ray, place the learner and its actors, run the training.

    history, run_dir = train_on_ray(cfg)     # cfg.ray: auto, local or a cluster address
    training = RayTraining(cfg, FinetuneRunner, ENV_RUNNERS).start()   # the same, in steps

Who collects is a ``Fleet``: the env-runners of ``train --ray`` and ``finetune --ray``
(``ray_pool.ENV_RUNNERS``) or the robot actor of ``finetune-robot``
(``finetune.robot.pool.ROBOT``); the learner is the runner class the caller names. Nothing
here knows either kind of actor or learner.

The driver (this process: ``robot-rl train --ray ...``) starts the env-runner actors and the
learner actor, then waits for the learner. The runners belong to the driver, so they outlive
a learner that dies: Ray restarts the learner (``learner_restarts`` times), the restarted one
resumes from the run's last checkpoint (networks, optimizers, replay buffer, counters) and
takes up the same runners. What the dead learner received after its last checkpoint is lost
(at most ``checkpoint_every`` seconds of collection); checkpoints are written atomically, so
a kill never leaves a torn one.

The learner writes the run directory (checkpoints, TensorBoard, eval.csv) on its own node; on
a cluster, pin it to the node with the run directory (or a shared file system), e.g. a GPU
machine, with ``--dist.learner-gpus 1`` and ``--device cuda``.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any, Protocol

import ray
from rich.console import Console

from robot_rl.checkpoint import CHECKPOINT, default_run_name, load_checkpoint
from robot_rl.cluster.collector import (
    PoolCollector,
    RolloutHooks,
    RunnerPool,
    check_learner,
    make_learner,
)
from robot_rl.cluster.placement import where
from robot_rl.cluster.ray_pool import ENV_RUNNERS
from robot_rl.runner import Runner
from robot_rl.train_config import TrainConfig


class Fleet(Protocol):
    """Who collects for the learner: env-runner actors (``ray_pool.ENV_RUNNERS``) or the
    robot actor (``finetune.robot.pool.ROBOT``)."""

    collects: str
    """What its actors give: ``env`` or ``robot`` (a runner's ``collects`` must match)."""

    def actors(self, cfg: Any) -> int:
        """How many actors."""
        ...

    def actor_cpus(self, cfg: Any) -> float:
        """The CPUs each actor reserves."""
        ...

    def describe(self, cfg: Any) -> str:
        """The actors in words (``4 env-runners``)."""
        ...

    def prepare(self, cfg: Any) -> Any:
        """``cfg`` completed before the actors start (its run name is resolved)."""
        ...

    def start(self, cfg: Any) -> list[Any]:
        """The actors' Ray handles."""
        ...

    def pool(self, handles: list[Any], learner: Any, log: Any
             ) -> tuple[RunnerPool, RolloutHooks | None]:
        """The learner's ``RunnerPool`` over ``handles`` and its ``RolloutHooks`` (or None)."""
        ...

    def close(self, handles: list[Any], log: Any) -> None:
        """Before the actors are killed at the end of a run."""
        ...


def init_ray(address: str, num_cpus: int | None = None) -> None:
    """Connect to Ray: ``auto`` joins the running cluster or starts one here, ``local``
    always starts one here, anything else is a cluster address. A Ray started here declares
    ``num_cpus`` logical CPUs (default: this machine's). Nothing if Ray is initialized."""
    if ray.is_initialized():
        return
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": True,
                              "configure_logging": False}
    if address == "auto":
        try:
            ray.init(address="auto", **kwargs)
        except ConnectionError:  # no cluster running
            ray.init(address="local", num_cpus=num_cpus, **kwargs)
    elif address == "local":
        ray.init(address="local", num_cpus=num_cpus, **kwargs)
    else:
        ray.init(address=address, **kwargs)


class LearnerActor:
    """The Ray actor of the learner: a ``runner`` (``Runner`` or a subclass) fed by the actors
    of ``fleet``. Its config names a fixed run directory; when that holds a checkpoint (a
    restart after the learner died, or a resumed run) it resumes from it."""

    def __init__(self, cfg: TrainConfig, runner: type[Runner], fleet: Fleet):
        run_dir = Path(cfg.runs_dir) / str(cfg.run_name)
        if cfg.resume is None and (run_dir / CHECKPOINT).is_file():
            cfg = dataclasses.replace(cfg, resume=run_dir)
        # no progress bar in an actor: its output goes to the driver's log line by line
        cfg = dataclasses.replace(cfg, progress=False)
        console = Console(force_terminal=False, width=120)
        self.learner = make_learner(cfg, console, runner)
        self.fleet = fleet

    def train(self, handles: list[Any]) -> list[dict[str, float]]:
        """Train with the actors of ``handles`` (env-runners, or the one robot actor)."""
        learner = self.learner
        pool, hooks = self.fleet.pool(handles, learner, learner.console.print)
        try:
            return learner.train(PoolCollector(learner, pool, hooks=hooks))
        finally:
            pool.cancel()

    def where(self) -> tuple[str, int]:
        """(Ray node id, process id) of the learner."""
        return where()


def run_name(cfg: TrainConfig) -> str:
    """The run directory's name: the config's, else {task}__{algo}-ray__{seed}__{time}."""
    return cfg.run_name or default_run_name(cfg.task, f"{cfg.algo}-ray", cfg.seed)


def start_learner(cfg: TrainConfig, runner: type[Runner], fleet: Fleet) -> Any:
    """The learner actor of ``cfg`` (its run_name resolved), restarted by Ray when it dies."""
    opts = cfg.dist
    gpus = opts.learner_gpus if opts.learner_gpus is not None else \
        float(str(cfg.device).startswith("cuda"))
    actor = ray.remote(LearnerActor).options(
        num_cpus=opts.learner_cpus, num_gpus=gpus, max_restarts=opts.learner_restarts,
        max_task_retries=opts.learner_restarts)
    return actor.remote(cfg, runner, fleet)


class RayTraining:
    """A training run on Ray: ``start`` places the actors, ``run`` waits for the learner.

        training = RayTraining(cfg).start()       # runner: Runner, fleet: the env-runners
        history = training.run()          # training.runners / training.learner: the actors
    """

    def __init__(self, cfg: TrainConfig, runner: type[Runner] = Runner,
                 fleet: Fleet = ENV_RUNNERS, console: Console | None = None):
        self.console = console or Console()
        self.runner, self.fleet = runner, fleet
        assert cfg.ray is not None
        check_learner(cfg, runner)
        if runner.collects != fleet.collects:
            raise TypeError(f"{runner.__name__} learns from the {runner.collects}, "
                            f"{type(fleet).__name__} collects from the {fleet.collects}")
        cfg.validate()
        if cfg.resume is not None:  # the learner resumes from the named run directory
            saved = type(cfg).from_saved(load_checkpoint(cfg.resume)["config"])
            cfg = dataclasses.replace(
                saved, total_steps=cfg.total_steps, time_budget=cfg.time_budget,
                target_success=cfg.target_success, target_evals=cfg.target_evals,
                threads=cfg.threads, ray=cfg.ray,
                env_runners=cfg.env_runners, dist=cfg.dist, runs_dir=Path(cfg.resume).parent,
                run_name=Path(cfg.resume).name, resume=None)
        self.cfg = fleet.prepare(dataclasses.replace(cfg, run_name=run_name(cfg)))
        self.run_dir = Path(self.cfg.runs_dir) / str(self.cfg.run_name)
        self.runners: list[Any] = []
        self.learner: Any = None

    def start(self) -> RayTraining:
        cfg, fleet = self.cfg, self.fleet
        actors = fleet.actors(cfg)
        need = int(actors * fleet.actor_cpus(cfg) + cfg.dist.learner_cpus + 0.999)
        cores = os.cpu_count() or 1
        assert cfg.ray is not None
        init_ray(cfg.ray, num_cpus=max(cores, need))
        resources = ray.cluster_resources()
        if need > resources.get("CPU", 0):
            self.console.print(f"note: {actors} actors and the learner reserve "
                               f"{need} CPUs, the cluster has {resources.get('CPU', 0):g}: "
                               f"some wait for room (see --dist.runner-cpus)")
        self.console.print(f"ray: {resources.get('CPU', 0):g} CPUs, "
                           f"{resources.get('GPU', 0):g} GPUs on {len(ray.nodes())} node(s); "
                           f"starting {fleet.describe(cfg)} and the learner (run dir "
                           f"{self.run_dir})")
        self.runners = fleet.start(cfg)
        self.learner = start_learner(cfg, self.runner, fleet)
        return self

    def run(self) -> list[dict[str, float]]:
        """Wait for the learner to finish; returns the evaluation history."""
        history: list[dict[str, float]] = ray.get(self.learner.train.remote(self.runners))
        return history

    def stop(self) -> None:
        """Stop the learner, then the actors (the robot's loop holds the arm and closes its
        dataset before its actor goes: the learner, gone first, no longer asks it for
        episodes, so a closed robot is not taken for a dead one)."""
        if self.learner is not None:
            ray.kill(self.learner)
        if self.runners:
            self.fleet.close(self.runners, self.console.print)
        for h in self.runners:
            ray.kill(h)


def train_on_ray(cfg: TrainConfig, runner: type[Runner] = Runner,
                 console: Console | None = None) -> tuple[list[dict[str, float]], Path]:
    """Train ``cfg`` with a learner actor (a ``runner``) and ``cfg.env_runners`` env-runner
    actors (see the module docstring); returns the evaluation history and the run
    directory."""
    training = RayTraining(cfg, runner, ENV_RUNNERS, console)
    try:
        history = training.start().run()
    finally:
        training.stop()
    return history, training.run_dir
