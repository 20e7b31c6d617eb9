"""The learning-curve figure of a run (success rate and episode cost against time and steps)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any


def plot_curves(path: str | Path, curves: Sequence[tuple[str, list[dict[str, float]]]],
                title: str = "") -> Path:
    """Write a PNG with success rate and episode cost against wall-clock seconds.

    ``curves``: (label, eval history) pairs; each history row has ``seconds``,
    ``success_rate`` and ``episode_cost`` (``env_steps`` optional).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_s, ax_c) = plt.subplots(1, 2, figsize=(10, 3.8))
    for label, rows in curves:
        t = [r["seconds"] for r in rows]
        ax_s.plot(t, [100.0 * r["success_rate"] for r in rows], marker=".", label=label)
        ax_c.plot(t, [r["episode_cost"] for r in rows], marker=".", label=label)
    ax_s.set(xlabel="wall clock [s]", ylabel="eval success [%]", ylim=(-2, 102))
    ax_c.set(xlabel="wall clock [s]", ylabel="eval episode cost")
    return _save(fig, (ax_s, ax_c), path, title)


def plot_action_error(path: str | Path, label: str, rows: list[dict[str, float]],
                      title: str = "") -> Path:
    """Write a PNG with the held-out action RMSE (absolute, and relative to predicting the
    mean action) against wall-clock seconds: a BC run on data of no simulated task."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_a, ax_r) = plt.subplots(1, 2, figsize=(10, 3.8))
    t = [r["seconds"] for r in rows]
    ax_a.plot(t, [r["action_rmse"] for r in rows], marker=".", label=label)
    ax_r.plot(t, [r["action_rmse_rel"] for r in rows], marker=".", label=label)
    ax_a.set(xlabel="wall clock [s]", ylabel="held-out action RMSE")
    ax_r.set(xlabel="wall clock [s]", ylabel="RMSE / RMSE of the mean action", ylim=(0, None))
    return _save(fig, (ax_a, ax_r), path, title)


def _save(fig: Any, axes: Sequence[Any], path: str | Path, title: str) -> Path:
    """Grid and legend on every axis, the title, then the PNG at ``path``."""
    import matplotlib.pyplot as plt

    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(loc="best", fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def time_to(history: list[dict[str, float]], target: float) -> tuple[float, float] | None:
    """(seconds, env steps) of the first evaluation of a learning curve at or above a success
    rate of ``target``; None if none reached it."""
    for row in history:
        if row["success_rate"] >= target:
            return row["seconds"], row["env_steps"]
    return None
