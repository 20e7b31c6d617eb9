"""robot_rl: sim-to-real reinforcement learning for robot arms.

Subpackages: ``robot_rl.sim`` (batched MuJoCo simulation, robots, tasks),
``robot_rl.controllers`` (action spaces, controllers), ``robot_rl.hardware`` (robot interfaces).
Importing ``robot_rl`` registers the gymnasium environments (``robot_rl/Reach-v0`` ...).
"""

from __future__ import annotations

import os

__version__ = "0.1.0"

# MuJoCo picks its OpenGL backend once, when it is first imported. On a machine without a
# display, offscreen rendering needs EGL; set it before anything imports mujoco.
if "MUJOCO_GL" not in os.environ and not os.environ.get("DISPLAY"):
    os.environ["MUJOCO_GL"] = "egl"

from robot_rl import gym_registration as _gym_registration  # noqa: E402

_gym_registration.register_all()
