"""Export a pixel student as the deploy artifact: ONNX + TorchScript + ``policy.json`` whose
graph takes images next to the observation (``robot-rl export runs/pixel_student.pt``).

    export_pixel_student("runs/pixel_student.pt", "export/push_pixels")
    policy = load_policy("export/push_pixels")
    a = policy(obs, images={"front.rgb": rgb, "wrist.rgb": rgb2})

The graph's inputs are ``obs`` (B, O) float32, the student's proprioception as its
``observation.layout`` lists it, then each image in ``policy.json``'s ``images`` order:
``{camera}.rgb`` (B, 3, H, W) uint8 RGB, ``{camera}.depth`` (B, 1, H, W) float32 metres
(0: no return). Normalization (proprioception mean/std, RGB / 255, depth clipped to
``DEPTH_RANGE``) is inside the graph; ``policy.json`` records it, with each camera's
resolution and how it was rendered in training, so a deploy side can feed the same images.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn

from robot_rl.config_io import from_dict
from robot_rl.export.artifact import export_artifact, task_meta, with_provenance
from robot_rl.sim.tasks.config import TaskConfig
from robot_rl.vision.encoder import DEPTH_RANGE
from robot_rl.vision.pixel_inputs import pixel_env
from robot_rl.vision.student import PixelPolicy
from robot_rl.vision.student_file import load_pixel_student, student_record


class PixelGraph(nn.Module):
    """obs (B, O), then each image of ``keys`` (B, C, H, W) -> action (B, A) in [-1, 1]."""

    def __init__(self, student: PixelPolicy, keys: list[str]):
        super().__init__()
        self.student, self.keys = student, list(keys)

    def forward(self, obs: torch.Tensor, *images: torch.Tensor) -> torch.Tensor:
        return self.student(obs, dict(zip(self.keys, images, strict=True)))


def image_meta(image_shapes: dict[str, tuple[int, int, int]]) -> list[dict[str, Any]]:
    """``policy.json``'s ``images``: one entry per graph image input, in graph order."""
    out = []
    for key, shape in image_shapes.items():
        camera, kind = key.rsplit(".", 1)
        entry: dict[str, Any] = {"key": key, "camera": camera, "kind": kind,
                                 "shape": list(shape), "layout": "CHW"}
        if kind == "rgb":
            entry.update(dtype="uint8", encoding="rgb8", scale="x / 255 in the graph")
        else:
            entry.update(dtype="float32", unit="m", invalid=0.0,
                         scale=f"min(x, {DEPTH_RANGE}) / {DEPTH_RANGE} in the graph")
        out.append(entry)
    return out


def export_pixel_student(path: str | Path, out: str | Path) -> Path:
    """Write the artifact of the pixel student saved at ``path`` (see module docstring)."""
    student, state = load_pixel_student(path)
    record = student_record(state)
    task_cfg = from_dict(TaskConfig, state["task"])
    env = pixel_env(record.inputs, task_cfg, 1, 0, record.dr)
    meta = task_meta(env)
    meta["observation"] = {
        "dim": int(state["obs_dim"]),
        "layout": [{"name": n, "width": int(w)} for n, w in state["obs_layout"]],
        "normalization": {"in_model": True, "mean": student.proprio_norm.mean.tolist(),
                          "std": student.proprio_norm.std.tolist(),
                          "clip": student.proprio_norm.clip}}
    meta["images"] = image_meta(student.image_shapes)
    cams = env.cfg.cameras
    assert cams is not None  # pixel_env gives the env its cameras
    meta["cameras"] = [{"name": c, "height": cams.height, "width": cams.width,
                        "depth": cams.depth, "render_mode": cams.mode,
                        "visual_randomization": record.inputs.visual}
                       for c in student.cameras]
    teacher = "scripted expert" if record.teacher is None else record.teacher
    trained_by = state.get("trained_by", "distill-pixels")
    meta = with_provenance(meta, None, {"pixel_student": str(path), "trained_by": trained_by,
                                    "teacher": teacher if trained_by == "distill-pixels"
                                    else state.get("teacher"),
                                    "teacher_success": state.get("teacher_success"),
                                    "student_success": state.get("student_success"),
                                    "policy": "pixel_student"})
    # convolutions over whole images accumulate more float32 rounding than an MLP: the ONNX
    # and TorchScript graphs agree with torch to ~1e-5 in actions of size 1
    return export_artifact(out, PixelGraph(student, list(student.image_shapes)), meta,
                           tolerance=1e-4)
