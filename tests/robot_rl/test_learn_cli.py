"""Tiny-budget runs of train -> eval (video) -> distill -> export -> eval artifact: the first
through the installed ``robot-rl`` executable, the rest through the same entry point in
process (each subprocess pays ~4 s of imports)."""

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


def run_here(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """``robot-rl ARGS`` through the CLI's entry point in this process; its stdout."""
    from robot_rl.cli import main

    capsys.readouterr()
    main(list(args))
    return capsys.readouterr().out


@pytest.mark.slow
def test_train_eval_distill_export_pipeline(tmp_path, capsys):
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

    out = run_here(capsys, "eval", str(r), "--episodes", "4", "--num-envs", "2", "--dr",
                   "strong", "--video", str(tmp_path / "eval.mp4"), "--width", "160",
                   "--height", "120")
    assert "success rate" in out and "safety/rate_limit" in out
    assert (tmp_path / "eval.mp4").stat().st_size > 1000

    out = run_here(capsys, "distill", str(r), "--iterations", "2", "--grad-steps", "20",
                   "--num-envs", "4", "--rollout-steps", "10", "--eval-episodes", "4",
                   "--no-progress")
    assert "student / teacher" in out and (r / "student.pt").is_file()
    run_here(capsys, "eval", str(r), "--student", "--episodes", "2", "--num-envs", "2")

    run_here(capsys, "export", str(r))
    art = r / "export"
    meta = json.loads((art / "policy.json").read_text())
    assert meta["task"] == "reach_hazard" and meta["safety"]["cost_critic"]
    out = run_here(capsys, "eval", str(art), "--episodes", "2", "--num-envs", "2")
    assert "artifact" in out
    assert "episode length (mean)" in out and " 25.0 " in out  # as trained

    # the predicted sim-to-real gap on an identified arm (heavier links), run and artifact
    from robot_rl.robots import get_robot
    from robot_rl.sim.identified import IdentifiedDynamics

    arm = get_robot("arm7")
    IdentifiedDynamics(robot="arm7", joint_names=tuple(arm.joint_names),
                       values={"link_mass": (1.5,) * arm.num_joints}).save(tmp_path / "arm.json")
    for policy in (r, art):
        out = run_here(capsys, "sysid", "gap", str(policy), str(tmp_path / "arm.json"),
                       "--episodes", "2", "--num-envs", "2")
        assert "predicted gap: success" in out and "safety/" in out, out
        for arm in ("nominal", "identified"):  # each arm's evaluation shows its progress
            assert f"sysid gap: the {arm} arm [2/2 episodes" in out, out

    run_here(capsys, "export", str(r), "--policy", "teacher", "--out",
             str(tmp_path / "teacher"))
    assert (tmp_path / "teacher" / "policy.onnx").is_file()


def test_help_lists_the_learning_commands(cli):
    out = run("--help")
    for name in ("train", "eval", "distill", "export"):
        assert f"robot-rl {name}" in out.stdout
    out = cli("train", "--help")
    assert out.returncode == 0
    for option in ("--safety", "--resume", "--sac.num-critics", "--time-budget"):
        assert option in out.stdout
