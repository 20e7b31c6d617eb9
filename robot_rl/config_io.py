"""Dataclass configs to and from JSON-able dicts (the resolved config saved with each run)."""

from __future__ import annotations

import dataclasses
import types
import typing
from pathlib import Path
from typing import Any, TypeVar, Union

from robot_rl.errors import ConfigError

T = TypeVar("T")


def to_dict(cfg: Any) -> Any:
    """Nested dataclasses, tuples and paths as plain JSON values."""
    if dataclasses.is_dataclass(cfg) and not isinstance(cfg, type):
        return {f.name: to_dict(getattr(cfg, f.name)) for f in dataclasses.fields(cfg)}
    if isinstance(cfg, list | tuple):
        return [to_dict(v) for v in cfg]
    if isinstance(cfg, dict):
        return {k: to_dict(v) for k, v in cfg.items()}
    if isinstance(cfg, Path):
        return str(cfg)
    return cfg


def from_dict(cls: type[T], data: dict[str, Any]) -> T:
    """Rebuild dataclass ``cls`` from ``to_dict`` output; unknown keys raise ConfigError. A
    family of configs (task configs) may name the subclass a dict is of through a
    ``config_class(data)`` classmethod, and a config may bring a dict saved by an older
    version to its fields through ``upgrade_saved_dict(data)``."""
    resolve = getattr(cls, "config_class", None)
    if resolve is not None:
        cls = resolve(data)
    upgrade = getattr(cls, "upgrade_saved_dict", None)  # an older version's fields
    if upgrade is not None:
        data = upgrade(data)
    hints = typing.get_type_hints(cls, include_extras=False)
    names = {f.name for f in dataclasses.fields(cls) if f.init}  # type: ignore[arg-type]
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigError(f"{cls.__name__} has no field(s) {unknown}")
    kwargs = {k: _convert(hints[k], v) for k, v in data.items()}
    return cls(**kwargs)


def nest(data: dict[str, Any], key: str, part: type) -> dict[str, Any]:
    """``data`` with the fields of the dataclass ``part`` moved under ``key``, where they
    are flat (a config saved before ``part`` was composed into it); else ``data``."""
    if key in data:
        return data
    data = dict(data)
    data[key] = {f.name: data.pop(f.name) for f in dataclasses.fields(part) if f.name in data}
    return data


def from_value(tp: Any, value: Any) -> Any:
    """A ``to_dict`` value as type ``tp`` (a dataclass, a tagged union of configs, a tuple,
    a path)."""
    return _convert(tp, value)


def _convert(tp: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        for a in args:
            if isinstance(a, type) and dataclasses.is_dataclass(a) and isinstance(value, dict):
                if "type" not in value or _type_tag(a) in (None, value["type"]):
                    return from_dict(a, value)
        return _convert(args[0], value) if len(args) == 1 else value
    if isinstance(tp, type) and dataclasses.is_dataclass(tp) and isinstance(value, dict):
        return from_dict(tp, value)
    if origin is tuple:
        items = typing.get_args(tp)
        if len(items) == 2 and items[1] is Ellipsis:
            return tuple(_convert(items[0], v) for v in value)
        return tuple(_convert(a, v) for a, v in zip(items, value, strict=True))
    if tp is Path:
        return Path(value)
    return value


def _type_tag(cls: Any) -> str | None:
    """The default of a ``type`` Literal field (how tagged unions of configs tell apart)."""
    for f in dataclasses.fields(cls):
        if f.name == "type" and f.default is not dataclasses.MISSING:
            return str(f.default)
    return None
