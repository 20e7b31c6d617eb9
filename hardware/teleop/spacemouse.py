"""3Dconnexion SpaceMouse over HID (the ``hid`` module of the ``hidapi`` package, extra
``teleop``); needs read access to the hidraw device (a udev rule, or root).

HID reports (little-endian int16 axes, about +-350 at full deflection):

    id 1, 7 bytes    translation x, y, z               (SpaceNavigator, SpaceMouse Pro)
    id 1, 13 bytes   translation, then rotation         (SpaceMouse Compact, Wireless)
    id 2, 7 bytes    rotation rx, ry, rz
    id 3             buttons, a bit mask in the following bytes

Device axes: x right, y towards the user, z down (and rotations about them). The default
``axis_map`` turns them into the robot's base frame for a user facing the robot from its
front: push the cap away -> +x, left -> +y, lift -> +z. Left button: toggle the gripper; right
button: next (save the episode).
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from robot_rl.hardware.teleop.base import TeleopCommand, Teleoperator, TeleopError, deadzone

VENDORS = (0x256F, 0x046D)
"""3Dconnexion's USB vendor id, and Logitech's (older devices)."""
PRODUCTS = {
    0xC626: "SpaceNavigator", 0xC627: "SpaceExplorer", 0xC62B: "SpaceMouse Pro",
    0xC62E: "SpaceMouse Wireless (cable)", 0xC631: "SpaceMouse Pro Wireless (cable)",
    0xC632: "SpaceMouse Pro Wireless (receiver)", 0xC633: "SpaceMouse Enterprise",
    0xC635: "SpaceMouse Compact", 0xC652: "Universal Receiver",
}
FULL_SCALE = 350.0
DEFAULT_AXIS_MAP = ((1, -1.0), (0, -1.0), (2, -1.0), (4, -1.0), (3, -1.0), (5, -1.0))
"""Robot axis k <- sign * device axis index (device order x, y, z, rx, ry, rz)."""


def parse_report(report: bytes | list[int], axes: np.ndarray, buttons: int) -> tuple[
        np.ndarray, int]:
    """Fold one HID report into (device axes (6,) raw, button mask); returns the new pair."""
    data = bytes(report)
    if not data:
        return axes, buttons
    axes = axes.copy()
    rid = data[0]
    if rid == 1 and len(data) >= 7:
        axes[0:3] = struct.unpack_from("<3h", data, 1)
        if len(data) >= 13:
            axes[3:6] = struct.unpack_from("<3h", data, 7)
    elif rid == 2 and len(data) >= 7:
        axes[3:6] = struct.unpack_from("<3h", data, 1)
    elif rid == 3 and len(data) >= 2:
        buttons = int.from_bytes(data[1:5], "little")
    return axes, buttons


class SpaceMouseTeleop(Teleoperator):
    """A SpaceMouse (see module docstring). ``device``: an open hid-like object with
    ``read(size)`` (tests pass a double); default: the first 3Dconnexion device found."""

    name = "spacemouse"

    def __init__(self, device: Any = None, deadzone: float = 0.1, full_scale: float =
                 FULL_SCALE, axis_map: tuple[tuple[int, float], ...] = DEFAULT_AXIS_MAP,
                 gripper_closed: bool = True):
        self.device = device
        self.dz = deadzone
        self.full_scale = full_scale
        self.axis_map = axis_map
        self._axes = np.zeros(6)
        self._buttons = 0
        self._closed = gripper_closed
        self.product = ""

    def connect(self) -> None:
        if self.device is not None:
            return
        try:
            import hid
        except ImportError:
            raise TeleopError("the SpaceMouse needs the hidapi package: pip install "
                              "'robot-rl[teleop]'") from None
        found = [d for d in hid.enumerate() if d["vendor_id"] in VENDORS
                 and d["product_id"] in PRODUCTS]
        if not found:
            raise TeleopError("no SpaceMouse found (3Dconnexion USB ids "
                              f"{[hex(v) for v in VENDORS]}); is it plugged in, and is its "
                              "hidraw device readable (udev rule or root)?")
        info = found[0]
        dev = hid.device()
        try:
            dev.open_path(info["path"])
        except OSError as e:
            raise TeleopError(f"cannot open {PRODUCTS[info['product_id']]} at "
                              f"{info['path']!r}: {e} (permissions of /dev/hidraw*?)") from None
        dev.set_nonblocking(True)
        self.device, self.product = dev, PRODUCTS[info["product_id"]]

    def close(self) -> None:
        if self.device is not None and hasattr(self.device, "close"):
            self.device.close()

    def read(self) -> TeleopCommand:
        if self.device is None:
            raise TeleopError("SpaceMouse not connected (use it in a with-block)")
        pressed = 0  # buttons that went down in any report since the last read
        while True:
            report = self.device.read(64)
            if not report:
                break
            before = self._buttons
            self._axes, self._buttons = parse_report(report, self._axes, self._buttons)
            pressed |= self._buttons & ~before
        events = set()
        if pressed & 1:
            self._closed = not self._closed
        if pressed & 2:
            events.add("next")
        raw = np.array([sign * self._axes[i] for i, sign in self.axis_map]) / self.full_scale
        return TeleopCommand(deadzone(raw, self.dz), 1.0 if self._closed else -1.0,
                             frozenset(events))
