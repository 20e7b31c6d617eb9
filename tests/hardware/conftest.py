"""Shared fixtures: a competent reach policy artifact (cloned from the scripted expert in a
few seconds) and a scripted Robot for deterministic runtime tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from robot_rl.hardware.robot import HardLimits, JointCommand, JointReading, Robot
from robot_rl.robots import get_robot


@pytest.fixture(scope="session")
def reach_artifact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from robot_rl.distill import clone_expert
    from robot_rl.distill.configs import DaggerConfig, DistillConfig
    from robot_rl.export.artifact import artifact_meta, export_artifact

    cfg = DistillConfig(run=Path("-"),
                        dagger=DaggerConfig(iterations=4, grad_steps=300, num_envs=16, dr="off",
                                            progress=False))
    student, env = clone_expert("reach", cfg)
    out = tmp_path_factory.mktemp("artifacts") / "reach"
    return export_artifact(out, student, artifact_meta(env, student, None,
                                                       {"source": "expert clone (tests)"}))


class ScriptedRobot(Robot):
    """A Robot whose readings the test sets and whose commands it inspects."""

    def __init__(self, robot: str = "arm7", interface: str = "position"):
        super().__init__()
        spec = get_robot(robot)
        self.spec = spec
        self.joint_names = spec.joint_names
        self.interface = interface  # type: ignore[assignment]
        self.limits = HardLimits.of(spec)
        self.reading: JointReading | None = None
        self.sent: list[JointCommand] = []

    def set(self, q: np.ndarray, qd: np.ndarray | None = None, stamp: float = 0.0) -> None:
        self.reading = JointReading(np.asarray(q, float), np.zeros(len(q)) if qd is None
                                    else np.asarray(qd, float), stamp)

    def connect(self) -> None:
        pass

    def close(self) -> None:
        pass

    def _read(self) -> JointReading | None:
        return self.reading

    def _write(self, cmd: JointCommand) -> None:
        self.sent.append(cmd)


@pytest.fixture
def scripted_robot() -> ScriptedRobot:
    return ScriptedRobot()


@pytest.fixture(scope="session")
def pixel_artifact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An (untrained) push pixel student seeing front + wrist RGB-D at 24x24, exported."""
    from rich.console import Console

    from robot_rl.distill.pixels import distill_pixels
    from robot_rl.vision.export import export_pixel_student
    from tests.robot_rl.flow_runs import tiny_pixel_config

    out = tmp_path_factory.mktemp("pixel")
    distill_pixels(tiny_pixel_config(out / "s.pt", rollout_steps=4), Console(quiet=True))
    return export_pixel_student(out / "s.pt", out / "s")
