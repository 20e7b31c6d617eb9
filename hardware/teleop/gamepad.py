"""Gamepad teleoperation through Linux evdev (``evdev`` of the ``teleop`` extra; needs read
access to /dev/input/event*: the ``input`` group, or root). Xbox-style layout:

    left stick     up/down -> +x/-x, left/right -> +y/-y
    right stick    up/down -> +z/-z, left/right -> yaw +/-
    LB / RB        roll -/+          d-pad up/down   pitch +/-
    LT / RT        open / close the gripper (it stays where the last press left it)
    A next (save)  B re-record       Y success       X failure       Start quit
"""

from __future__ import annotations

from typing import Any

import numpy as np

from robot_rl.hardware.teleop.base import TeleopCommand, Teleoperator, TeleopError, deadzone

EV_KEY, EV_ABS = 1, 3
ABS_X, ABS_Y, ABS_Z, ABS_RX, ABS_RY, ABS_RZ, ABS_HAT0Y = 0, 1, 2, 3, 4, 5, 17
BTN_SOUTH, BTN_EAST, BTN_NORTH, BTN_WEST = 0x130, 0x131, 0x133, 0x134
BTN_TL, BTN_TR, BTN_START = 0x136, 0x137, 0x13B
BUTTON_EVENTS = {BTN_SOUTH: "next", BTN_EAST: "rerecord", BTN_NORTH: "success",
                 BTN_WEST: "failure", BTN_START: "quit"}
STICKS = (ABS_X, ABS_Y, ABS_RX, ABS_RY)
TRIGGERS = (ABS_Z, ABS_RZ)


class GamepadTeleop(Teleoperator):
    """A gamepad (see module docstring). ``device``: an evdev InputDevice or a double with
    ``read()`` (events; raises BlockingIOError when none) and ``absinfo(code)``; default:
    the first device with sticks and an A button."""

    name = "gamepad"

    def __init__(self, device: Any = None, deadzone: float = 0.12, gripper_closed: bool = True):
        self.device = device
        self.dz = deadzone
        self._axes: dict[int, float] = {}
        self._held: set[int] = set()
        self._closed = gripper_closed
        self._ranges: dict[int, tuple[float, float]] = {}

    def connect(self) -> None:
        if self.device is None:
            try:
                import evdev
            except ImportError:
                raise TeleopError("the gamepad needs evdev: pip install 'robot-rl[teleop]'"
                                  " (Linux only)") from None
            for path in evdev.list_devices():
                dev = evdev.InputDevice(path)
                caps = dev.capabilities()
                if ABS_X in [c if isinstance(c, int) else c[0] for c in caps.get(EV_ABS, [])] \
                        and BTN_SOUTH in caps.get(EV_KEY, []):
                    self.device = dev
                    break
                dev.close()
            else:
                raise TeleopError("no gamepad found under /dev/input (none with sticks and an "
                                  "A button readable by this user; the 'input' group?)")
        for code in (*STICKS, *TRIGGERS, ABS_HAT0Y):
            try:
                info = self.device.absinfo(code)
                self._ranges[code] = (float(info.min), float(info.max))
            except (OSError, KeyError, AttributeError):
                pass

    def close(self) -> None:
        if self.device is not None and hasattr(self.device, "close"):
            self.device.close()

    def _norm(self, code: int) -> float:
        v = self._axes.get(code)
        if v is None:
            return 0.0
        lo, hi = self._ranges.get(code, (-32768.0, 32767.0))
        if code in TRIGGERS:
            return (v - lo) / (hi - lo)  # 0 released .. 1 pulled
        return 2.0 * (v - lo) / (hi - lo) - 1.0

    def read(self) -> TeleopCommand:
        if self.device is None:
            raise TeleopError("gamepad not connected (use it in a with-block)")
        events: set[str] = set()
        while True:
            try:
                batch = list(self.device.read())
            except BlockingIOError:
                break
            if not batch:
                break
            for e in batch:
                if e.type == EV_ABS:
                    self._axes[e.code] = float(e.value)
                elif e.type == EV_KEY:
                    if e.value == 1:
                        self._held.add(e.code)
                        if e.code in BUTTON_EVENTS:
                            events.add(BUTTON_EVENTS[e.code])
                    elif e.value == 0:
                        self._held.discard(e.code)
        lt, rt = self._norm(ABS_Z), self._norm(ABS_RZ)
        if rt > 0.5 and rt > lt:
            self._closed = True
        elif lt > 0.5:
            self._closed = False
        sticks = deadzone(np.array([-self._norm(ABS_Y), -self._norm(ABS_X),
                                    -self._norm(ABS_RY), -self._norm(ABS_RX)]), self.dz)
        roll = float(BTN_TR in self._held) - float(BTN_TL in self._held)
        hat = self._axes.get(ABS_HAT0Y, 0.0)  # -1 up, +1 down
        pitch = -float(np.sign(hat))
        twist = np.array([sticks[0], sticks[1], sticks[2], roll, pitch, sticks[3]])
        return TeleopCommand(twist, 1.0 if self._closed else -1.0, frozenset(events))
