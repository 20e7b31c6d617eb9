"""Shared fixtures. Importing robot_rl first selects EGL for offscreen rendering."""

from __future__ import annotations

import robot_rl  # noqa: F401  (sets MUJOCO_GL before anything imports mujoco)

ARM_TASKS = ("reach", "push", "lift")
ALL_TASKS = ("reach", "reach_hazard", "push", "lift", "pusher")

_exit_status: list[int] = []


def pytest_sessionfinish(session, exitstatus) -> None:  # type: ignore[no-untyped-def]
    _exit_status.append(int(exitstatus))


def pytest_unconfigure(config) -> None:  # type: ignore[no-untyped-def]
    """librealsense and rclpy loaded in one process crash in their static destructors at
    interpreter exit (a segfault after every test passed). When both were loaded, leave with
    the session's status once pytest is done, skipping those destructors."""
    import os
    import sys

    if _exit_status and "pyrealsense2" in sys.modules and "rclpy" in sys.modules:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_exit_status[0])
