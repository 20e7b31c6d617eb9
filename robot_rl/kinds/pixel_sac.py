"""The pixel SAC kind: ``robot-rl train-pixels``, asymmetric SAC on cameras (critics on the
simulator's state, the actor on images and proprioception), from scratch or from a pixel
student. Its checkpoints also write the pixel policy file, which is what ships."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from rich.console import Console

from robot_rl.errors import ConfigError
from robot_rl.kinds.base import EvalOptions, Evaluation, ExportConfig, Exported, Kind, Run
from robot_rl.kinds.command import Command
from robot_rl.kinds.training import train_runner


class PixelSACKind(Kind):
    name = "pixel_sac"

    def commands(self) -> dict[str, Command]:
        from robot_rl.vision.configs import PixelTrainConfig

        return {"train-pixels": Command(PixelTrainConfig, train)}

    def evaluation(self, run: Run, opts: EvalOptions) -> Evaluation:
        from robot_rl.vision.pixel_runner import evaluate_pixel_agent, load_pixel_run

        if opts.dr is not None:
            raise ConfigError("--dr: a train-pixels run is evaluated as trained")
        if opts.student:
            raise ConfigError("--student: a train-pixels run ships its pixel policy; it has "
                              "no distilled student")
        agent, cfg, env, cols = load_pixel_run(run.checkpoint, opts.num_envs, opts.seed)
        return Evaluation(env, f"{cfg.task} / pixel sac (cameras {', '.join(cfg.inputs.cameras)})",
                          lambda n, **kw: evaluate_pixel_agent(agent, env, n, cols,
                                                               gate=opts.gate, **kw))

    def export(self, run: Run, cfg: ExportConfig) -> Exported:
        from robot_rl.vision.pixel_runner import PIXEL_POLICY

        # the pixel policy file its checkpoints write
        return export_pixel_file(dataclasses.replace(cfg, run=run.dir / PIXEL_POLICY,
                                                     out=cfg.out or run.dir / "export"))


def train(cfg: Any) -> None:
    """``robot-rl train-pixels``."""
    from robot_rl.vision.pixel_runner import PIXEL_POLICY, PixelRunner

    runner = train_runner(cfg, PixelRunner, lambda c: f"{c.task} / pixel sac" +
                          (" from a student" if cfg.student else ""))
    if runner is not None:
        Console().print(f"pixel policy (export it with robot-rl export {runner.run_dir}): "
                        f"{runner.run_dir / PIXEL_POLICY}")


def is_pixel_file(path: Path) -> bool:
    """``path`` is a pixel policy file (``robot-rl distill-pixels`` writes one, and a
    train-pixels run beside its checkpoints)."""
    import torch

    from robot_rl.vision.student_file import PIXEL_STUDENT_FORMAT

    if not path.is_file():
        return False
    try:
        state = torch.load(path, map_location="cpu", weights_only=False)
    except Exception:
        return False
    return isinstance(state, dict) and state.get("format") == PIXEL_STUDENT_FORMAT


def export_pixel_file(cfg: ExportConfig) -> Exported:
    """A pixel policy file's artifact: its graph takes the images next to the
    observation."""
    from robot_rl.vision.export import export_pixel_student

    if cfg.policy == "teacher":
        raise ConfigError(f"{cfg.run} is a pixel policy; it has no teacher in it (a "
                          "distill-pixels teacher is exported from its own run)")
    out = export_pixel_student(cfg.run, cfg.out or cfg.run.with_suffix(""))
    return Exported(out, f"pixel student {cfg.run}")


KIND = PixelSACKind()
