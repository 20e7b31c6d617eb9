"""Task registry: ``get_task(name)`` returns a TaskDef; ``make_task_config(name)`` a fresh config.

Built-in tasks: reach, reach_hazard, push, lift (on any RobotSpec) and pusher (gymnasium's
Pusher-v5 model, dynamics, observation and reward in the batched env, for benchmarks and parity
checks). Their configs come from ``sim.tasks.configs``, which imports neither MuJoCo nor
torch; a built-in task's module (its functions) is imported by the first ``get_task``.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from robot_rl.errors import ConfigError, unknown_name
from robot_rl.lazy import lazy_exports
from robot_rl.sim.tasks import configs
from robot_rl.sim.tasks.config import CONFIG_CLASSES, TaskConfig
from robot_rl.sim.tasks.safety_costs import SafetyCostConfig

if TYPE_CHECKING:
    from robot_rl.sim.tasks.base import TaskDef

_TASKS: dict[str, TaskDef] = {}
_CONFIGS: dict[str, Callable[[], TaskConfig]] = {}
"""Each task's config factory (a registered task's ``make_config``)."""
_BUILTIN: dict[str, tuple[str, Callable[[], TaskConfig]]] = {
    "reach": ("robot_rl.sim.tasks.reach", configs.make_reach_config),
    "reach_hazard": ("robot_rl.sim.tasks.reach_hazard", configs.make_reach_hazard_config),
    "push": ("robot_rl.sim.tasks.push", configs.make_push_config),
    "lift": ("robot_rl.sim.tasks.lift", configs.make_lift_config),
    "pusher": ("robot_rl.sim.tasks.pusher", configs.make_pusher_config),
}
"""The built-in tasks: the module that defines each one's ``TASK``, and its config."""


def register_task(task: TaskDef, overwrite: bool = False) -> None:
    """Add a task to the registry (a built-in one's name only with ``overwrite``)."""
    if task.name in _CONFIGS and not overwrite:
        raise ConfigError(f"task {task.name!r} is already registered (pass overwrite=True)")
    _TASKS[task.name] = task
    _CONFIGS[task.name] = task.make_config
    CONFIG_CLASSES[task.name] = type(task.make_config())


def get_task(name: str) -> TaskDef:
    if name not in _TASKS:
        if name not in _BUILTIN:
            raise unknown_name("task", name, list_tasks())
        module, _ = _BUILTIN[name]
        _TASKS[name] = importlib.import_module(module).TASK
    return _TASKS[name]


def list_tasks() -> list[str]:
    return sorted(_CONFIGS)


def make_task_config(name: str, **overrides: Any) -> TaskConfig:
    """A fresh copy of a task's default config, with top-level fields overridden; with
    ``robot=NAME``, laid out for that arm first (its ``RobotSpec.task_layout`` for this
    task: where targets and objects go for its reach); ``robot=None`` is the task's own."""
    if name not in _CONFIGS:
        raise unknown_name("task", name, list_tasks())
    cfg = _CONFIGS[name]()
    if overrides.get("robot", cfg.robot) is None:
        del overrides["robot"]
    if "robot" in overrides:
        from robot_rl.robots import get_robot

        robot = get_robot(overrides["robot"])
        if robot.task_layout and name not in robot.task_layout:
            raise ConfigError(f"robot {robot.name!r} lays out {', '.join(robot.task_layout)} "
                              f"for its reach; task {name!r} has no layout for it (add one to "
                              f"its RobotSpec.task_layout)")
        cfg = apply_layout(cfg, robot.task_layout.get(name, {}), f"robot {robot.name!r}")
    return replace_config(cfg, **overrides)


def apply_layout(cfg: Any, layout: Mapping[str, Any], source: str) -> Any:
    """A copy of config ``cfg`` with ``layout``'s fields replaced (a nested config's from a
    mapping of its own fields); unknown names raise ConfigError naming ``source``."""
    fields = {f.name for f in dataclasses.fields(cfg)}
    if bad := sorted(set(layout) - fields):
        raise ConfigError(f"{source}'s layout of task {getattr(cfg, 'name', '?')!r} names "
                          f"no config field(s) {bad}")
    changes = {k: apply_layout(getattr(cfg, k), v, source)
               if dataclasses.is_dataclass(getattr(cfg, k)) and isinstance(v, Mapping) else v
               for k, v in layout.items()}
    return dataclasses.replace(cfg, **changes)


def replace_config(cfg: TaskConfig, **overrides: Any) -> TaskConfig:
    """A copy of ``cfg`` with top-level fields replaced; unknown names raise ConfigError."""
    fields = {f.name for f in dataclasses.fields(cfg)}
    bad = sorted(set(overrides) - fields)
    if bad:
        raise ConfigError(f"task {cfg.name!r} has no config field(s) {bad}; "
                          f"fields: {sorted(fields)}")
    return dataclasses.replace(cfg, **overrides)


def _register_builtins() -> None:
    for name, (_, make_config) in _BUILTIN.items():
        _CONFIGS[name] = make_config
        CONFIG_CLASSES[name] = type(make_config())


_register_builtins()

__getattr__, __dir__ = lazy_exports(__name__, {"TaskDef": "robot_rl.sim.tasks.base"})

__all__ = ["SafetyCostConfig", "TaskConfig", "TaskDef", "get_task", "list_tasks",
           "make_task_config", "register_task", "replace_config"]
