"""Physics backends. ``make_backend(name, model, num_envs, ...)``; see ``base.Backend``."""

from __future__ import annotations

import mujoco

from robot_rl.errors import ConfigError, unknown_name
from robot_rl.sim.backends.base import Backend
from robot_rl.sim.backends.cpu import CpuBackend
from robot_rl.sim.backends.warp import WarpBackend
from robot_rl.sim.configs import WarpOptions

BACKENDS = ("cpu", "warp")


def make_backend(name: str, model: mujoco.MjModel, num_envs: int, *,
                 device: str = "cpu", nthread: int | None = None,
                 warp: WarpOptions | None = None, what: str = "this scene") -> Backend:
    """A backend by name: ``cpu`` (MuJoCo C threads) or ``warp`` (MuJoCo Warp on ``device``:
    ``cuda``, ``cuda:N``, or ``cpu`` for Warp's CPU device). ``warp`` takes a
    ``WarpOptions``; ``what`` names the scene in errors."""
    if name == "cpu":
        if str(device) != "cpu":
            raise ConfigError(f"backend 'cpu' runs on the CPU; device={str(device)!r} needs "
                              "backend='warp'")
        return CpuBackend(model, num_envs, nthread=nthread)
    if name == "warp":
        if warp is not None and not isinstance(warp, WarpOptions):
            raise ConfigError(f"warp options must be a WarpOptions, got {type(warp).__name__}")
        return WarpBackend(model, num_envs, device=str(device), options=warp, what=what)
    raise unknown_name("backend", name, BACKENDS)


__all__ = ["BACKENDS", "Backend", "CpuBackend", "WarpBackend", "WarpOptions", "make_backend"]
