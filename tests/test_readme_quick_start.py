"""The README's quick start, run as written with tiny budgets (issue 51): every command of its
``bash`` blocks either runs here (in README order, in a fresh folder, each one on what the
earlier ones made) or is skipped with what it needs that a test machine lacks, and what each
prints reads right in a log file 80 columns wide: no traceback, no ``nan``, every ``runs/`` and
``data/`` path it names whole (not wrapped) and on disk, no line wider than the terminal.

A command added to the README, or one changed there, fails here until this table knows it."""

from __future__ import annotations

import dataclasses
import re
import shlex
import traceback
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
WIDTH = 80


@dataclasses.dataclass(frozen=True)
class Tiny:
    """Run a README command with tiny budgets: each ``swap`` replaces README text with what
    runs here, ``add`` appends flags (step caps, small evaluations), ``before`` is a
    ``robot-rl`` command run first (checked the same way) to make what the command reads."""

    add: str = ""
    swap: tuple[tuple[str, str], ...] = ()
    before: str = ""


@dataclasses.dataclass(frozen=True)
class Skip:
    """A README command that needs what a test machine lacks; ``reason`` says what, and
    where else it is tested."""

    reason: str


# SAC runs of a few hundred env steps that still evaluate and save a checkpoint.
TINY_SAC = "--total-steps 200 --num-envs 4 --eval-every 200 --eval-episodes 2"
# One short DAgger iteration, a small comparison of student and teacher.
TINY_DAGGER = "--iterations 1 --rollout-steps 20 --num-envs 2 --grad-steps 2 --eval-episodes 2"

QUICK_START: dict[str, Tiny | Skip] = {
    # Train, evaluate, export, deploy
    "robot-rl train --task reach --time-budget 300": Tiny(add=TINY_SAC),
    "robot-rl eval runs/reach__sac__0__<time> --episodes 50 --video eval.mp4 --dr strong":
        Tiny(swap=(("--episodes 50", "--episodes 2"),), add="--num-envs 2"),
    "robot-rl distill runs/reach__sac__0__<time>": Tiny(add=TINY_DAGGER),
    "robot-rl export runs/reach__sac__0__<time>": Tiny(),
    "robot-rl deploy runs/demo/reach/export --robot sim --duration 10":
        Tiny(swap=(("--duration 10", "--duration 1"),)),
    # Demonstrations, behaviour cloning, fine-tuning
    "robot-rl record --task push --teleop keyboard --episodes 20 --out data/push --view":
        Tiny(swap=(("--teleop keyboard", "--teleop expert"), ("--episodes 20", "--episodes 2"),
                   (" --view", ""))),  # no person at a keyboard, no display
    "robot-rl finetune --demos data/push --task push --method rlpd --time-budget 1800":
        Tiny(add=TINY_SAC),
    "robot-rl record --task push --teleop expert --expert-style multimodal-human "
    "--episode-length 300 --success-only --episodes 50 --out data/push-mh":
        Tiny(swap=(("--episodes 50", "--episodes 2"),)),
    "robot-rl bc --demos data/push-mh --algo bc-flow --mirror":
        Tiny(add="--steps 10 --eval-episodes 2 --eval-envs 2"),
    "robot-rl residual runs/push__bc-flow__0__<time> --mirror --time-budget 1800":
        Tiny(add=TINY_SAC),
    # Distil to a student
    "robot-rl distill runs/push__residual__0__<time> --sees all": Tiny(add=TINY_DAGGER),
    "robot-rl export runs/push__residual__0__<time> --policy student": Tiny(),
    "robot-rl distill-pixels --task push":
        Tiny(add="--size 24 --iterations 1 --num-envs 2 --rollout-steps 6 --grad-steps 2 "
                 "--batch-size 8 --eval-episodes 2 --action-steps 2 --policy-iterations 0 "
                 "--action-batch 8 --policy.features 8 --policy.hidden 16"),
    "robot-rl export runs/pixel_student.pt": Tiny(),
    "robot-rl eval runs/pixel_student": Tiny(add="--episodes 2 --num-envs 2"),
    # ROS 2 and a real arm
    "robot-rl sysid record --out data/my_arm --robot ros":
        Skip("a ROS 2 arm behind ros2_control (tests/hardware/test_sysid_node.py records "
             "through ROS 2; the fit below reads the simulated arm's recording)"),
    "robot-rl sysid fit data/my_arm --out my_arm.json":
        Tiny(before="robot-rl sysid record --out data/my_arm --record.excitation.duration 3 "
                    "--record.excitation.step-size 0",  # the simulated arm's excitation
             add="--fit.params link_mass --fit.shared link_mass --fit.population 4 "
                 "--fit.generations 2 --fit.survey 1 --fit.restarts 1 --replay.segment 0.5 "
                 "--replay.max-delay 1"),
    "robot-rl train --task reach --env.identified my_arm.json": Tiny(add=TINY_SAC),
    "robot-rl-teleop-node --ros-args --params-file launch/config/arm7.yaml -p task:=reach "
    "-p out:=data/real":
        Skip("a ROS 2 node's entry point, driven from a terminal on a ROS 2 arm "
             "(tests/hardware/test_teleop_node.py)"),
    "robot-rl deploy runs/demo/reach/export --robot sim --ros":
        Skip("ROS 2 (rclpy, DDS): two node processes until Ctrl-C, whose logs bypass this "
             "capture (tests/hardware/test_ros_nodes.py runs the same two nodes)"),
    "ros2 launch robot_rl deploy.launch.py artifact:=runs/demo/reach/export":
        Skip("ros2 launch in a colcon workspace (tests/hardware/test_launch_files.py checks "
             "the launch files)"),
    # Scale out on Ray, fine-tune on the robot
    "robot-rl train --task reach --ray auto --env-runners 4":
        Skip("starts a Ray cluster of 4 env-runner actors, too heavy for 2 cores "
             "(tests/robot_rl/test_cluster.py trains on a two-node Ray cluster)"),
    "robot-rl finetune-robot --init runs/reach__sac__0__<time> --robot.teleop spacemouse "
    "--robot.sim.mass-scale 1.6":
        Skip("a SpaceMouse and a Ray cluster (tests/robot_rl/test_cluster.py fine-tunes on "
             "the simulated arm over Ray; tests/robot_rl/test_robot_loop.py the robot actor)"),
    # Your arm, your env
    "robot-rl train --task reach --env.robot so5": Tiny(add=TINY_SAC),
    "robot-rl robot import arm.urdf --name mine --tip-link tool0":
        Tiny(before="robot-rl robot urdf ur6 --out arm.urdf",  # a URDF to import
             swap=(("--tip-link tool0", "--tip-link ee"),)),  # ur6's URDF names its tip ee
    "robot-rl train --gym Pusher-v5": Tiny(add=TINY_SAC),
    "robot-rl deploy ART --robot ros --ros-params-file launch/config/franka.yaml":
        Skip("a Franka arm behind ros2_control (tests/hardware/test_arm_profiles.py deploys "
             "on the profiles' simulated arms)"),
}
"""Every command of the README's quick start, in README order: how it runs here, or why
not."""


def quick_start_commands(text: str) -> list[str]:
    """The commands of the ``bash`` blocks of the README's ``## Quick start`` section: ``\\``
    continuations joined, ``# comments`` dropped, ``a && b`` split in two."""
    section = text.split("\n## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = []
    for block in re.findall(r"^```bash\n(.*?)^```", section, re.S | re.M):
        for line in re.sub(r"\\\n", " ", block).splitlines():
            line = re.sub(r"(^|\s)#.*", "", line)
            commands += [" ".join(c.split()) for c in line.split(" && ") if c.strip()]
    return commands


def runs_argv(command: str, how: Tiny) -> list[str]:
    """``command`` as it runs here: its swaps made and flags added, split into arguments
    (placeholders still in)."""
    for old, new in how.swap:
        assert old in command, f"{command!r} has no {old!r} to swap"
        command = command.replace(old, new)
    return shlex.split(f"{command} {how.add}")


def resolve(arg: str) -> str:
    """A placeholder of the README as what an earlier command made (the working directory
    is the fresh folder): ``runs/X__<time>`` the newest run named so; the demo's artifact
    ``runs/demo/reach/export`` (``make demo``) and ``ART`` the export of the reach run the
    first block trained."""
    if arg in ("runs/demo/reach/export", "ART"):
        exports = sorted(Path("runs").glob("reach__sac__0__*/export"))
        assert exports, f"no exported reach run for {arg}"
        return exports[0].as_posix()
    if "<time>" in arg:
        prefix, rest = arg.split("<time>", 1)
        runs = sorted(p for p in Path(prefix).parent.glob(Path(prefix).name + "*")
                      if p.is_dir())
        assert runs, f"no run {prefix}* for {arg}"
        return runs[-1].as_posix() + rest
    return arg


PATH = re.compile(r"(?<![\w/.~-])(?:runs|data)/[^\s'\"`,;]*")
"""A relative path into the folders runs and data write, as a command prints it."""
LOG_LINE = re.compile(r"^\[[^\]]*\d+/[\d,]+[^\]]*\]  ")
"""A log record of a long loop, ``[   200/200 env steps,  1 s, 0:00 left]  success ...`` or
``[distill iteration 1/1, 0 s]  beta ...``: one line per evaluation or iteration by design,
however wide, so a log can be read (and grepped) a record a line
(tests/robot_rl/test_output.py reads them so)."""


def output_problems(code: int, out: str, err: str) -> list[str]:
    """What is wrong with what a command printed (``out``, ``err``) and its exit status
    ``code``, one line per problem; none where it reads right in a log 80 columns wide."""
    problems = [] if code == 0 else [f"exit status {code}"]
    text = out + err
    if "Traceback" in text:
        problems.append("a traceback")
    problems += [f"nan shown: {line!r}" for line in text.splitlines()
                 if re.search(r"\bnan\b", line, re.I)]
    here = re.escape(str(Path.cwd()))
    for token in PATH.findall(text) + re.findall(here + r"/[^\s'\"`,;]*", text):
        path = token.rstrip(".:)")
        if not Path(path).exists():
            problems.append(f"a path not on disk (cut where it wrapped?): {path}")
    problems += [f"a line of {len(line)} columns: {line!r}" for line in out.splitlines()
                 if len(line) > WIDTH and not LOG_LINE.match(line) and not one_path(line)]
    return problems


def one_path(line: str) -> bool:
    """Whether ``line`` is a path, or ``what: PATH``: never wrapped, so it copies whole."""
    words = line.split()
    return len(words) <= 3 and (PATH.fullmatch(words[-1]) is not None
                                or words[-1].startswith("/"))


def run_cli(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    """``robot-rl ARGV`` in this process: its exit status, stdout and stderr (with the
    traceback a crash would print, status 1)."""
    from robot_rl.cli import main

    capsys.readouterr()
    code, crash = 0, ""
    try:
        main(argv)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except Exception:
        code, crash = 1, traceback.format_exc()
    got = capsys.readouterr()
    return code, got.out, got.err + crash


FACTS: dict[str, Callable[[str], list[str]]] = {}
"""Facts issue 51 names, checked on the output of the README command that shows them."""


def fact(command: str) -> Callable[[Callable[[str], list[str]]], Callable[[str], list[str]]]:
    def register(check: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
        assert command in QUICK_START, command
        FACTS[command] = check
        return check

    return register


@fact("robot-rl eval runs/reach__sac__0__<time> --episodes 50 --video eval.mp4 --dr strong")
def _eval_gives_a_success_rate(out: str) -> list[str]:
    ok = re.search(r"success rate\s+\S*\s*\d+\.\d%", out) and Path("eval.mp4").is_file()
    return [] if ok else ["no success rate or no eval.mp4"]


@fact("robot-rl eval runs/pixel_student")
def _pixel_eval_gives_a_success_rate(out: str) -> list[str]:
    return [] if re.search(r"success rate\s+\S*\s*\d+\.\d%", out) else ["no success rate"]


def _student_on_its_own_line(out: str, name: str) -> list[str]:
    paths = [ln.split(": ", 1)[1] for ln in out.splitlines()
             if ln.startswith("distilled student: ")]
    if len(paths) != 1 or not paths[0].endswith(name) or not Path(paths[0]).is_file():
        return [f"no line 'distilled student: PATH' naming the {name} written"]
    return []


@fact("robot-rl distill runs/reach__sac__0__<time>")
def _distill_names_the_student(out: str) -> list[str]:
    return _student_on_its_own_line(out, "student.pt")


@fact("robot-rl distill runs/push__residual__0__<time> --sees all")
def _residual_distill_names_the_student(out: str) -> list[str]:
    return _student_on_its_own_line(out, "onestep.pt")


@fact("robot-rl distill-pixels --task push")
def _pixel_student_on_its_own_line(out: str) -> list[str]:
    ok = "pixel student: runs/pixel_student.pt" in out.splitlines()
    return [] if ok else ["no line 'pixel student: runs/pixel_student.pt'"]


@fact("robot-rl record --task push --teleop keyboard --episodes 20 --out data/push --view")
def _record_names_its_folder_first(out: str) -> list[str]:
    first = out.splitlines()[0] if out else ""
    return [] if first.endswith("into data/push") else [f"first line {first!r}"]


@fact("robot-rl finetune --demos data/push --task push --method rlpd --time-budget 1800")
def _finetune_run_says_its_method(out: str) -> list[str]:
    runs = sorted(p.name for p in Path("runs").iterdir())
    named = [r for r in runs if r.startswith("push__rlpd__0__")]
    return [] if named else [f"no run push__rlpd__0__<time> among {runs}"]


def test_the_command_finder_reads_what_it_should() -> None:
    text = ("# x\n\n## Quick start\n\n```bash\nrobot-rl a --x 1   # note\n"
            "robot-rl b && robot-rl c \\\n    --y 2   # more\n# a comment\n```\n\n"
            "```python\nimport robot_rl\n```\n\n```bash\nrobot-rl d\n```\n\n"
            "## Architecture\n\n```bash\nrobot-rl e\n```\n")
    assert quick_start_commands(text) == ["robot-rl a --x 1", "robot-rl b",
                                          "robot-rl c --y 2", "robot-rl d"]


def test_the_quick_start_is_the_table() -> None:
    """Every README quick-start command has a row (how it runs here, or why not, naming the
    tests that cover it instead), and every row is a README command."""
    readme = quick_start_commands(README.read_text(encoding="utf-8"))
    assert len(readme) >= 20, "the README's quick start was not found"
    new = [c for c in readme if c not in QUICK_START]
    stale = [c for c in QUICK_START if c not in readme]
    assert not new and not stale, (
        f"README quick-start commands this test does not know: {new}; rows of QUICK_START "
        f"no longer in the README: {stale}")
    for command, how in QUICK_START.items():
        if isinstance(how, Skip):  # it names the tests that cover it, and they exist
            named = re.findall(r"tests/[\w/]+\.py", how.reason)
            assert named and all((ROOT / t).is_file() for t in named), (command, how.reason)


@pytest.mark.slow
def test_the_quick_start_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """The README's quick-start commands in order, in a fresh folder, with tiny budgets: each
    exits 0, and what it prints to a log 80 columns wide reads right."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    monkeypatch.setenv("ROBOT_RL_ROBOTS", str(tmp_path / "robots"))  # robot import's folder
    failures = []
    for command in quick_start_commands(README.read_text(encoding="utf-8")):
        how = QUICK_START[command]
        if isinstance(how, Skip):
            continue
        steps = [(how.before, shlex.split(how.before))] if how.before else []
        steps.append((command, runs_argv(command, how)))
        for name, argv in steps:
            assert argv[0] == "robot-rl", name
            try:
                argv = [resolve(a) for a in argv[1:]]
            except AssertionError as e:  # what an earlier, failed command should have made
                failures.append(f"$ {name}\n  {e}")
                break
            code, out, err = run_cli(capsys, argv)
            problems = output_problems(code, out, err)
            if code == 0 and name in FACTS:
                problems += FACTS[name](out)
            if problems:
                failures.append(f"$ robot-rl {shlex.join(argv)}\n  " + "\n  ".join(problems)
                                + f"\n--- stdout\n{out}--- stderr\n{err}")
            if code != 0:
                break
    assert not failures, f"{len(failures)} command(s) read wrong:\n\n" + "\n\n".join(failures)
