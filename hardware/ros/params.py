"""Typed ROS 2 parameter declaration: a dataclass's fields become node parameters."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any, TypeVar

from rclpy.node import Node
from rclpy.parameter import Parameter

T = TypeVar("T")


def declare(node: Node, cls: type[T]) -> T:
    """Declare every field of dataclass ``cls`` as a parameter (its default as the default,
    read from ``--params-file``/``-p`` overrides) and return the values as ``cls``."""
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc,operator]
        if isinstance(default, list):  # an empty list has no type: declare it by annotation
            kind = Parameter.Type.STRING_ARRAY if "str" in str(hints[f.name]) else \
                Parameter.Type.DOUBLE_ARRAY
            v: Any = node.declare_parameter(f.name, kind).value
            values[f.name] = default if v is None else list(v)
            continue
        v = node.declare_parameter(f.name, default).value
        if hints[f.name] in (float, "float") and isinstance(v, int):
            v = float(v)
        values[f.name] = v
    return cls(**values)
