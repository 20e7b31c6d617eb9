"""mp4 writing (H.264 through PyAV): evaluation videos and the datasets' camera streams."""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from robot_rl.errors import ConfigError

VIDEO_SIZE = (480, 360)
"""Width and height [px] of each env's frame in ``robot-rl eval --video`` and ``sim rollout
--video`` (envs side by side: two are 960 px wide)."""
VIDEO_FPS = 25.0
"""Frame rate of evaluation and rollout videos at most: a faster control rate shows every
k-th control step (at 50 Hz every second one), which halves the rendering, the slow part on
a machine without a GPU (about 70 ms a frame of two envs with Mesa's software GL)."""


class VideoWriter:
    """Writes RGB frames to an H.264 mp4 with PyAV. ``keyframe_interval``: at most this many
    frames between keyframes (the GOP size); a frame at random costs decoding up to that many
    frames, so datasets read at random use a short one. None: x264's default (250).
    ``every``: ``add`` renders and writes one of this many calls (``write`` writes each)."""

    def __init__(self, path: str | Path, fps: float, keyframe_interval: int | None = None,
                 every: int = 1):
        import av

        if every < 1:
            raise ConfigError(f"every must be >= 1, got {every}")
        self.path = Path(path)
        if self.path.suffix.lower() != ".mp4":
            raise ConfigError(f"video path must end in .mp4, got {self.path}")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._container = av.open(str(self.path), mode="w")
        self._fps = Fraction(fps).limit_denominator(1000)
        if keyframe_interval is not None and keyframe_interval < 1:
            raise ConfigError(f"keyframe_interval must be >= 1, got {keyframe_interval}")
        self.keyframe_interval = keyframe_interval
        self._stream: Any = None  # av's VideoStream, created with the first frame's size
        self.frames = 0
        self.every = every
        self._calls = 0

    @classmethod
    def of_steps(cls, path: str | Path, control_dt: float, max_fps: float = VIDEO_FPS
                 ) -> VideoWriter:
        """A video of control steps ``control_dt`` apart at ``max_fps`` at most: ``add`` is
        called once per control step and keeps every k-th, k = ceil(rate / max_fps)."""
        every = max(1, math.ceil(round(1.0 / (control_dt * max_fps), 6)))
        return cls(path, fps=1.0 / (control_dt * every), every=every)

    def add(self, render: Callable[[], np.ndarray]) -> None:
        """One control step: ``render()`` a frame and write it on the first call and every
        ``every``-th after it (the others render nothing)."""
        if self._calls % self.every == 0:
            self.write(render())
        self._calls += 1

    def write(self, frame: np.ndarray) -> None:
        import av

        if self._stream is None:
            h, w = frame.shape[:2]
            stream = self._container.add_stream("libx264", rate=self._fps)
            stream.width, stream.height = w - w % 2, h - h % 2  # yuv420p needs even sizes
            stream.pix_fmt = "yuv420p"
            options: dict[str, str] = {"crf": "23", "preset": "veryfast"}
            if self.keyframe_interval is not None:
                # a fixed GOP: keyframes exactly every g frames, none added at scene cuts
                g = str(self.keyframe_interval)
                options.update({"g": g, "keyint_min": g, "sc_threshold": "0"})
            stream.options = options  # type: ignore[assignment]
            self._stream = stream
        frame = np.ascontiguousarray(frame[: self._stream.height, : self._stream.width])
        for packet in self._stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")):
            self._container.mux(packet)
        self.frames += 1

    def close(self) -> None:
        if self._stream is not None:
            for packet in self._stream.encode():
                self._container.mux(packet)
        self._container.close()

    def __enter__(self) -> VideoWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
