"""Intel RealSense color + depth on pyrealsense2 (extra ``camera``), live or from a recording.

    cam = RealSenseCamera(RealSenseConfig(width=640, height=480, fps=30))     # live, first device
    cam = RealSenseCamera(RealSenseConfig(playback="scene.db3"))              # a recording
    with cam:
        for frame in cam:                 # CameraFrame: RGB, depth aligned to it, timestamps
            ...

Streams are color (rgb8) and depth (z16); either can be switched off. Depth is aligned to the
color image by default (``align="color"``), so ``frame.depth[v, u]`` is the depth of the pixel
``frame.color[v, u]``. Width, height and fps of 0 mean "whatever the device offers by default"
live, and "as recorded" in playback; a combination the device does not offer is refused with
the list of what it does offer.

Recordings are the SDK's own format (rosbag2 ``.db3`` in librealsense 2.59; ``.bag`` in older
releases): make one live with ``record_to=...`` or with ``realsense-viewer``. Playback runs at
the recorded pace (``real_time=True``) or as fast as frames are read (``real_time=False``, for
tests and offline processing). As with a live camera, the first frameset or two of a recording
can be dropped while the SDK's syncer locks onto both streams; every frame delivered carries
its own frame number and timestamp. Color and depth frames the syncer hands over apart (it
stops waiting for a stream on a starved host) are paired again by timestamp
(``realsense_pairs.FramePairs``).

pyrealsense2 needs Debian's ``libusb-1.0-0``; ``make test`` and ``make demo`` install it.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from robot_rl.hardware.cameras.base import Camera, CameraError, CameraFrame, Intrinsics
from robot_rl.hardware.cameras.realsense_pairs import FramePairs

if TYPE_CHECKING:
    import pyrealsense2


def import_rs() -> Any:
    """pyrealsense2, or a CameraError saying how to install it."""
    try:
        import pyrealsense2 as rs
    except ImportError as e:
        raise CameraError(
            f"RealSense cameras need pyrealsense2 ({e}): pip install 'robot_rl[camera]' and, on "
            "Debian/Ubuntu, apt-get install libusb-1.0-0") from e
    return rs


@dataclasses.dataclass
class RealSenseConfig:
    """Which RealSense to open and how to stream it."""

    serial: str | None = None
    """Serial number of the live device to open; None opens the first one found."""
    playback: Path | None = None
    """Read this recording instead of a live device (.db3, or .bag from older SDKs)."""
    width: int = 0
    """Image width [px]; 0 = the device default (live) or as recorded (playback)."""
    height: int = 0
    """Image height [px]; 0 = the device default or as recorded."""
    fps: int = 0
    """Frame rate [Hz]; 0 = the device default or as recorded."""
    color: bool = True
    """Stream color (RGB, uint8)."""
    depth: bool = True
    """Stream depth (z16)."""
    align: Literal["color", "depth", "none"] = "color"
    """Align depth to the color image, color to the depth image, or leave both as they are."""
    timeout_s: float = 2.0
    """How long ``read`` waits for a frame before a live camera counts as stalled."""
    real_time: bool = True
    """Playback only: deliver frames at the recorded pace, dropping what the reader misses
    (False: every frame, as fast as they are read)."""
    record_to: Path | None = None
    """Live only: also record the streams to this file (the SDK's format, see module doc)."""

    def validate(self) -> None:
        if not (self.color or self.depth):
            raise CameraError("RealSenseConfig: enable at least one of color and depth")
        for name in ("width", "height", "fps"):
            if getattr(self, name) < 0:
                raise CameraError(f"RealSenseConfig.{name} must be >= 0 (0 = default), "
                                  f"got {getattr(self, name)}")
        if self.align not in ("color", "depth", "none"):
            raise CameraError(f"RealSenseConfig.align must be color, depth or none, got "
                              f"{self.align!r}")
        if self.playback is not None:
            if self.record_to is not None:
                raise CameraError("RealSenseConfig: record_to works with a live device, not "
                                  "with playback")
            if not Path(self.playback).is_file():
                raise CameraError(f"RealSense recording {self.playback} does not exist")


def list_devices() -> list[dict[str, str]]:
    """Connected RealSense devices: name, serial, firmware, USB type."""
    rs = import_rs()
    out = []
    for dev in rs.context().query_devices():
        info = {}
        for key, field in (("name", "name"), ("serial", "serial_number"),
                           ("firmware", "firmware_version"), ("usb", "usb_type_descriptor")):
            what = getattr(rs.camera_info, field)
            info[key] = dev.get_info(what) if dev.supports(what) else ""
        out.append(info)
    return out


# Color formats a recording may hold, and how to turn them into RGB (live streams are asked for
# rgb8 and the SDK converts).
_COLOR_FORMATS = {"rgb8": slice(0, 3), "rgba8": slice(0, 3), "bgr8": slice(2, None, -1),
                  "bgra8": slice(2, None, -1)}


END_WAIT_S = 0.5
"""After a recording's last frame left the file, how long the syncer may take to hand over
what it still holds (a loaded host delays its thread)."""
FIRST_WAIT_S = 3.0
"""The same when nothing has been read yet, or when single frames wait for their partner
stream: a short recording can leave the file before a starved syncer has handed over its
first frameset, or all of one stream's frames (a fresh-clone test run once got the 8 frames
of one stream and none of the other before the 0.5 s end wait ran out)."""


class RealSenseCamera(Camera):
    """A RealSense device or recording streaming synchronized color and depth.

    Live devices stream through the SDK's pipeline (which also records, ``record_to``).
    Recordings are opened at the sensor level instead, so non-real-time playback is set before
    the first frame leaves the file: the pipeline starts every playback in real time, and a
    reader slower than the recording then loses frames."""

    def __init__(self, cfg: RealSenseConfig | None = None):
        self.cfg = cfg = cfg or RealSenseConfig()
        cfg.validate()
        self.name = f"realsense:{cfg.playback or cfg.serial or 'first'}"
        self._rs = import_rs()
        self._pipe: pyrealsense2.pipeline | None = None          # live
        self._sensors: list[pyrealsense2.sensor] = []             # playback
        self._syncer: pyrealsense2.syncer | None = None           # playback
        self._playback: pyrealsense2.playback | None = None
        self._align: pyrealsense2.align | None = None
        self._pairs: FramePairs | None = None
        """Pairs color and depth frames the syncer handed over apart (a starved host)."""
        self._color_order = _COLOR_FORMATS["rgb8"]
        self._intrinsics: dict[int, Intrinsics] = {}
        self.frames_read = 0
        self.incomplete = 0
        """Framesets skipped because one enabled stream was missing and no partner for it
        has arrived yet (syncer start-up)."""

    @property
    def connected(self) -> bool:
        return self._pipe is not None or self._syncer is not None

    # ------------------------------------------------------------------ lifecycle
    def connect(self) -> None:
        if self.connected:
            return
        if self.cfg.playback is not None:
            self._open_playback()
        else:
            self._open_live()
        cfg, rs = self.cfg, self._rs
        if cfg.color and cfg.depth:
            self._pairs = FramePairs(rs, [rs.stream.color, rs.stream.depth])
        if cfg.color and cfg.depth and cfg.align != "none":
            self._align = rs.align(rs.stream.color if cfg.align == "color" else rs.stream.depth)

    def _open_live(self) -> None:
        rs, cfg = self._rs, self.cfg
        rs_cfg = rs.config()
        if cfg.serial is not None:
            rs_cfg.enable_device(cfg.serial)
        if cfg.record_to is not None:
            rs_cfg.enable_record_to_file(str(cfg.record_to))
        if cfg.color:
            rs_cfg.enable_stream(rs.stream.color, cfg.width, cfg.height, rs.format.rgb8, cfg.fps)
        if cfg.depth:
            rs_cfg.enable_stream(rs.stream.depth, cfg.width, cfg.height, rs.format.z16, cfg.fps)
        pipe = rs.pipeline()
        if not rs_cfg.can_resolve(rs.pipeline_wrapper(pipe)):
            raise CameraError(self._live_unresolvable())
        try:
            pipe.start(rs_cfg)
        except RuntimeError as e:
            raise CameraError(f"{self.name}: cannot start streaming: {e}") from e
        self._pipe = pipe

    def _open_playback(self) -> None:
        rs, cfg = self._rs, self.cfg
        try:
            device = rs.context().load_device(str(cfg.playback))
        except RuntimeError as e:
            raise CameraError(f"{self.name}: cannot open the recording: {e}") from e
        playback = device.as_playback()
        playback.set_real_time(cfg.real_time)
        chosen: dict[int, tuple[pyrealsense2.sensor, list[pyrealsense2.stream_profile]]] = {}
        for kind, formats in (("color", _COLOR_FORMATS), ("depth", {"z16": None})):
            if not getattr(cfg, kind):
                continue
            match = [(i, sensor, p) for i, sensor in enumerate(device.query_sensors())
                     for p in sensor.get_stream_profiles() if self._fits(p, kind, formats)]
            if not match:
                raise CameraError(self._describe_unresolvable(device))
            i, sensor, profile = match[0]
            chosen.setdefault(i, (sensor, []))[1].append(profile)
            if kind == "color":
                self._color_order = _COLOR_FORMATS[profile.format().name]
        # Real time: keep only the newest frameset, as a live camera would. Otherwise the file
        # waits for the reader, and a short queue is enough.
        syncer = rs.syncer(1 if cfg.real_time else 16)
        for sensor, profiles in chosen.values():
            sensor.open(profiles)
            self._sensors.append(sensor)
        for sensor in self._sensors:
            sensor.start(syncer)
        self._playback, self._syncer = playback, syncer

    def _fits(self, p: pyrealsense2.stream_profile, kind: str, formats: dict) -> bool:
        cfg = self.cfg
        if p.stream_type().name != kind or not p.is_video_stream_profile():
            return False
        v = p.as_video_stream_profile()
        return (p.format().name in formats and cfg.width in (0, v.width())
                and cfg.height in (0, v.height()) and cfg.fps in (0, p.fps()))

    def close(self) -> None:
        pipe, self._pipe = self._pipe, None
        sensors, self._sensors = self._sensors, []
        self._syncer = self._align = self._playback = self._pairs = None
        for stop in ([pipe.stop] if pipe is not None else []) + [
                f for s in sensors for f in (s.stop, s.close)]:
            try:
                stop()
            except RuntimeError:
                pass  # already stopped by the driver (device unplugged, end of file)

    # ------------------------------------------------------------------ frames
    def read(self, timeout_s: float | None = None) -> CameraFrame | None:
        source = self._source()
        timeout = self.cfg.timeout_s if timeout_s is None else timeout_s
        # Short waits, so the end of a recording is seen within ~0.1 s, not after a timeout.
        deadline = time.monotonic() + timeout
        while True:
            # Once the file is read, what is left is in the SDK's queues: the recording ends
            # only when a longer wait brings nothing (a frameset that comes then may still be
            # half of a pair, so waiting goes on after it).
            ended = self._ended()
            # nothing read yet, or frames held for a partner still in the SDK: wait longer
            waiting = not self.frames_read or (self._pairs is not None and self._pairs.holding)
            wait = (FIRST_WAIT_S if waiting else END_WAIT_S) if ended else 0.02
            ok, frames = source.try_wait_for_frames(int(1000 * wait))
            if ok:
                if (frame := self._convert(frames)) is not None:
                    return frame
                continue
            if ended:
                return None
            if time.monotonic() >= deadline:
                break
        raise CameraError(f"{self.name}: no frame within {timeout:.2f} s "
                          f"({self.frames_read} read so far); is the camera connected?")

    def poll(self) -> CameraFrame | None:
        frames = self._source().poll_for_frames()
        return self._convert(frames) if frames else None

    def _source(self) -> pyrealsense2.pipeline | pyrealsense2.syncer:
        source = self._pipe if self._pipe is not None else self._syncer
        if source is None:
            raise CameraError(f"{self.name} is not connected; call connect() or use `with`")
        return source

    def _ended(self) -> bool:
        return (self._playback is not None
                and self._playback.current_status() == self._rs.playback_status.stopped)

    def _convert(self, frames: pyrealsense2.composite_frame) -> CameraFrame | None:
        """The frameset as a CameraFrame; None if an enabled stream is missing from it."""
        host_time = time.monotonic()
        frames = frames.as_frameset()
        color = frames.get_color_frame() if self.cfg.color else None
        depth = frames.get_depth_frame() if self.cfg.depth else None
        if (self.cfg.color and not color) or (self.cfg.depth and not depth):
            whole = None if self._pairs is None else self._pairs.add(frames)
            if whole is None:
                self.incomplete += 1
                return None
            frames, color, depth = whole, whole.get_color_frame(), whole.get_depth_frame()
        if self._align is not None:
            frames = self._align.process(frames)
            color = frames.get_color_frame()
            depth = frames.get_depth_frame()
        # The aligned-to stream's geometry is the one both arrays share.
        ref = depth if (color is None or self.cfg.align == "depth") else color
        assert ref is not None  # validate() keeps at least one stream on
        self.frames_read += 1
        return CameraFrame(
            color=np.asanyarray(color.get_data())[..., self._color_order].copy() if color else None,
            depth=np.asanyarray(depth.get_data()).copy() if depth else None,
            depth_scale=float(depth.as_depth_frame().get_units()) if depth else 0.0,
            frame_number=int(ref.get_frame_number()),
            timestamp_ms=float(ref.get_timestamp()),
            timestamp_domain=ref.get_frame_timestamp_domain().name,
            host_time=host_time,
            intrinsics=self._intrinsics_of(ref.get_profile()),
        )

    def _intrinsics_of(self, profile: pyrealsense2.stream_profile) -> Intrinsics:
        key = profile.unique_id()
        if key not in self._intrinsics:
            i = profile.as_video_stream_profile().get_intrinsics()
            self._intrinsics[key] = Intrinsics(
                width=i.width, height=i.height, fx=i.fx, fy=i.fy, ppx=i.ppx, ppy=i.ppy,
                model=i.model.name, coeffs=tuple(float(c) for c in i.coeffs))
        return self._intrinsics[key]

    # ------------------------------------------------------------------ errors
    def _live_unresolvable(self) -> str:
        rs, cfg = self._rs, self.cfg
        devices = list(rs.context().query_devices())
        if cfg.serial is not None:
            devices = [d for d in devices if d.get_info(rs.camera_info.serial_number) == cfg.serial]
        if not devices:
            found = ", ".join(d["serial"] for d in list_devices()) or "none"
            return (f"{self.name}: no RealSense device"
                    f"{' with serial ' + cfg.serial if cfg.serial else ''} is connected "
                    f"(found: {found})")
        return self._describe_unresolvable(devices[0])

    def _describe_unresolvable(self, device: pyrealsense2.device) -> str:
        """Why the requested streams cannot be had, naming what the device does offer."""
        cfg = self.cfg
        want = (f"{cfg.width or 'any'}x{cfg.height or 'any'} @ {cfg.fps or 'any'} Hz "
                f"({', '.join(s for s, on in (('color', cfg.color), ('depth', cfg.depth)) if on)})")
        offered = sorted({
            f"{p.stream_type().name} {p.as_video_stream_profile().width()}x"
            f"{p.as_video_stream_profile().height()} {p.format().name} @ {p.fps()} Hz"
            for s in device.query_sensors() for p in s.get_stream_profiles()
            if p.is_video_stream_profile()})
        return f"{self.name} does not offer {want}; it offers:\n  " + "\n  ".join(offered)
