"""robot_rl: sim-to-real reinforcement learning for robot arms.

Subpackages: ``robot_rl.sim`` (batched MuJoCo simulation, robots, tasks),
``robot_rl.controllers`` (action spaces, controllers), ``robot_rl.hardware`` (robot interfaces).
Importing ``robot_rl`` registers the gymnasium environments (``robot_rl/Reach-v0`` ...).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping

__version__ = "0.1.0"

_command_start: float | None = time.perf_counter()


def mark_command_start() -> None:
    """A command starts now (``robot-rl``'s main; importing ``robot_rl`` marks one too)."""
    global _command_start
    _command_start = time.perf_counter()


def take_command_start() -> float | None:
    """When the command started, for the first run loop of it (a training run reports its
    start-up time from it); None for the runs after the first in one process."""
    global _command_start
    start, _command_start = _command_start, None
    return start


def _has_egl() -> bool:
    """Whether libEGL loads (``import mujoco`` with MUJOCO_GL=egl fails where it does not)."""
    import ctypes

    try:
        ctypes.CDLL("libEGL.so.1")
    except OSError:
        return False
    return True


def default_gl(environ: Mapping[str, str], has_egl: Callable[[], bool] = _has_egl
               ) -> str | None:
    """The MUJOCO_GL to set, or None to leave MuJoCo's own choice: EGL (offscreen rendering)
    on a machine without a display where libEGL is installed; without libEGL, MuJoCo still
    imports and simulates, and a renderer says what to install."""
    if "MUJOCO_GL" in environ or environ.get("DISPLAY") or not has_egl():
        return None
    return "egl"


# MuJoCo picks its OpenGL backend once, when it is first imported: set it before anything
# imports mujoco.
if (_gl := default_gl(os.environ)) is not None:
    os.environ["MUJOCO_GL"] = _gl

from robot_rl import gym_registration as _gym_registration  # noqa: E402

_gym_registration.register_when_imported()
