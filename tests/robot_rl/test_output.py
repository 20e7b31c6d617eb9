"""Output a person can read and copy (issue 51): lines that end where they should, in a log
file as in a terminal."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from robot_rl.recording.config import RecordConfig
from robot_rl.recording.record import record


def test_record_ends_its_status_line_before_the_summary_in_a_log(tmp_path: Path) -> None:
    """Off a terminal rich's Live leaves its last status line open: the summary used to run
    on from it ("last save 67 ms5 episodes (1000 frames) in ...")."""
    out = io.StringIO()
    console = Console(file=out, width=200)  # a file: not a terminal
    record(RecordConfig(task="push", teleop="expert", episodes=1, out=tmp_path / "demos",
                        episode_length=40), console=console)
    lines = out.getvalue().splitlines()
    assert lines[0] == f"recording 1 episode(s) of push (expert) into {tmp_path / 'demos'}"
    summary = [ln for ln in lines if "episodes (" in ln]
    assert summary and summary[-1].startswith("1 episodes (40 frames) in "), lines
    assert any(ln.startswith("episode ") and "last save" in ln for ln in lines), lines


def test_record_names_its_default_folder(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    record(RecordConfig(task="reach", teleop="expert", episodes=1, episode_length=10,
                        progress=False), console=Console(file=out, width=200))
    assert out.getvalue().splitlines()[0] == (
        "recording 1 episode(s) of reach (expert) into data/demos (the default; --out "
        "another folder)")
    assert (tmp_path / "data" / "demos" / "meta" / "info.json").is_file()


def test_a_distilled_students_path_is_one_line_and_a_failed_teacher_is_named() -> None:
    """The student's path used to be the table's title, wrapped at the terminal's width
    (``runs/push__sac__0__<time>/student.`` + ``pt``); a 0% teacher gave "student /
    teacher 0.000" without a word."""
    import types

    from robot_rl.cli.learn import _print_distilled

    path = "runs/push__sac__0__2026-11-30_16-59-23/student.pt"
    rate = types.SimpleNamespace
    report = types.SimpleNamespace(path=path, samples=6400, final_loss=1e-3,
                                   teacher=rate(success_rate=0.0),
                                   student=rate(success_rate=0.0), success_ratio=0.0)
    out = io.StringIO()
    _print_distilled(Console(file=out, width=60), "distilled student", report, "dr default")
    lines = out.getvalue().splitlines()
    assert f"distilled student: {path}" in lines, lines  # whole, on a line of its own
    text = " ".join(lines)
    assert "the teacher never succeeded" in text
    assert "0.000" not in text  # no ratio of a teacher that never succeeded


def test_a_refusal_names_the_flag_not_the_config_field(tmp_path: Path, capsys) -> None:
    import pytest

    from robot_rl.cli import main

    with pytest.raises(SystemExit) as e:
        main(["train", "--task", "reach", "--eval-episodes", "0",
              "--runs-dir", str(tmp_path / "runs")])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "--eval-episodes must be >= 1, got 0; the evaluations measure the run" in err, err
    assert "a larger --eval-every evaluates less often" in err and "eval_episodes" not in err


def test_eval_and_sim_rollout_write_videos_of_one_size() -> None:
    """``eval --video`` wrote 480x360 per env and ``sim rollout --video`` 640x480."""
    from robot_rl.cli.sim import SimRolloutConfig
    from robot_rl.kinds.eval_config import EvalConfig

    rollout = SimRolloutConfig()
    evaluation = EvalConfig(path=Path("runs/x"))
    assert (rollout.width, rollout.height) == (evaluation.width, evaluation.height) == (480, 360)


def test_a_misspelled_flag_gets_one_line_with_the_closest_flag(capsys) -> None:
    """It used to get tyro's 16-line box, listing the action and controller choices first."""
    import pytest

    from robot_rl.cli import main

    with pytest.raises(SystemExit) as e:
        main(["train", "--task", "push", "--timebudget", "60"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["robot-rl: error: unknown option --timebudget for robot-rl train; did you "
                   "mean --time-budget? (robot-rl train --help lists them)"], err


def test_a_run_is_named_after_its_method(tmp_path: Path) -> None:
    """Fine-tuning runs were named ``push__sac__0__<time>``, like training from scratch."""
    from robot_rl.checkpoint import create_run_dir
    from robot_rl.finetune.configs import DSRLConfig, FinetuneConfig, ResidualConfig
    from robot_rl.finetune.robot.configs import RobotFinetuneConfig
    from robot_rl.train_config import TrainConfig

    x = Path("x")
    names = [TrainConfig().method_name, FinetuneConfig(demos=x).method_name,
             FinetuneConfig(demos=x, method="wsrl").method_name,
             ResidualConfig(policy=x).method_name, DSRLConfig(policy=x).method_name,
             RobotFinetuneConfig(init=x).method_name]
    assert names == ["sac", "rlpd", "wsrl", "residual", "dsrl", "robot-sac"]
    cfg = FinetuneConfig(demos=x)
    run = create_run_dir(tmp_path, None, cfg.env_name, cfg.method_name, cfg.seed)
    assert run.name.startswith("push__rlpd__0__")


def test_a_training_log_gives_the_time_left_at_each_evaluation(tmp_path: Path) -> None:
    """Where no bar shows (a file, a CI log), each evaluation's line says how long is left
    at the limit that ends the run (``run_progress.Limit``, tested on its own above)."""
    import re

    from robot_rl.runner import Runner
    from tests.robot_rl.test_runner import tiny_config

    out = io.StringIO()
    cfg = tiny_config(tmp_path, total_steps=160, time_budget=1e6, eval_every=80)
    Runner(cfg, console=Console(file=out, width=200)).train()
    evals = [ln for ln in out.getvalue().splitlines() if " env steps, " in ln]
    assert evals, out.getvalue()
    assert all(re.match(r"\[ +[\d,]+/160 env steps, +\d+ s, \d+:\d\d left\]", ln)
               for ln in evals), evals


def test_data_replay_shows_each_episode_in_a_log(tmp_path: Path, capsys) -> None:
    """``robot-rl data replay`` replayed every episode before printing anything."""
    from robot_rl.cli import main

    record(RecordConfig(task="reach", teleop="expert", episodes=2, out=tmp_path / "d",
                        episode_length=10, progress=False), console=Console(file=io.StringIO()))
    capsys.readouterr()
    main(["data", "replay", str(tmp_path / "d")])
    lines = capsys.readouterr().out.splitlines()
    progress = [ln for ln in lines if ln.startswith("data replay [")]
    assert [ln.split(",")[0] for ln in progress] == [
        "data replay [0/2 episodes", "data replay [1/2 episodes", "data replay [2/2 episodes"]
    assert progress[0].endswith("] episode 0") and progress[-1].endswith("] done"), progress
