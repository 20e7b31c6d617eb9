"""Error types with messages meant for users; the CLI prints them as one line."""

from __future__ import annotations


class RobotRLError(Exception):
    """Base class: an error caused by input or environment, not by a bug."""


class ConfigError(RobotRLError, ValueError):
    """Invalid configuration, name or argument."""


class ModelError(RobotRLError, ValueError):
    """A robot or scene model is missing, malformed or inconsistent with its spec."""


class RenderError(RobotRLError, RuntimeError):
    """Offscreen rendering is unavailable or failed."""


def unknown_name(kind: str, name: str, valid: list[str] | tuple[str, ...]) -> ConfigError:
    """The error for a name that is not in a registry, listing the valid ones."""
    return ConfigError(f"unknown {kind} {name!r}; valid {kind}s: {', '.join(sorted(valid))}")
