"""Lazy exports of a package: ``from robot_rl.sim import make_env`` imports ``sim.env`` and
its torch only when the name is first used, so importing one light module of the package
(a config for ``robot-rl ... --help``) does not import all of them.

    # in a package's __init__.py
    _EXPORTS = {"make_env": "robot_rl.sim.factory", ...}
    if TYPE_CHECKING:                     # type checkers see the plain imports
        from robot_rl.sim.factory import make_env
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping


def lazy_exports(package: str, exports: Mapping[str, str]
                 ) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of ``package`` whose names ``exports``
    maps to the modules that define them; a name is imported on first use and kept."""

    def getattr_(name: str) -> object:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name]), name)
        setattr(sys.modules[package], name, value)
        return value

    def dir_() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return getattr_, dir_
