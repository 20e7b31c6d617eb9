"""Robot descriptions and their registry.

``get_robot(name)`` returns a RobotSpec: a registered one (``register_robot(name, factory)``
adds a user's arm), else one ``robot-rl robot import`` wrote into the imported-robots folder
(``NAME.json``), else the spec file a path names.
"""

from __future__ import annotations

from collections.abc import Callable

from robot_rl.errors import ConfigError, unknown_name
from robot_rl.robots.builtin import arm7, pusher, so5, ur6
from robot_rl.robots.mjcf import compile_spec, load_mjcf
from robot_rl.robots.spec import GripperSpec, RobotSpec
from robot_rl.robots.urdf import imported_dir

_ROBOTS: dict[str, Callable[[], RobotSpec]] = {"arm7": arm7, "pusher": pusher, "so5": so5,
                                             "ur6": ur6}


def register_robot(name: str, factory: Callable[[], RobotSpec], overwrite: bool = False) -> None:
    """Register a robot factory under ``name`` (a function returning a RobotSpec)."""
    if name in _ROBOTS and not overwrite:
        raise ConfigError(f"robot {name!r} is already registered (pass overwrite=True)")
    _ROBOTS[name] = factory


def get_robot(name: str) -> RobotSpec:
    """The RobotSpec registered under ``name``, imported as ``name``, or saved at the path
    ``name`` (a ``.json`` file)."""
    if name in _ROBOTS:
        return _ROBOTS[name]()
    imported = imported_dir() / f"{name}.json"
    if imported.is_file():
        return RobotSpec.load(imported)
    if name.endswith(".json"):
        return RobotSpec.load(name)
    raise unknown_name("robot", name, list_robots())


def registered_robots() -> list[str]:
    """The built-in arms and those ``register_robot`` added, without the imported ones."""
    return sorted(_ROBOTS)


def list_robots() -> list[str]:
    """The registered arms and the imported ones."""
    folder = imported_dir()
    imported = [p.stem for p in folder.glob("*.json")] if folder.is_dir() else []
    return sorted({*_ROBOTS, *imported})


__all__ = [
    "GripperSpec",
    "RobotSpec",
    "compile_spec",
    "get_robot",
    "imported_dir",
    "list_robots",
    "load_mjcf",
    "register_robot",
    "registered_robots",
]
