"""The camera interface: what recorders and policies read images through.

    with RealSenseCamera(RealSenseConfig(width=640, height=480, fps=30)) as cam:
        frame = cam.read()          # blocks up to the timeout; None at the end of a recording
        frame.color                 # (H, W, 3) uint8 RGB
        frame.depth_m()             # (H, W) float32 metres, aligned to the color image

A camera is polled by whoever needs it (a recorder, a control loop): ``read`` waits for the
next frame, ``poll`` returns one only if it is already there, so a 500 Hz loop can pick up
30 Hz frames without blocking.
"""

from __future__ import annotations

import abc
import dataclasses
import time
from typing import Self

import numpy as np

from robot_rl.errors import RobotRLError


class CameraError(RobotRLError):
    """A camera cannot be opened, does not offer the requested stream, or stopped delivering."""


@dataclasses.dataclass(frozen=True)
class Intrinsics:
    """Pinhole model of the image a frame's arrays are in (after alignment)."""

    width: int
    height: int
    fx: float
    fy: float
    ppx: float
    ppy: float
    model: str = "none"
    """Distortion model name as the driver reports it ("none", "brown_conrady", ...)."""
    coeffs: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0, 0.0)

    def matrix(self) -> np.ndarray:
        """(3, 3) camera matrix K."""
        return np.array([[self.fx, 0.0, self.ppx], [0.0, self.fy, self.ppy], [0.0, 0.0, 1.0]])


@dataclasses.dataclass(frozen=True)
class CameraFrame:
    """One synchronized color + depth capture."""

    color: np.ndarray | None
    """(H, W, 3) uint8 RGB, or None when the color stream is off."""
    depth: np.ndarray | None
    """(H', W') uint16 raw depth, aligned to color when alignment is on; None when off."""
    depth_scale: float
    """Metres per raw depth unit (0.001 on most RealSense models)."""
    frame_number: int
    timestamp_ms: float
    """The device's capture timestamp [ms] in ``timestamp_domain``."""
    timestamp_domain: str
    """"hardware_clock", "system_time" or "global_time" (the driver's words)."""
    host_time: float
    """When this process received the frame, seconds on the ``time.monotonic`` clock."""
    intrinsics: Intrinsics
    """Of the image the arrays share (the color image when depth is aligned to it)."""

    def depth_m(self) -> np.ndarray:
        """(H', W') float32 depth in metres; 0 where the sensor has no reading."""
        if self.depth is None:
            raise CameraError("this frame has no depth (the depth stream is off)")
        return self.depth.astype(np.float32) * np.float32(self.depth_scale)


class Camera(abc.ABC):
    """A source of ``CameraFrame``s: a live device or a recording of one."""

    name: str

    @abc.abstractmethod
    def connect(self) -> None:
        """Open the device or file and start streaming."""

    @abc.abstractmethod
    def read(self, timeout_s: float | None = None) -> CameraFrame | None:
        """The next frame, waiting up to ``timeout_s``; None at the end of a recording.

        Raises CameraError when a live device delivers nothing within the timeout."""

    @abc.abstractmethod
    def poll(self) -> CameraFrame | None:
        """The next frame if one has arrived, else None; never blocks."""

    @abc.abstractmethod
    def close(self) -> None:
        """Stop streaming and release the device; safe to call twice."""

    def __enter__(self) -> Self:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _poll_until(self, timeout_s: float | None, source: str, nap: float = 0.001
                    ) -> CameraFrame:
        """``poll`` until a frame comes, for cameras whose frames another thread delivers;
        CameraError naming ``source`` after ``timeout_s`` (default 1 s)."""
        timeout = 1.0 if timeout_s is None else timeout_s
        deadline = time.monotonic() + timeout
        while (frame := self.poll()) is None:
            if time.monotonic() > deadline:
                raise CameraError(f"{self.name}: no frame from {source} within "
                                  f"{timeout:.2f} s")
            time.sleep(nap)
        return frame

    def __iter__(self):  # type: ignore[no-untyped-def]
        """Frames until the end of a recording (a live camera never ends)."""
        while (frame := self.read()) is not None:
            yield frame
