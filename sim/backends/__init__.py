"""Physics backends. ``make_backend(name, model, num_envs)``; see ``base.Backend``."""

from __future__ import annotations

import mujoco

from robot_rl.errors import unknown_name
from robot_rl.sim.backends.base import Backend
from robot_rl.sim.backends.cpu import CpuBackend

BACKENDS = ("cpu",)


def make_backend(name: str, model: mujoco.MjModel, num_envs: int,
                 nthread: int | None = None) -> Backend:
    """A backend by name: ``cpu`` (MuJoCo C threads)."""
    if name == "cpu":
        return CpuBackend(model, num_envs, nthread=nthread)
    raise unknown_name("backend", name, BACKENDS)


__all__ = ["BACKENDS", "Backend", "CpuBackend", "make_backend"]
