"""Cameras: the ``Camera`` interface and its RealSense implementation (extra ``camera``).

``robot_rl.hardware.cameras.realsense`` imports pyrealsense2 only when a camera is created, so
this package imports without it.
"""

from robot_rl.hardware.cameras.base import Camera, CameraError, CameraFrame, Intrinsics

__all__ = ["Camera", "CameraError", "CameraFrame", "Intrinsics"]
