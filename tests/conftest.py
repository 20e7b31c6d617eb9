"""Shared fixtures. Importing robot_rl first selects EGL for offscreen rendering."""

from __future__ import annotations

import robot_rl  # noqa: F401  (sets MUJOCO_GL before anything imports mujoco)

ARM_TASKS = ("reach", "push", "lift")
ALL_TASKS = ("reach", "reach_hazard", "push", "lift", "pusher")
