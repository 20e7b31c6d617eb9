"""A ``robot-rl`` command as the CLI and the kinds declare it (light: ``robot-rl --help``
imports it)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any


@dataclasses.dataclass(frozen=True)
class Command:
    """A ``robot-rl`` command: its config (a dataclass; every field a flag) and what runs
    it."""

    config: type
    run: Callable[[Any], object]
