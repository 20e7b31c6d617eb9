"""Write RealSense recordings from arrays, so camera code can be exercised without a camera.

    write_recording("scene.db3", colors, depths, fps=30, depth_scale=0.001)
    with RealSenseCamera(RealSenseConfig(playback="scene.db3", real_time=False)) as cam:
        ...

The frames go through librealsense itself: a ``software_device`` with a depth and a color
sensor (intrinsics, depth units, depth-to-color extrinsics registered) wrapped by the SDK's
``recorder``, so the file is byte-for-byte what the SDK writes for a live camera and plays
back through the same pipeline, alignment included. Sim renders (``robot-rl sim rollout``) or
images from another camera can be turned into a recording this way.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from robot_rl.hardware.cameras.base import CameraError, Intrinsics
from robot_rl.hardware.cameras.realsense import import_rs


def pinhole(width: int, height: int, fov_x_deg: float = 69.0) -> Intrinsics:
    """A distortion-free pinhole with the principal point at the image centre."""
    fx = 0.5 * width / np.tan(np.deg2rad(fov_x_deg) / 2)
    return Intrinsics(width=width, height=height, fx=float(fx), fy=float(fx),
                      ppx=width / 2, ppy=height / 2)


def write_recording(path: str | Path, colors: Sequence[np.ndarray], depths: Sequence[np.ndarray],
                    *, fps: int = 30, depth_scale: float = 0.001,
                    color_intrinsics: Intrinsics | None = None,
                    depth_intrinsics: Intrinsics | None = None,
                    depth_to_color: tuple[Sequence[float], Sequence[float]] | None = None,
                    serial: str = "000000000000") -> Path:
    """Record ``len(colors)`` synchronized frames (frame numbers 0.., timestamps k * 1000/fps ms).

    colors: (H, W, 3) uint8 RGB each.  depths: (H', W') uint16 raw depth each, in units of
    ``depth_scale`` metres.  Writing takes real time (``len(colors) / fps`` seconds): the SDK
    stamps recorded messages on arrival.  ``depth_to_color`` = (row-major 3x3 rotation,
    translation [m]); identity when None.  The file name must carry the SDK's extension
    (.db3 in 2.59)."""
    rs = import_rs()
    if len(colors) != len(depths) or not colors:
        raise CameraError(f"write_recording: need as many color as depth frames (>= 1), got "
                          f"{len(colors)} and {len(depths)}")
    ch, cw = colors[0].shape[:2]
    dh, dw = depths[0].shape
    for k, (c, d) in enumerate(zip(colors, depths, strict=True)):
        if c.shape != (ch, cw, 3) or c.dtype != np.uint8:
            raise CameraError(f"color frame {k}: want ({ch}, {cw}, 3) uint8, got "
                              f"{c.shape} {c.dtype}")
        if d.shape != (dh, dw) or d.dtype != np.uint16:
            raise CameraError(f"depth frame {k}: want ({dh}, {dw}) uint16, got {d.shape} {d.dtype}")
    color_intrinsics = color_intrinsics or pinhole(cw, ch)
    depth_intrinsics = depth_intrinsics or pinhole(dw, dh)

    device = rs.software_device()
    device.register_info(rs.camera_info.name, "robot_rl synthetic RealSense")
    device.register_info(rs.camera_info.serial_number, serial)
    depth_sensor = device.add_sensor("Stereo Module")
    depth_sensor.add_read_only_option(rs.option.depth_units, depth_scale)
    color_sensor = device.add_sensor("RGB Camera")
    depth_profile = depth_sensor.add_video_stream(
        _stream(rs, rs.stream.depth, 0, rs.format.z16, 2, fps, depth_intrinsics))
    color_profile = color_sensor.add_video_stream(
        _stream(rs, rs.stream.color, 1, rs.format.rgb8, 3, fps, color_intrinsics))
    extrinsics = rs.extrinsics()
    rotation, translation = depth_to_color or ((1, 0, 0, 0, 1, 0, 0, 0, 1), (0, 0, 0))
    extrinsics.rotation = [float(r) for r in rotation]
    extrinsics.translation = [float(t) for t in translation]
    depth_profile.register_extrinsics_to(color_profile, extrinsics)

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    try:
        recorder = rs.recorder(str(path), device)
    except RuntimeError as e:
        raise CameraError(f"cannot record to {path}: {e}") from e
    # Frames pushed into the software sensors pass through the recorder's wrappers of them.
    wrapped = recorder.query_sensors()
    for sensor in wrapped:
        sensor.open(sensor.get_stream_profiles()[0])
        sensor.start(lambda _frame: None)
    start = time.monotonic()
    try:
        for k, (color, depth) in enumerate(zip(colors, depths, strict=True)):
            stamp = k * 1000.0 / fps
            # The recorder stamps each message with the time it arrives, and playback (and the
            # pipeline's syncer) follows those stamps: frames are pushed at the recorded pace.
            time.sleep(max(0.0, start + k / fps - time.monotonic()))
            for sensor, profile, pixels, bpp in ((depth_sensor, depth_profile, depth, 2),
                                                 (color_sensor, color_profile, color, 3)):
                frame = rs.software_video_frame()
                frame.pixels = np.ascontiguousarray(pixels)
                frame.bpp = bpp
                frame.stride = pixels.shape[1] * bpp
                frame.timestamp = stamp
                frame.domain = rs.timestamp_domain.hardware_clock
                frame.frame_number = k
                frame.profile = profile.as_video_stream_profile()
                if bpp == 2:
                    frame.depth_units = depth_scale
                sensor.on_video_frame(frame)
    finally:
        for sensor in wrapped:
            sensor.stop()
            sensor.close()
        # The file is finalized when the recorder is destroyed.
        del wrapped, recorder
        gc.collect()
    return path


def _stream(rs, kind, uid: int, fmt, bpp: int, fps: int, intr: Intrinsics):  # type: ignore[no-untyped-def]
    intrinsics = rs.intrinsics()
    intrinsics.width, intrinsics.height = intr.width, intr.height
    intrinsics.fx, intrinsics.fy = intr.fx, intr.fy
    intrinsics.ppx, intrinsics.ppy = intr.ppx, intr.ppy
    intrinsics.model = rs.distortion.none
    intrinsics.coeffs = [0.0] * 5
    stream = rs.video_stream()
    stream.type, stream.index, stream.uid = kind, 0, uid
    stream.width, stream.height, stream.fps, stream.bpp, stream.fmt = (
        intr.width, intr.height, fps, bpp, fmt)
    stream.intrinsics = intrinsics
    return stream
