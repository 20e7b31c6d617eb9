"""Tiny-budget subprocess runs of train -> eval (video) -> distill -> export -> eval artifact."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROBOT_RL = str(Path(sys.executable).parent / "robot-rl")


def run(*args: str) -> subprocess.CompletedProcess:
    out = subprocess.run([ROBOT_RL, *args], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, f"robot-rl {' '.join(args)}\n{out.stdout}\n{out.stderr}"
    return out


@pytest.mark.slow
def test_train_eval_distill_export_pipeline(tmp_path):
    run("train", "--task", "reach_hazard", "--safety", "both", "--num-envs", "4",
        "--total-steps", "400", "--env.episode-length", "25", "--eval-episodes", "4",
        "--runs-dir", str(tmp_path), "--run-name", "r", "--no-progress",
        "--sac.learning-starts", "100", "--sac.batch-size", "32",
        "--sac.actor-hidden", "32", "32", "--sac.critic-hidden", "32", "32",
        "--safety-critic.hidden", "32", "32")
    r = tmp_path / "r"
    assert (r / "learning_curve.png").stat().st_size > 1000
    cfg = json.loads((r / "config.json").read_text())
    assert cfg["task"] == "reach_hazard" and cfg["safety"] == "both"

    out = run("eval", str(r), "--episodes", "4", "--num-envs", "2", "--dr", "strong",
              "--video", str(tmp_path / "eval.mp4"), "--width", "160", "--height", "120")
    assert "success rate" in out.stdout and "safety/rate_limit" in out.stdout
    assert (tmp_path / "eval.mp4").stat().st_size > 1000

    out = run("distill", str(r), "--iterations", "2", "--grad-steps", "20", "--num-envs", "4",
              "--rollout-steps", "10", "--eval-episodes", "4", "--no-progress")
    assert "student / teacher" in out.stdout and (r / "student.pt").is_file()
    run("eval", str(r), "--student", "--episodes", "2", "--num-envs", "2")

    run("export", str(r))
    art = r / "export"
    meta = json.loads((art / "policy.json").read_text())
    assert meta["task"] == "reach_hazard" and meta["safety"]["cost_critic"]
    out = run("eval", str(art), "--episodes", "2", "--num-envs", "2")
    assert "artifact" in out.stdout
    assert "episode length (mean)" in out.stdout and " 25.0 " in out.stdout  # as trained

    run("export", str(r), "--policy", "teacher", "--out", str(tmp_path / "teacher"))
    assert (tmp_path / "teacher" / "policy.onnx").is_file()


def test_help_lists_the_learning_commands():
    out = run("--help")
    for name in ("train", "eval", "distill", "export"):
        assert f"robot-rl {name}" in out.stdout
    out = run("train", "--help")
    for option in ("--safety", "--resume", "--sac.num-critics", "--time-budget"):
        assert option in out.stdout
