"""Reading and compiling MJCF with errors that name the file (``ModelError``, one line)."""

from __future__ import annotations

from pathlib import Path

import mujoco

from robot_rl.errors import ModelError


def load_mjcf(path: str | Path) -> mujoco.MjSpec:
    """Parse an MJCF file; a missing or malformed file raises ModelError naming it."""
    path = Path(path)
    if not path.is_file():
        raise ModelError(f"MJCF file not found: {path}")
    try:
        return mujoco.MjSpec.from_file(str(path))
    except ValueError as e:
        raise ModelError(f"{path}: {_one_line(e)}") from None


def compile_spec(spec: mujoco.MjSpec, source: str | Path) -> mujoco.MjModel:
    """Compile an MjSpec; MuJoCo's compiler errors raise ModelError naming the source."""
    try:
        return spec.compile()
    except ValueError as e:
        raise ModelError(f"{source}: {_one_line(e)}") from None


def _one_line(err: Exception) -> str:
    return " ".join(line.strip() for line in str(err).splitlines() if line.strip())
