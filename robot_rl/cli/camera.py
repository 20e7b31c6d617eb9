"""``robot-rl camera list`` and ``robot-rl camera probe``: check a RealSense before using it."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Literal

from rich.console import Console
from rich.table import Table


@dataclasses.dataclass(kw_only=True)
class CameraListConfig:
    """List the connected RealSense cameras (name, serial, firmware, USB).

    Example: robot-rl camera list
    """


@dataclasses.dataclass(kw_only=True)
class CameraProbeConfig:
    """Stream a RealSense (live or a recording) and report rate, resolution, depth and timing.

    Example: robot-rl camera probe --width 640 --height 480 --fps 30 --frames 90
             robot-rl camera probe --playback scene.db3 --no-real-time
    """

    serial: str | None = None
    """Serial of the live camera (default: the first one found)."""
    playback: Path | None = None
    """Probe this recording instead of a live camera."""
    width: int = 0
    """Image width [px]; 0 = the device default or as recorded."""
    height: int = 0
    """Image height [px]; 0 = the device default or as recorded."""
    fps: int = 0
    """Frame rate [Hz]; 0 = the device default or as recorded."""
    align: Literal["color", "depth", "none"] = "color"
    """Align depth to color, color to depth, or neither."""
    frames: int = 60
    """Frames to read (a recording may end sooner)."""
    real_time: bool = True
    """Playback at the recorded pace (--no-real-time: as fast as frames are read)."""
    record_to: Path | None = None
    """Live only: also record the probe to this file."""


def list_cmd(_: CameraListConfig) -> None:
    from robot_rl.hardware.cameras.realsense import list_devices

    devices = list_devices()
    console = Console()
    if not devices:
        console.print("no RealSense camera connected")
        return
    table = Table("name", "serial", "firmware", "usb")
    for d in devices:
        table.add_row(d["name"], d["serial"], d["firmware"], d["usb"])
    console.print(table)


def probe_cmd(cfg: CameraProbeConfig) -> None:
    import numpy as np

    from robot_rl.hardware.cameras.realsense import RealSenseCamera, RealSenseConfig

    cam = RealSenseCamera(RealSenseConfig(
        serial=cfg.serial, playback=cfg.playback, width=cfg.width, height=cfg.height,
        fps=cfg.fps, align=cfg.align, real_time=cfg.real_time, record_to=cfg.record_to))
    console = Console()
    frames = []
    with cam, console.status(f"reading {cfg.frames} frames from {cam.name}") as status:
        for frame in cam:
            frames.append(frame)
            status.update(f"{len(frames)}/{cfg.frames} frames from {cam.name}")
            if len(frames) >= cfg.frames:
                break
    if not frames:
        console.print(f"{cam.name}: no frames ({cam.incomplete} framesets without every "
                      "enabled stream skipped)")
        return
    first, last = frames[0], frames[-1]
    host_span = last.host_time - first.host_time
    dev_span = (last.timestamp_ms - first.timestamp_ms) / 1000
    numbers = np.array([f.frame_number for f in frames])
    table = Table("", "value", title=f"{cam.name} ({len(frames)} frames)")
    table.add_row("color", "off" if first.color is None else
                  f"{first.color.shape[1]}x{first.color.shape[0]} RGB")
    if first.depth is None:
        table.add_row("depth", "off")
    else:
        h, w = first.depth.shape
        table.add_row("depth", f"{w}x{h}, {first.depth_scale * 1000:.3g} mm/unit, "
                               f"aligned to {cfg.align}")
    i = first.intrinsics
    table.add_row("intrinsics", f"fx {i.fx:.1f} fy {i.fy:.1f} ppx {i.ppx:.1f} ppy {i.ppy:.1f} "
                                f"({i.model})")
    if len(frames) > 1:
        table.add_row("rate (host clock)", f"{(len(frames) - 1) / max(host_span, 1e-9):.1f} Hz")
        table.add_row("rate (device clock)", f"{(len(frames) - 1) / max(dev_span, 1e-9):.1f} Hz")
        table.add_row("frames skipped", str(int(np.sum(np.diff(numbers) - 1))))
    table.add_row("timestamps", first.timestamp_domain)
    if first.depth is not None:
        recent = frames[-5:]
        valid = np.concatenate([f.depth_m()[f.depth > 0] for f in recent])
        p5, p95 = np.percentile(valid, [5, 95]) if valid.size else (0.0, 0.0)
        table.add_row("depth range", "no valid pixels" if valid.size == 0 else
                      f"{p5:.3f} .. {p95:.3f} m (p5..p95), "
                      f"{100 * valid.size / (len(recent) * first.depth.size):.0f}% valid")
    table.add_row("read at", time.strftime("%Y-%m-%d %H:%M:%S"))
    console.print(table)
