"""The pixel student file: a ``PixelPolicy`` with what it sees and where it came from.

    save_pixel_student(path, policy, inputs, task_cfg, env, state_terms, dr="default",
                       config=to_dict(cfg), trained_by="distill-pixels")
    policy, state = load_pixel_student(path)
    record = student_record(state)       # its inputs, networks, state weight and dr

``robot-rl distill-pixels`` writes it (``--out``), ``robot-rl train-pixels`` starts from one
(``--student``) and writes its actor as one (``pixel_policy.pt`` in the run), and
``robot-rl export`` makes an artifact of it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import torch

from robot_rl.checkpoint import CheckpointError, save_atomic
from robot_rl.config_io import from_dict, nest, to_dict
from robot_rl.sim.configs import DRPreset
from robot_rl.sim.env import BatchedEnv
from robot_rl.vision.configs import PixelInputs, PixelPolicyConfig, saved_policy
from robot_rl.vision.student import PixelPolicy

PIXEL_STUDENT_FORMAT = "robot_rl.pixel_student"


@dataclasses.dataclass
class StudentRecord:
    """What a pixel student file says about its student."""

    task: str
    inputs: PixelInputs
    policy: PixelPolicyConfig
    state_weight: float
    """The weight its state head was trained with (0: no state head)."""
    dr: DRPreset
    """The dynamics randomization it learned under."""
    teacher: str | None
    """The run it was distilled from (None: the task's scripted expert, or none)."""


def save_pixel_student(path: Path, student: PixelPolicy, inputs: PixelInputs, task_cfg: Any,
                       env: BatchedEnv, state_terms: list[str], *, dr: DRPreset,
                       state_weight: float, config: dict[str, Any], **extra: Any) -> None:
    """Write a pixel student file: the policy, its inputs and networks, the task, the config
    of the command that made it (``config``) and ``extra`` entries (``student_success``,
    ``trained_by``, ...)."""
    layout = [(n, w) for n, w in env.obs_layout if n not in inputs.drop_terms]
    save_atomic({"format": PIXEL_STUDENT_FORMAT, "inputs": to_dict(inputs),
                 "policy": to_dict(student.cfg), "state_weight": state_weight, "dr": dr,
                 "config": config, "task": to_dict(task_cfg),
                 "image_shapes": env.image_shapes, "env_obs_layout": env.obs_layout,
                 "obs_layout": layout, "obs_dim": student.proprio_dim, "act_dim": env.act_dim,
                 "state_terms": state_terms, "state_dim": student.state_dim,
                 "state_dict": student.state_dict(), **extra}, path)


def student_record(state: dict[str, Any]) -> StudentRecord:
    """The record of a loaded pixel student file (files written before ``inputs`` had its
    fields, and the policy's, flat in ``config``)."""
    config = state["config"]
    inputs = state.get("inputs") or nest(config, "inputs", PixelInputs)["inputs"]
    policy = saved_policy(state.get("policy") or config["policy"])
    dr = state.get("dr") or config.get("dr") or config.get("dagger", {}).get("dr", "default")
    teacher = config.get("teacher")
    return StudentRecord(task=str(state["task"]["name"]), inputs=from_dict(PixelInputs, inputs),
                         policy=from_dict(PixelPolicyConfig, policy),
                         state_weight=float(state.get("state_weight",
                                                      config.get("state_weight", 1.0))),
                         dr=dr, teacher=None if teacher is None else str(teacher))


def load_pixel_student(path: str | Path) -> tuple[PixelPolicy, dict[str, Any]]:
    """A saved pixel student and its file's contents (``student_record`` reads them)."""
    try:
        state = torch.load(Path(path), map_location="cpu", weights_only=False)
        if state.get("format") != PIXEL_STUDENT_FORMAT:
            raise ValueError(f"not a {PIXEL_STUDENT_FORMAT} file")
        record = student_record(state)
        shapes = {k: tuple(v) for k, v in state["image_shapes"].items()}
        policy = PixelPolicy(record.policy, shapes, state["obs_dim"], state["act_dim"],
                             state_dim=state.get("state_dim", 0), load_pretrained=False)
        policy.load_state_dict(state["state_dict"])
    except Exception as e:
        raise CheckpointError(f"cannot read pixel student {path}: {type(e).__name__}: {e}"
                              ) from None
    return policy.eval(), state
