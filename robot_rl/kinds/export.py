"""What ``robot-rl export`` takes to an artifact (ONNX + TorchScript + policy.json): a run of
any kind (its kind writes it), or a pixel policy file (``robot-rl distill-pixels``).

    exported = export_path(ExportConfig(run=Path("runs/reach__sac__0__<time>")))
    exported.path                                   # runs/reach__sac__0__<time>/export
"""

from __future__ import annotations

from robot_rl.kinds import load_run, run_kind
from robot_rl.kinds.base import ExportConfig, Exported
from robot_rl.kinds.pixel_sac import export_pixel_file, is_pixel_file


def export_path(cfg: ExportConfig) -> Exported:
    """The artifact of ``cfg.run`` (a run directory, a checkpoint or a pixel policy
    file)."""
    if is_pixel_file(cfg.run):
        return export_pixel_file(cfg)
    run = load_run(cfg.run)
    return run_kind(run).export(run, cfg)
