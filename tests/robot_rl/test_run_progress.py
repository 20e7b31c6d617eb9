"""The training bar (robot_rl/run_progress.py, RunLoop): its fraction and time left follow
whichever limit ends the run, and its line fits an 80-column terminal."""

from __future__ import annotations

import io
import types
from pathlib import Path

import pytest
from rich.console import Console

from robot_rl.run_progress import Limit, clock, short_count
from robot_rl.run_state import RunState, state_field
from robot_rl.train_session import TrainSession


def test_the_time_budget_binds_when_it_ends_the_run_first() -> None:
    # issue 51's example: push, 2,000,000 total steps, --time-budget 60, 285 env steps/s
    half = Limit.of(10_000, 2_000_000, 30.0, 60.0, 333.0)
    assert half.binding == "time" and half.fraction == pytest.approx(0.5)
    assert half.left == pytest.approx(30.0)  # not 1.96M / 333 s = 1:38:00
    end = Limit.of(20_032, 2_000_000, 60.0, 60.0, 285.0)
    assert end.binding == "time" and end.fraction == 1.0 and end.left == 0.0
    # the steps end it first: 1.9M of 2M at 20k/s, 100 s of a 1000-s budget
    steps = Limit.of(1_900_000, 2_000_000, 100.0, 1000.0, 20_000.0)
    assert steps.binding == "steps" and steps.fraction == pytest.approx(0.95)
    assert steps.left == pytest.approx(5.0)
    none = Limit.of(0, 1000, 0.0, None, None)  # no budget, no rate yet
    assert none.binding == "steps" and none.fraction == 0.0 and none.left is None


def test_counts_and_clocks_read_short() -> None:
    assert [short_count(n) for n in (2_000_000, 400_000, 1_500_000, 12_345, 999)] == \
        ["2M", "400k", "1.5M", "12.3k", "999"]
    assert clock(3725.4) == "1:02:05" and clock(90) == "1:30" and clock(None) == "-:--"


class _Runner:
    """What TrainSession reads of a runner before it trains: its state (``RunState``) and
    the runner's attributes of it."""

    env_steps = state_field("env_steps")
    elapsed = state_field("elapsed")
    history = state_field("history")
    writer = state_field("writer")

    def __init__(self, tmp: Path, console: Console, budget: float):
        self.cfg = types.SimpleNamespace(
            env_name="reach_hazard", method_name="sac", total_steps=2_000_000, target_evals=1,
            target_success=None, time_budget=budget, checkpoint_every=1e9, progress=True,
            log_every=1000, eval_every=10_000, keep_every=None)
        self.console, self.run_dir = console, tmp
        self.state = RunState(next_eval=10_000)

    def save(self) -> Path:
        return self.run_dir


def test_the_training_bar_fits_80_columns_and_counts_down_the_budget(tmp_path) -> None:
    out = io.StringIO()
    console = Console(file=out, width=80, force_terminal=True, color_system=None)
    runner = _Runner(tmp_path, console, budget=60.0)
    session = TrainSession(runner)  # type: ignore[arg-type]
    session.__enter__()
    try:
        runner.env_steps, runner.elapsed = 10_000, 30.0  # 333 env steps/s, half the budget
        session.show(sps="333", success="12%", cost="0.12")
        lines = console.render_lines(session.progress.get_renderable(), console.options,
                                     pad=False)
    finally:
        session.__exit__(KeyboardInterrupt, KeyboardInterrupt(), None)
    text = ["".join(seg.text for seg in line) for line in lines]
    assert len(text) == 1, text  # one line, nothing wrapped
    line = text[0].rstrip()
    assert len(line) <= 80 and "…" not in line, line
    assert "reach_hazard sac" in line and "10k/2M steps" in line and "333 sps" in line
    assert "success 12%" in line and "cost 0.12" in line
    assert "0:30 left" in line, line  # the budget's half, not 1.99M steps at 333/s


def test_long_work_writes_a_line_per_item_to_a_log_and_none_to_a_terminal(monkeypatch) -> None:
    """``WorkProgress`` (bench sim, bench controllers, eval): off a terminal each item is
    announced on its own line, running counts at most every ``log_every`` seconds, and the
    end once; in a terminal the bar is transient and leaves no line behind."""
    from robot_rl import work_progress

    now = [0.0]
    monkeypatch.setattr(work_progress.time, "perf_counter", lambda: now[0])
    out = io.StringIO()
    with work_progress.WorkProgress(Console(file=out, width=80), "bench sim", 3,
                                    "figures") as work:
        work.start("pusher, 16 envs: ours")
        now[0] = 61.0
        work.advance()
        work.start("reach: memory per env")
        work.advance()
        for k in range(1, 5):  # a running count, 4 s apart: a line each 10 s at most
            now[0] += 4.0
            work.update(2 + k // 4, f"success {k}")
    assert out.getvalue().splitlines() == [
        "bench sim [0/3 figures, 0:00] pusher, 16 envs: ours",
        "bench sim [1/3 figures, 1:01] reach: memory per env",
        "bench sim [2/3 figures, 1:13] success 3",
        "bench sim [3/3 figures, 1:17] done",
    ]
    tty = io.StringIO()
    with work_progress.WorkProgress(Console(file=tty, width=80, force_terminal=True),
                                    "eval", 2, "episodes") as work:
        work.start("running")
        work.update(2)
    assert "eval [" not in tty.getvalue()


def test_a_budgeted_run_says_what_its_wall_time_holds_beyond_the_budget(tmp_path,
                                                                        monkeypatch) -> None:
    """A 60-s --time-budget run took 79 s without a word: the budget counts training, not
    the start-up before it or the last evaluation and saving after it."""
    import robot_rl
    from robot_rl import run_loop

    now = [100.0]
    monkeypatch.setattr(run_loop.time, "perf_counter", lambda: now[0])
    monkeypatch.setattr(robot_rl, "_command_start", 93.0)  # 7 s of imports and set-up
    out = io.StringIO()
    runner = _Runner(tmp_path, Console(file=out, width=80), budget=60.0)
    runner.history = [{"env_steps": 20_000, "success_rate": 0.0, "episode_cost": 0.0}]

    def evaluate_now() -> None:  # the last evaluation and the save: 5 s
        now[0] += 5.0
        runner.history.append({"env_steps": 21_000, "success_rate": 0.0,
                               "episode_cost": 0.0})

    runner.evaluate_now = evaluate_now  # type: ignore[attr-defined]
    session = TrainSession(runner)  # type: ignore[arg-type]
    with session:
        now[0] += 60.0
        runner.env_steps, runner.elapsed = 21_000, 60.0
    text = " ".join(out.getvalue().split())
    assert "the time budget counts training: 7 s of start-up before it, 5 s for the last " \
           "evaluation and saving after it" in text, text
    # a second run in the same process: its start-up is not the command's
    out.truncate(0)
    runner.history = runner.history[:1]
    with TrainSession(runner):  # type: ignore[arg-type]
        now[0] += 60.0
    text = " ".join(out.getvalue().split())
    assert "the time budget counts training: 5 s for the last evaluation" in text, text
