"""Checkpoints: state dicts written atomically (temp file + rename), read with clear errors.

A run directory holds ``config.json`` (the resolved config), ``eval.csv`` (the learning
curve), ``tb/`` (TensorBoard), ``checkpoints/latest.pt`` (agent, counters, history), optionally
``checkpoints/replay.pt`` (the replay buffer, for exact resumption), ``checkpoints/
step_<env steps>.pt`` (the ones ``--keep-every`` keeps) and ``config.json``.
A crash or Ctrl-C while writing leaves the previous file intact: the new one is written to a
temporary name in the same folder and renamed over the old one only when complete.
"""

from __future__ import annotations

import csv
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from robot_rl.config_io import to_dict
from robot_rl.errors import RobotRLError
from robot_rl.fileio import atomic_write

CHECKPOINT = Path("checkpoints") / "latest.pt"
REPLAY = Path("checkpoints") / "replay.pt"
FORMAT_VERSION = 1


class CheckpointError(RobotRLError):
    """A checkpoint or run directory is missing, unreadable or from an incompatible run."""


def kept_checkpoint(env_steps: int) -> Path:
    """Where ``--keep-every`` keeps the checkpoint of ``env_steps``, in a run directory."""
    return CHECKPOINT.parent / f"step_{env_steps}.pt"


def save_atomic(obj: Any, path: Path) -> None:
    """``torch.save`` to ``path`` through a temporary file in the same folder and a rename."""
    atomic_write(path, lambda f: torch.save(obj, f))


def resolve_checkpoint(path: str | Path) -> Path:
    """The checkpoint file of a run directory, or ``path`` itself if it is a file."""
    p = Path(path)
    if p.is_dir():
        p = p / CHECKPOINT
    if not p.is_file():
        raise CheckpointError(f"no checkpoint at {p} (pass a run directory or a .pt file)")
    return p


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """Read a checkpoint written by the runner; one clear error if it is not one."""
    p = resolve_checkpoint(path)
    try:
        state = torch.load(p, map_location="cpu", weights_only=False)
    except Exception as e:  # truncated, not a torch file, unreadable
        raise CheckpointError(f"cannot read checkpoint {p}: {type(e).__name__}: {e}") from None
    if not isinstance(state, dict) or state.get("format") != FORMAT_VERSION or \
            "agent" not in state or "config" not in state:
        raise CheckpointError(f"{p} is not a robot_rl training checkpoint "
                              f"(format {FORMAT_VERSION})")
    return state


def checkpoint_kind(path: str | Path) -> str:
    """What a run directory or checkpoint holds: the ``kind`` its runner saved ("sac",
    "dsrl", "residual", "bc", "pixel_sac"); checkpoints older than the field are "sac"."""
    return str(load_checkpoint(path).get("kind", "sac"))


def default_run_name(task: str, method: str, seed: int) -> str:
    """A new run directory's name: ``{task}__{method}__{seed}__{time}`` (a gymnasium id's
    ``/`` and ``:`` become ``-``)."""
    task = task.replace("/", "-").replace(":", "-")
    return f"{task}__{method}__{seed}__{time.strftime('%Y%m%d-%H%M%S')}"


def create_run_dir(runs_dir: str | Path, run_name: str | None, task: str, method: str,
                   seed: int) -> Path:
    """A new run directory under ``runs_dir``: ``run_name`` (which may exist already), else
    ``default_run_name`` (which must not)."""
    path = Path(runs_dir) / (run_name or default_run_name(task, method, seed))
    path.mkdir(parents=True, exist_ok=run_name is not None)
    return path


CONFIG = "config.json"
CURVE = "eval.csv"


def write_config(run_dir: Path, config: Any) -> Path:
    """The run's resolved config as ``config.json`` (a dataclass, as ``to_dict`` writes it)."""
    path = run_dir / CONFIG
    path.write_text(json.dumps(to_dict(config), indent=2) + "\n")
    return path


def write_curve(run_dir: Path, rows: list[dict[str, float]], fields: Sequence[str]) -> Path:
    """The learning curve as ``eval.csv``: one row per evaluation, ``fields`` its columns."""
    path = run_dir / CURVE
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(fields))
        w.writeheader()
        w.writerows(rows)
    return path


def read_curve(run_dir: str | Path) -> list[dict[str, float]]:
    """The evaluation history of a run (``eval.csv``)."""
    path = Path(run_dir) / CURVE
    if not path.is_file():
        raise CheckpointError(f"no learning curve at {path}")
    with open(path) as f:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]


def run_dir_of(checkpoint: Path) -> Path:
    """The run directory a checkpoint file belongs to (its grandparent)."""
    return checkpoint.parent.parent
