"""Registers the gymnasium ids ``robot_rl/<Task>-v0`` (entry points only, nothing heavy).

``import robot_rl`` calls ``register_when_imported``: the ids are registered at once where
gymnasium is already imported, else the moment it is (gymnasium's import costs a fifth of a
second, which ``robot-rl ... --help`` does not pay). Either way ``gymnasium.make
("robot_rl/Reach-v0")`` works after ``import robot_rl``.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from types import ModuleType

GYM_IDS = {"reach": "robot_rl/Reach-v0", "push": "robot_rl/Push-v0", "lift": "robot_rl/Lift-v0"}


def register_all() -> None:
    import gymnasium

    for task, env_id in GYM_IDS.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point="robot_rl.sim.gym:RobotRLEnv",
                               kwargs={"task": task}, disable_env_checker=True)


def register_when_imported() -> None:
    """``register_all`` now if gymnasium is imported, else right after its import."""
    if "gymnasium" in sys.modules:
        register_all()
    elif not any(isinstance(f, _AfterGymnasium) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterGymnasium())


class _AfterGymnasium(importlib.abc.MetaPathFinder):
    """Finds gymnasium as the other finders do, and registers the ids once its module has
    run; then leaves ``sys.meta_path`` (not before: a lookup that only asks whether
    gymnasium is installed, ``importlib.util.find_spec``, runs no module)."""

    def find_spec(self, name: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if name != "gymnasium":
            return None
        sys.meta_path.remove(self)  # the other finders find it; this one comes back below
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        run = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            if self in sys.meta_path:
                sys.meta_path.remove(self)
            run(module)
            register_all()

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec
