"""What a learner kind is: the commands that make its runs, and what a run of it can do
(evaluate exactly the decision that ships, export it, distil it).

A run is a directory (``runs/<task>__<method>__<seed>__<time>/``) whose checkpoint names the
kind that wrote it (``checkpoints/latest.pt``'s ``kind``); ``load_run`` (``robot_rl.kinds``)
reads that tag and hands the run to its kind. ``docs/extending.md`` writes a kind from
scratch.
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

import tyro

from robot_rl.errors import ConfigError
from robot_rl.kinds.command import Command
from robot_rl.sim.configs import DRPreset


@dataclasses.dataclass
class Run:
    """A run directory and the checkpoint of it that was asked for (the latest, or a file
    that ``--keep-every`` kept)."""

    checkpoint: Path
    """The checkpoint file."""
    kind: str
    """The tag of the kind that wrote it."""
    _state: dict[str, Any] | None = dataclasses.field(default=None, repr=False)

    @property
    def dir(self) -> Path:
        """The run directory."""
        from robot_rl.checkpoint import run_dir_of

        return run_dir_of(self.checkpoint)

    @property
    def state(self) -> dict[str, Any]:
        """The checkpoint's contents (read once)."""
        if self._state is None:
            from robot_rl.checkpoint import load_checkpoint

            self._state = load_checkpoint(self.checkpoint)
        return self._state

    @classmethod
    def open(cls, path: str | Path) -> Run:
        """The run of a run directory or checkpoint file (one clear error if it is not
        one)."""
        from robot_rl.checkpoint import load_checkpoint, resolve_checkpoint

        ckpt = resolve_checkpoint(path)
        state = load_checkpoint(ckpt)
        return cls(ckpt, str(state.get("kind", "sac")), state)


@dataclasses.dataclass(frozen=True)
class EvalOptions:
    """How ``robot-rl eval`` asks a run to be evaluated."""

    num_envs: int
    seed: int
    dr: DRPreset | None = None
    """Randomization preset (None: as trained)."""
    gate: bool | None = None
    """The safety-critic gate (None: as the run's artifact decides)."""
    student: bool = False
    """The run's distilled student instead of its policy."""


@dataclasses.dataclass
class Evaluation:
    """A run made ready to evaluate: the env its episodes run on and how to run them."""

    env: Any
    """The ``VecEnv`` the episodes run on (a wrapper's own simulation is its ``.env``: the
    video, the viewer and Rerun attach there)."""
    label: str
    """What is evaluated, for tables (``push / residual on runs/...``)."""
    episodes: Callable[..., Any]
    """``episodes(n, seed=, video=, renderer=, on_episodes=) -> EvalResult`` (keywords as
    ``robot_rl.evaluate.evaluate``'s)."""


@dataclasses.dataclass(kw_only=True)
class ExportConfig:
    """Export a run's policy as the deploy artifact (ONNX + TorchScript + policy.json).

    Example: robot-rl export runs/reach__sac__0__20261121-101500 --out export/reach
    """

    run: Annotated[Path, tyro.conf.Positional]
    """Run directory, or a pixel student file (robot-rl distill-pixels)."""
    out: Path | None = None
    """Artifact folder (default: <run>/export; for a pixel student, its file name without
    .pt)."""
    policy: Literal["student", "teacher"] | None = None
    """student: the distilled MLP (robot-rl distill); teacher: the trained actor's mean, or
    a bc / dsrl / residual run's chunked policy (the flow's integration unrolled in the
    graph; a residual run's with its residual graph). Default: student for train and
    finetune runs, teacher for bc, dsrl and residual runs."""
    threshold: float | None = None
    """Deploy gate threshold on the estimated discounted cost (default: the training one)."""
    candidates: int | None = None
    """Deploy gate candidates per decision (default: the training number)."""
    candidate_noise: float | None = None
    """Std of the Gaussian perturbations that form the deploy gate's other candidates
    (default: the training one, which training-time evaluation used)."""


@dataclasses.dataclass(frozen=True)
class Exported:
    """An artifact written by a kind's ``export``."""

    path: Path
    what: str
    """What was exported, for the one line ``robot-rl export`` prints."""


class Kind(abc.ABC):
    """One way to train. A subclass names the checkpoint tag its runs carry, the commands
    that make them, and what a run of it can do; ``robot_rl.kinds.KINDS`` registers it."""

    name: str = ""
    """The ``kind`` its checkpoints carry."""

    @abc.abstractmethod
    def commands(self) -> dict[str, Command]:
        """The ``robot-rl`` commands that make runs of this kind (their one-line summaries
        are in its registration, so ``robot-rl --help`` imports nothing)."""

    def command(self, name: str) -> Command:
        """One of ``commands()``, the one ``robot-rl NAME`` runs (a kind of several commands
        may import only that one's config: ``--help`` reads nothing else)."""
        return self.commands()[name]

    @abc.abstractmethod
    def evaluation(self, run: Run, opts: EvalOptions) -> Evaluation:
        """The run's shipped decision on an env of its task, ready to evaluate."""

    @abc.abstractmethod
    def export(self, run: Run, cfg: ExportConfig) -> Exported:
        """The run's policy (or its student) as the deploy artifact."""

    def distill(self, run: Run, cfg: Any, console: Any) -> Any:
        """A small student of the run's policy (DAgger); returns the distillation report."""
        raise ConfigError(f"{run.dir} is a {self.name} run, which has no distillation")
