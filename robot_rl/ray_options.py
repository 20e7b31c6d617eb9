"""Options of training on Ray (``robot-rl train --ray auto --env-runners 4``): how many
env-runner actors collect, how big their batches are, and what each actor asks of the
cluster. Read by ``robot_rl.cluster``; a field of ``TrainConfig`` so a run's config.json keeps
them."""

from __future__ import annotations

import dataclasses

from robot_rl.errors import ConfigError


@dataclasses.dataclass(kw_only=True)
class RayOptions:
    """Env-runner and learner actors on Ray."""

    runner_threads: int = 1
    """MuJoCo and torch threads of each env-runner (its physics thread pool)."""
    collect_steps: int = 16
    """Vector steps per rollout an env-runner sends; it pulls the newest weights before each
    (so weights are at most this many steps plus one rollout old)."""
    runner_cpus: float | None = None
    """CPUs each env-runner reserves on the cluster (default: runner_threads)."""
    learner_cpus: float = 1.0
    """CPUs the learner reserves."""
    learner_gpus: float | None = None
    """GPUs the learner reserves (default: 1 with a cuda --device, else 0)."""
    learner_restarts: int = 3
    """Times Ray restarts a dead learner, which resumes from its last checkpoint."""
    max_runner_failures: int = 10
    """Stop the run once env-runners have died this many times together (each dead runner
    is restarted by Ray and its rollout asked again)."""

    robot_resource: str | None = None
    """Fine-tuning on a robot: the Ray custom resource of the robot's machine the robot actor
    is placed on (``ray start --resources='{"robot": 1}'`` there); default: anywhere."""

    def actor_cpus(self, robot: bool = False) -> float:
        """CPUs one env-runner (or, ``robot``, the robot actor) reserves: ``runner_cpus``,
        else ``runner_threads`` (the robot actor: 1)."""
        if self.runner_cpus is not None:
            return self.runner_cpus
        return 1.0 if robot else float(self.runner_threads)

    def validate(self, env_runners: int) -> None:
        if env_runners < 1:
            raise ConfigError(f"--env-runners must be >= 1, got {env_runners}")
        if self.runner_threads < 1 or self.collect_steps < 1:
            raise ConfigError("--dist.runner-threads and --dist.collect-steps must be >= 1")
        if min(self.learner_cpus, self.runner_cpus or 0.0, self.learner_gpus or 0.0) < 0 or \
                self.learner_restarts < 0 or self.max_runner_failures < 0:
            raise ConfigError("actor resources, learner restarts and runner failures must "
                              "be >= 0")
