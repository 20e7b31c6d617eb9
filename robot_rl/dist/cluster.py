"""Start or join Ray, place the learner and the env-runners, run the training.

    history, run_dir = train_on_ray(cfg)     # cfg.ray: auto, local or a cluster address

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
import time
from pathlib import Path
from typing import Any

import ray
from rich.console import Console

from robot_rl.checkpoint import CHECKPOINT, load_checkpoint
from robot_rl.dist.learner import make_learner
from robot_rl.dist.ray_pool import RayPool, start_env_runners
from robot_rl.runner import TrainConfig


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
    """The Ray actor of the learner. Its config names a fixed run directory; when that holds
    a checkpoint (a restart after the learner died, or a resumed run) it resumes from it."""

    def __init__(self, cfg: TrainConfig):
        run_dir = Path(cfg.runs_dir) / str(cfg.run_name)
        if cfg.resume is None and (run_dir / CHECKPOINT).is_file():
            cfg = dataclasses.replace(cfg, resume=run_dir)
        # no progress bar in an actor: its output goes to the driver's log line by line
        self.learner = make_learner(dataclasses.replace(cfg, progress=False),
                                    Console(force_terminal=False, width=120))

    def train(self, handles: list[Any]) -> list[dict[str, float]]:
        from robot_rl.runner import Runner

        assert isinstance(self.learner, Runner)
        pool = RayPool(handles, self.learner.cfg.dist.max_runner_failures,
                       log=self.learner.console.print)
        try:
            return self.learner.train_distributed(pool)
        finally:
            pool.cancel()

    def where(self) -> tuple[str, int]:
        """(Ray node id, process id) of the learner."""
        return ray.get_runtime_context().get_node_id(), os.getpid()


def run_name(cfg: TrainConfig) -> str:
    """The run directory's name: the config's, else {task}__{algo}-ray__{seed}__{time}."""
    return cfg.run_name or f"{cfg.task}__{cfg.algo}-ray__{cfg.seed}__" \
                           f"{time.strftime('%Y%m%d-%H%M%S')}"


def start_learner(cfg: TrainConfig) -> Any:
    """The learner actor of ``cfg`` (its run_name resolved), restarted by Ray when it dies."""
    opts = cfg.dist
    gpus = opts.learner_gpus if opts.learner_gpus is not None else \
        float(str(cfg.device).startswith("cuda"))
    actor = ray.remote(LearnerActor).options(
        num_cpus=opts.learner_cpus, num_gpus=gpus, max_restarts=opts.learner_restarts,
        max_task_retries=opts.learner_restarts)
    return actor.remote(cfg)


class RayTraining:
    """A training run on Ray: ``start`` places the actors, ``run`` waits for the learner.

        training = RayTraining(cfg).start()
        history = training.run()          # training.runners / training.learner: the actors
    """

    def __init__(self, cfg: TrainConfig, console: Console | None = None):
        self.console = console or Console()
        assert cfg.ray is not None
        cfg.validate()
        if cfg.resume is not None:  # the learner resumes from the named run directory
            saved = type(cfg).from_saved(load_checkpoint(cfg.resume)["config"])
            cfg = dataclasses.replace(
                saved, total_steps=cfg.total_steps, time_budget=cfg.time_budget,
                target_success=cfg.target_success, ray=cfg.ray, env_runners=cfg.env_runners,
                dist=cfg.dist, runs_dir=Path(cfg.resume).parent,
                run_name=Path(cfg.resume).name, resume=None)
        self.cfg = dataclasses.replace(cfg, run_name=run_name(cfg))
        self.run_dir = Path(self.cfg.runs_dir) / str(self.cfg.run_name)
        self.runners: list[Any] = []
        self.learner: Any = None

    def start(self) -> RayTraining:
        cfg = self.cfg
        runner_cpus = cfg.dist.runner_cpus if cfg.dist.runner_cpus is not None else \
            float(cfg.dist.runner_threads)
        need = int(cfg.env_runners * runner_cpus + cfg.dist.learner_cpus + 0.999)
        cores = os.cpu_count() or 1
        assert cfg.ray is not None
        init_ray(cfg.ray, num_cpus=max(cores, need))
        resources = ray.cluster_resources()
        if need > resources.get("CPU", 0):
            self.console.print(f"note: {cfg.env_runners} env-runners and the learner reserve "
                               f"{need} CPUs, the cluster has {resources.get('CPU', 0):g}: "
                               f"some wait for room (see --dist.runner-cpus)")
        self.console.print(f"ray: {resources.get('CPU', 0):g} CPUs, "
                           f"{resources.get('GPU', 0):g} GPUs on {len(ray.nodes())} node(s); "
                           f"starting {cfg.env_runners} env-runners and the learner (run dir "
                           f"{self.run_dir})")
        self.runners = start_env_runners(cfg)
        self.learner = start_learner(cfg)
        return self

    def run(self) -> list[dict[str, float]]:
        """Wait for the learner to finish; returns the evaluation history."""
        history: list[dict[str, float]] = ray.get(self.learner.train.remote(self.runners))
        return history

    def stop(self) -> None:
        """Stop the learner and the env-runners."""
        for h in [self.learner, *self.runners]:
            if h is not None:
                ray.kill(h)


def train_on_ray(cfg: TrainConfig, console: Console | None = None
                 ) -> tuple[list[dict[str, float]], Path]:
    """Train ``cfg`` with a learner actor and ``cfg.env_runners`` env-runner actors (see the
    module docstring); returns the evaluation history and the run directory."""
    training = RayTraining(cfg, console)
    try:
        history = training.start().run()
    finally:
        training.stop()
    return history, training.run_dir
