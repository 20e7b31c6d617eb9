"""Teleoperation devices: keyboard (a terminal), SpaceMouse (HID), gamepad (evdev)."""

from robot_rl.hardware.teleop.base import (
    EVENTS,
    ScriptedTeleop,
    TeleopCommand,
    Teleoperator,
    TeleopError,
)

__all__ = ["EVENTS", "ScriptedTeleop", "TeleopCommand", "TeleopError", "Teleoperator"]
