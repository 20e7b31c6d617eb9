"""The live view under Xvfb (Debian's xvfb, installed by make setup): MuJoCo's passive
viewer opens on the virtual display, follows the env from its own thread, and its window is
not blank and changes when the arm moves; ``robot-rl record --view`` with the keyboard in a
real pseudo-terminal records an episode while the view follows it.

Each viewer runs in a process of its own (GLFW is process-wide state); the screenshots are
read off the display with Pillow (its XCB grab)."""

from __future__ import annotations

import os
import pty
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from robot_rl.data import Dataset
from tests.polling import wait_for

pytestmark = pytest.mark.skipif(shutil.which("Xvfb") is None,
                                reason="Xvfb is not installed (make setup installs xvfb)")

SIZE = (480, 360)


@pytest.fixture(scope="module")
def display() -> Iterator[str]:
    """A virtual X display (its number chosen by Xvfb itself)."""
    r, w = os.pipe()
    proc = subprocess.Popen(["Xvfb", "-displayfd", str(w), "-screen", "0",
                             f"{SIZE[0]}x{SIZE[1]}x24", "-nolisten", "tcp"], pass_fds=(w,),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(w)
    with os.fdopen(r) as f:
        number = f.readline().strip()
    assert number, "Xvfb did not start"
    yield f":{number}"
    proc.terminate()
    proc.wait(timeout=10)


def grab(display: str) -> np.ndarray:
    from PIL import ImageGrab

    return np.asarray(ImageGrab.grab(xdisplay=display), dtype=np.float32)


VIEWER = """
import faulthandler; faulthandler.dump_traceback_later(45, exit=True)
import sys, time, numpy as np, torch
from robot_rl.sim import make_env
from robot_rl.sim.view import EnvView
env = make_env("reach", 1, seed=0)
view = EnvView(env, title="test")
view.watch()
env.reset(seed=0)
def wait(n):
    end = time.monotonic() + 60
    while view.view.synced < n and time.monotonic() < end:
        time.sleep(0.02)
    return view.view.synced >= n
print("ready", wait(1), flush=True)
sys.stdin.readline()                                  # the test took its first screenshot
action = torch.zeros(1, env.act_dim)
action[0, 0], action[0, 1] = 1.0, -1.0                # swing the base, lift the shoulder
n = view.view.synced
for _ in range(40):
    env.step(action)
    time.sleep(0.01)
print("moved", wait(n + 2), view.view.published, flush=True)
sys.stdin.readline()
view.close()
print("closed", flush=True)
"""


@pytest.mark.slow
def test_the_view_opens_follows_the_env_and_changes_when_the_arm_moves(display: str) -> None:
    env = dict(os.environ, DISPLAY=display)
    p = subprocess.Popen([sys.executable, "-c", VIEWER], env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None and p.stdin is not None
        assert p.stdout.readline().split() == ["ready", "True"], p.stderr
        # the window's first frames may still be drawing: wait for a stable, non-blank one
        assert wait_for(lambda: grab(display).std() > 10.0, 30, every=0.05), \
            "the screen stayed blank"
        time.sleep(0.5)
        before = grab(display)
        p.stdin.write("\n")
        p.stdin.flush()
        moved = p.stdout.readline().split()
        assert moved[:2] == ["moved", "True"] and int(moved[2]) > 2, moved
        assert wait_for(lambda: np.abs(grab(display) - before).mean() > 1.0, 30, every=0.05), \
            "the window did not change when the arm moved"
        p.stdin.write("\n")
        p.stdin.flush()
        assert p.stdout.readline().strip() == "closed"
        try:
            assert p.wait(timeout=60) == 0
        except subprocess.TimeoutExpired:
            raise AssertionError(p.stderr.read() if p.stderr else "") from None
    finally:
        if p.poll() is None:
            p.kill()


@pytest.mark.slow
def test_keyboard_recording_in_a_real_terminal_with_the_view(display: str,
                                                             tmp_path: Path) -> None:
    """robot-rl record --teleop keyboard --view in a pty: keys move the arm, Enter saves the
    episode (it ends without success and is saved: the person said so), q quits; the view's
    window changes while the person drives."""
    out = tmp_path / "demos"
    pid, fd = pty.fork()
    if pid == 0:  # the child: the CLI, with the pty as its terminal
        os.environ["DISPLAY"] = display
        os.execv(sys.executable, [sys.executable, "-m", "robot_rl.cli", "record", "--task",
                                  "reach", "--teleop", "keyboard", "--episodes", "2", "--out",
                                  str(out), "--view", "--no-progress"])
    output = bytearray()

    def read_for(seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            import select

            ready, _, _ = select.select([fd], [], [], 0.05)
            if ready:
                try:
                    output.extend(os.read(fd, 4096))
                except OSError:
                    return

    try:
        assert wait_for(lambda: (read_for(0.1), b"keys:" in output)[1], 60, every=0.05), \
            output.decode()
        assert wait_for(lambda: grab(display).std() > 10.0, 30, every=0.05), "the view stayed blank"
        time.sleep(0.5)
        before = grab(display)
        for _ in range(30):  # hold r (up) and w (forward) for about 1.5 s
            os.write(fd, b"rw")
            read_for(0.05)
        assert wait_for(lambda: np.abs(grab(display) - before).mean() > 1.0, 20, every=0.05), \
            "the view did not follow the arm"
        os.write(fd, b"\r")  # Enter: save the episode
        read_for(1.0)
        os.write(fd, b"q")  # quit (drops the episode just started)
        _, status = os.waitpid(pid, 0)
        read_for(0.5)
        assert os.waitstatus_to_exitcode(status) == 0, output.decode(errors="replace")
    finally:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
        os.close(fd)
    ds = Dataset(out)
    assert ds.num_episodes == 1, output.decode(errors="replace")
    z = ds.episode(0)["observation.joint_pos"]
    assert np.abs(z[-1] - z[0]).max() > 0.05  # the keys moved the arm
