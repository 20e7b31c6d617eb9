"""What the commands of every kind do around a run's training: ``--ray`` handed to the
learner actor, the learning curve drawn and its path printed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console

from robot_rl.errors import ConfigError


def train_runner(cfg: Any, make: type[Any], label: Callable[[Any], str]) -> Any:
    """Train ``make(cfg)`` (a ``Runner`` class: ``train() -> history``, ``run_dir``, ``cfg``)
    and draw its learning curve as ``label(cfg)``; with ``--ray``, the same class as a
    learner actor on Ray instead. Returns the runner (None on Ray)."""
    if getattr(cfg, "ray", None) is not None:
        train_on_ray(cfg, make, label)
        return None
    runner = make(cfg)
    history = runner.train()
    plot_curve(runner.run_dir, label(runner.cfg), history)
    return runner


def plot_curve(run_dir: Path, label: str, history: list[dict[str, float]]) -> Path:
    """``learning_curve.png`` of a run, its path printed."""
    from robot_rl.plot import plot_curves

    png = plot_curves(run_dir / "learning_curve.png", [(label, history)], title=run_dir.name)
    Console().print(f"learning curve: {png}")
    return png


def train_on_ray(cfg: Any, runner: type[Any], label: Callable[[Any], str]) -> None:
    """``robot-rl train --ray ...`` / ``robot-rl finetune --ray ...``: a learner actor (a
    ``runner``) and env-runner actors on Ray."""
    from robot_rl.finetune.configs import FinetuneConfig
    from robot_rl.train_config import TrainConfig

    if type(cfg) not in (TrainConfig, FinetuneConfig):
        raise ConfigError("--ray trains robot-rl train and robot-rl finetune runs (state-based "
                          "SAC, RLPD, WSRL); dsrl and train-pixels run in one process")
    try:
        from robot_rl.cluster.driver import train_on_ray as on_ray
    except ImportError as e:
        raise ConfigError(f"--ray needs Ray: pip install -e '.[dist]' ({e})") from None
    history, run_dir = on_ray(cfg, runner)
    plot_curve(run_dir, f"{label(cfg)}, {cfg.env_runners} env-runners", history)
