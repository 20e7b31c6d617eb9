"""Robot descriptions and their registry.

``get_robot(name)`` returns a RobotSpec; ``register_robot(name, factory)`` adds a user's arm.
"""

from __future__ import annotations

from collections.abc import Callable

from robot_rl.errors import ConfigError, unknown_name
from robot_rl.robots.builtin import arm7, pusher
from robot_rl.robots.spec import GripperSpec, RobotSpec, compile_spec, load_mjcf

_ROBOTS: dict[str, Callable[[], RobotSpec]] = {"arm7": arm7, "pusher": pusher}


def register_robot(name: str, factory: Callable[[], RobotSpec], overwrite: bool = False) -> None:
    """Register a robot factory under ``name`` (a function returning a RobotSpec)."""
    if name in _ROBOTS and not overwrite:
        raise ConfigError(f"robot {name!r} is already registered (pass overwrite=True)")
    _ROBOTS[name] = factory


def get_robot(name: str) -> RobotSpec:
    """The RobotSpec registered under ``name``."""
    if name not in _ROBOTS:
        raise unknown_name("robot", name, list(_ROBOTS))
    return _ROBOTS[name]()


def list_robots() -> list[str]:
    return sorted(_ROBOTS)


__all__ = [
    "GripperSpec",
    "RobotSpec",
    "compile_spec",
    "get_robot",
    "list_robots",
    "load_mjcf",
    "register_robot",
]
