"""Keyboard teleoperation in a terminal (works over SSH: it reads the terminal, not X or
/dev/input).

    w / s   +x / -x (away from / towards the base)      arrows: x and y as well
    a / d   +y / -y (left / right)
    r / f   +z / -z (up / down)
    j / l   roll -/+      i / k   pitch +/-      u / o   yaw +/-
    space   toggle the gripper (open <-> closed)
    + / -   faster / slower (25% .. 100% of full scale)
    Enter   next: save the episode          x       re-record the episode
    y / n   label success / failure        q       quit

A terminal reports key presses, never releases: each press (and each auto-repeat of a held
key) drives its axis for ``hold_s``. Holding a key moves continuously once the terminal's
auto-repeat starts (after its repeat delay, typically 250-600 ms, with one short step
before it); letting go stops the motion within ``hold_s``.
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
import termios
import time
import tty
from collections.abc import Callable
from typing import Any

import numpy as np

from robot_rl.hardware.teleop.base import TeleopCommand, Teleoperator, TeleopError

MOTION = {
    "w": (0, 1), "s": (0, -1), "a": (1, 1), "d": (1, -1), "r": (2, 1), "f": (2, -1),
    "l": (3, 1), "j": (3, -1), "i": (4, 1), "k": (4, -1), "u": (5, 1), "o": (5, -1),
    "UP": (0, 1), "DOWN": (0, -1), "LEFT": (1, 1), "RIGHT": (1, -1),
}
"""Key -> (twist axis, sign)."""
EVENT_KEYS = {"\r": "next", "\n": "next", "x": "rerecord", "q": "quit", "y": "success",
              "n": "failure"}
_ARROWS = {"A": "UP", "B": "DOWN", "C": "RIGHT", "D": "LEFT"}
SPEEDS = (0.25, 0.5, 0.75, 1.0)


def parse_keys(data: str) -> list[str]:
    """Key names in terminal input: characters, with ANSI arrow sequences as UP/DOWN/..."""
    keys, i = [], 0
    while i < len(data):
        if data.startswith("\x1b[", i) and i + 2 < len(data) and data[i + 2] in _ARROWS:
            keys.append(_ARROWS[data[i + 2]])
            i += 3
        else:
            keys.append(data[i].lower() if data[i].isalpha() else data[i])
            i += 1
    return keys


class KeyboardTeleop(Teleoperator):
    """Keys from a terminal (see module docstring); ``fd`` defaults to stdin."""

    name = "keyboard"

    def __init__(self, fd: int | None = None, hold_s: float = 0.15, speed: float = 0.5,
                 gripper_closed: bool = True, clock: Callable[[], float] = time.monotonic):
        self.fd = sys.stdin.fileno() if fd is None else fd
        self.hold_s = hold_s
        self.speed = speed
        self.clock = clock
        self._until = np.zeros(6)
        """Per axis: the time its last key press stops driving it."""
        self._sign = np.zeros(6)
        self._closed = gripper_closed
        self._events: set[str] = set()
        self._saved: Any = None

    def connect(self) -> None:
        if os.isatty(self.fd):
            try:
                self._saved = termios.tcgetattr(self.fd)
                tty.setcbreak(self.fd)  # keys arrive one by one, unechoed; Ctrl-C still works
            except termios.error as e:
                raise TeleopError(f"cannot put the terminal in key mode: {e}") from None
        os.set_blocking(self.fd, False)

    def close(self) -> None:
        if self._saved is not None:
            with contextlib.suppress(termios.error):
                termios.tcsetattr(self.fd, termios.TCSADRAIN, self._saved)
            self._saved = None
        with contextlib.suppress(OSError):
            os.set_blocking(self.fd, True)

    def _drain(self) -> str:
        chunks = []
        while select.select([self.fd], [], [], 0)[0]:
            try:
                b = os.read(self.fd, 1024)
            except BlockingIOError:
                break
            if not b:  # end of input (a closed pipe): nothing more will come
                break
            chunks.append(b)
        return b"".join(chunks).decode(errors="ignore")

    def feed(self, keys: list[str], now: float) -> None:
        """Apply key presses (what ``read`` does with the terminal's input)."""
        for key in keys:
            if key in MOTION:
                axis, sign = MOTION[key]
                self._sign[axis] = sign
                self._until[axis] = now + self.hold_s
            elif key == " ":
                self._closed = not self._closed
            elif key in ("+", "="):
                self.speed = min((s for s in SPEEDS if s > self.speed), default=SPEEDS[-1])
            elif key in ("-", "_"):
                self.speed = max((s for s in SPEEDS if s < self.speed), default=SPEEDS[0])
            elif key in EVENT_KEYS:
                self._events.add(EVENT_KEYS[key])

    def read(self) -> TeleopCommand:
        now = self.clock()
        self.feed(parse_keys(self._drain()), now)
        twist = np.where(self._until > now, self._sign * self.speed, 0.0)
        events, self._events = frozenset(self._events), set()
        return TeleopCommand(twist, 1.0 if self._closed else -1.0, events)

    @staticmethod
    def help() -> str:
        return ("keys: w/s a/d r/f move x/y/z, j/l i/k u/o rotate, space gripper, +/- speed,"
                " Enter save, x re-record, y/n success/failure, q quit")
