"""Color and depth frames a RealSense syncer handed over apart, paired again by timestamp.

The SDK's syncer matches the streams of one instant into a frameset, but it gives up waiting
for a stream after a wall-clock interval: on a starved host (a loaded CI machine) it can hand
over every frame of a recording alone, and a reader that wants both streams would see nothing.
``FramePairs`` keeps the last few single frames of each stream and, once a frame of each has
timestamps within half a frame period, returns them as one frameset (made by a processing
block, so alignment and the rest of the reader treat it as the syncer's own).

    pairs = FramePairs(rs, [rs.stream.color, rs.stream.depth])
    frameset = pairs.add(partial_frameset)     # None until a match arrives
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

HELD = 8
"""Single frames kept per stream while waiting for their partner (older ones are dropped)."""


class FramePairs:
    """Pairs single frames of the wanted streams by timestamp (see module docstring)."""

    def __init__(self, rs: Any, streams: Sequence[Any]):
        self._streams = list(streams)
        self._held: dict[Any, list[Any]] = {s: [] for s in self._streams}
        self._parts: list[Any] = []
        self._out = rs.frame_queue(2, keep_frames=True)

        def compose(_frame: Any, source: Any) -> None:
            source.frame_ready(source.allocate_composite_frame(self._parts))

        self._block = rs.processing_block(compose)
        self._block.start(self._out)
        self.paired = 0
        """Framesets this object made from single frames."""

    @property
    def holding(self) -> int:
        """Single frames held, waiting for a partner."""
        return sum(len(h) for h in self._held.values())

    def add(self, frames: Any) -> Any | None:
        """Take the frames of a frameset that lacks a wanted stream; return a whole frameset
        (the newest match) or None."""
        for f in frames.as_frameset():
            stream = f.get_profile().stream_type()
            if stream in self._held:
                f.keep()
                held = self._held[stream]
                held.append(f)
                del held[:-HELD]
        return self._match()

    def _match(self) -> Any | None:
        first, *others = self._streams
        for f in reversed(self._held[first]):
            t, period = f.get_timestamp(), _period_ms(f)
            parts = [f]
            for s in others:
                near = [g for g in self._held[s] if abs(g.get_timestamp() - t) < 0.5 * period]
                if not near:
                    break
                parts.append(min(near, key=lambda g: abs(g.get_timestamp() - t)))
            else:
                return self._compose(parts, t)
        return None

    def _compose(self, parts: list[Any], t: float) -> Any:
        # what is as old as this match or older is done with (delivered or passed over)
        for s in self._streams:
            self._held[s] = [g for g in self._held[s] if g.get_timestamp() > t + 1e-6
                             and all(g is not p for p in parts)]
        self._parts = parts
        self._block.invoke(parts[0])
        self._parts = []
        self.paired += 1
        return self._out.wait_for_frame().as_frameset()


def _period_ms(frame: Any) -> float:
    fps = frame.get_profile().fps()
    return 1000.0 / fps if fps > 0 else 1000.0 / 30
