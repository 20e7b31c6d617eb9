"""``robot-rl export``: a run's policy as the deploy artifact (ONNX + TorchScript +
policy.json), for every kind of run (``robot_rl.kinds``).

    robot-rl export runs/reach__sac__0__20261121-101500       # -> <run>/export/
    robot-rl export runs/push__bc-flow__0__20261123-101500 --policy student
"""

from __future__ import annotations

from rich.console import Console

from robot_rl.kinds.base import ExportConfig
from robot_rl.kinds.export import export_path

__all__ = ["ExportConfig", "export_cmd"]


def export_cmd(cfg: ExportConfig) -> None:
    exported = export_path(cfg)
    files = ", ".join(sorted(p.name for p in exported.path.iterdir()))
    Console().print(f"exported {exported.what} to {exported.path}: {files}")
