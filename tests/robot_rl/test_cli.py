"""The CLI's commands with tiny budgets; bad input gives one clear line.

``--help`` runs in a subprocess (the entry point as a user starts it); the rest run through
``robot_rl.cli.main`` in this process (each subprocess would pay ~4 s of imports), with the
same wide console and the exit status and streams a user would see."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import av
import pytest


def _cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "robot_rl.cli", *args], capture_output=True,
                          text=True, timeout=timeout, env={"COLUMNS": "200", **_env()})


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "COLUMNS"}


def test_help_lists_commands() -> None:
    out = _cli("--help")
    assert out.returncode == 0
    for cmd in ("robot-rl sim info", "robot-rl sim rollout", "robot-rl bench sim",
                "robot-rl train-pixels"):
        assert cmd in out.stdout


def test_the_help_summaries_name_exactly_the_commands() -> None:
    from robot_rl.cli import GROUP_COMMANDS, _commands, _top_level, summaries, top_level

    assert list(_top_level()) == list(top_level())
    assert {g: list(c) for g, c in _commands().items()} == GROUP_COMMANDS
    named = list(top_level()) + [f"{g} {n}" for g, ns in GROUP_COMMANDS.items() for n in ns]
    assert sorted(named) == sorted(summaries())


def test_sim_info(cli) -> None:
    out = cli("sim", "info")
    assert out.returncode == 0, out.stderr
    for word in ("arm7", "joint4", "87", "reach", "push", "lift", "pusher", "table_contact"):
        assert word in out.stdout


@pytest.mark.slow
def test_sim_rollout_with_video(tmp_path: Path, cli) -> None:
    video = tmp_path / "lift.mp4"
    out = cli("sim", "rollout", "--task", "lift", "--policy", "expert", "--num-envs", "2",
               "--episodes", "2", "--video", str(video), "--video-envs", "1",
               "--width", "96", "--height", "72")
    assert out.returncode == 0, out.stderr
    assert "success rate" in out.stdout and "100%" in out.stdout
    with av.open(str(video)) as container:
        stream = container.streams.video[0]
        # lift's 150 control steps at 50 Hz, every second one: 25 frames a second
        assert stream.width == 96 and stream.frames == 75 and stream.average_rate == 25


def test_sim_rollout_random_policy_with_randomization(cli) -> None:
    out = cli("sim", "rollout", "--task", "push", "--policy", "random", "--num-envs", "4",
               "--episodes", "4", "--dr", "strong")
    assert out.returncode == 0, out.stderr
    assert "episode cost" in out.stdout


@pytest.mark.slow
def test_bench_sim_tiny_budget(cli) -> None:
    out = cli("bench", "sim", "--num-envs", "4", "--seconds", "0.05", "--repeats", "1",
               "--tasks", "reach", "--no-peers")
    assert out.returncode == 0, out.stderr
    assert "limit" in out.stdout and "ours / limit" in out.stdout and "reach" in out.stdout
    # Off a terminal each figure is announced on a line of its own (it used to run a minute
    # between its two tables without a word).
    progress = [ln for ln in out.stdout.splitlines() if ln.startswith("bench sim [")]
    assert [ln.split(" figures")[0] for ln in progress] == [
        f"bench sim [{k}/6" for k in range(7)], progress
    assert progress[1].endswith("] pusher, 4 envs: ours")
    assert progress[-1].endswith("] done")


@pytest.mark.parametrize(("args", "message"), [
    (("sim", "rollout", "--task", "nope"), "unknown task 'nope'; valid tasks: lift, push"),
    (("sim", "rollout", "--num-envs", "0"), "num_envs must be a positive integer"),
    (("sim", "rollout", "--task", "pusher"), "task 'pusher' has no scripted expert"),
    (("sim", "rollout", "--video", "out.avi", "--episodes", "1"), "must end in .mp4"),
    (("sim", "info", "--robot", "nope"), "unknown robot 'nope'; valid robots: arm7"),
    (("sim", "frobnicate"), "unknown command 'robot-rl sim frobnicate'"),
    (("teleport",), "unknown command 'teleport'"),
])
def test_bad_input_is_one_line_no_traceback(args: tuple[str, ...], message: str, cli) -> None:
    out = cli(*args)
    assert out.returncode == 2
    assert message in out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_bench_sim_on_the_warp_backend_prints_the_gpu_table(cli) -> None:
    """``robot-rl bench sim --backend warp`` on Warp's CPU device (no GPU here): the table's
    rows and columns, measured figures in every cell."""
    pytest.importorskip("mujoco_warp", reason="the warp backend comes with the gpu extra")
    out = cli("bench", "sim", "--backend", "warp", "--device", "cpu", "--num-envs", "2",
              "--tasks", "reach", "--seconds", "0.1", "--repeats", "1")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    for word in ("mjw alone (limit)", "end to end", "memory / world", "warp", "cpu (", "KiB"):
        assert word in text, word
    rows = [line for line in text.splitlines() if line.strip("│ ").startswith(("warp", "cpu"))]
    assert len(rows) == 2 and "n/a" not in text


HEAVY = ("torch", "mujoco", "numba", "pyarrow", "scipy", "rerun", "av", "ray", "rclpy", "gymnasium")
"""What ``--help`` must not import: each costs from a tenth of a second (mujoco) to
seconds (torch); configs live in modules without them (docs/architecture.md)."""

_HELP_IMPORTS = """
import contextlib, io, sys
from robot_rl.cli import every_command, main
heavy = sys.argv[1].split(",")
for words in every_command():
    try:
        with contextlib.redirect_stdout(io.StringIO()) as out:
            main([*words, "--help"])
    except SystemExit as e:
        assert not e.code, (words, e.code)
    assert "--help" in out.getvalue() or "usage" in out.getvalue(), words
    loaded = [m for m in heavy if m in sys.modules]
    print(" ".join(words), ",".join(loaded) or "-")
"""


@pytest.mark.slow
def test_help_of_every_command_imports_no_heavy_module() -> None:
    """``robot-rl COMMAND --help`` reads the command's config alone: none of them imports
    torch, MuJoCo, numba or pyarrow (they took 4-5 s each when configs lived beside the
    code that runs them). One process walks every command, so the first command that
    imports one is named."""
    out = subprocess.run([sys.executable, "-c", _HELP_IMPORTS, ",".join(HEAVY)],
                         capture_output=True, text=True, timeout=300, env=_env())
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    from robot_rl.cli import every_command

    assert len(lines) == len(every_command()), out.stdout
    assert [ln for ln in lines if not ln.endswith(" -")] == [], out.stdout
