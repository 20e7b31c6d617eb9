"""mp4 writing (H.264 through PyAV): evaluation videos and the datasets' camera streams."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from robot_rl.errors import ConfigError


class VideoWriter:
    """Writes RGB frames to an H.264 mp4 with PyAV. ``keyframe_interval``: at most this many
    frames between keyframes (the GOP size); a frame at random costs decoding up to that many
    frames, so datasets read at random use a short one. None: x264's default (250)."""

    def __init__(self, path: str | Path, fps: float, keyframe_interval: int | None = None):
        import av

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
