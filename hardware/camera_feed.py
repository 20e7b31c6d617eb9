"""Camera frames for a policy that sees cameras: the newest frame of each camera, its age
checked, converted to the artifact's image inputs.

    feed = CameraFeed(policy.images, {"front": front_cam, "wrist": wrist_cam}, max_age=0.1)
    feed.poll()                       # every loop tick: picks up frames, never blocks
    feed.stale(now)                   # "front: newest frame 140 ms old" or None
    a = policy(obs, feed.images())    # {"front.rgb": (3, H, W) uint8, "front.depth": ...}

An artifact's ``images`` say each input's camera, kind and (C, H, W) shape (``vision.export``).
Color frames become (3, H, W) uint8 RGB, resized by area averaging where the camera streams
a larger image (a RealSense at 640x480 for a 96x96 policy); depth becomes (1, H, W) float32
metres, resized by nearest neighbour so holes (0) never blend into valid depth. Sizes should
keep the image's aspect ratio: the policy's cameras in training have the stream's field of
view.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch
import torch.nn.functional as F

from robot_rl.errors import ConfigError
from robot_rl.export.policy import GraphInput
from robot_rl.hardware.cameras.base import Camera, CameraError, CameraFrame


class CameraFeed:
    """The cameras a policy sees, as its image inputs (module docstring)."""

    def __init__(self, inputs: list[GraphInput], cameras: Mapping[str, Camera],
                 max_age: float):
        if not max_age > 0:
            raise ConfigError(f"the camera frames' maximum age must be positive, got {max_age}")
        self.inputs = list(inputs)
        names = list(dict.fromkeys(key.rsplit(".", 1)[0] for key, _, _ in self.inputs))
        missing = [n for n in names if n not in cameras]
        if missing:
            raise ConfigError(f"the policy sees camera(s) {missing}, which were not given "
                              f"(given: {', '.join(cameras) or 'none'})")
        self.cameras = {n: cameras[n] for n in names}
        self.max_age = max_age
        self.latest: dict[str, CameraFrame | None] = {n: None for n in names}
        self.frames = {n: 0 for n in names}
        """Frames picked up per camera."""

    def poll(self) -> None:
        """Pick up each camera's newest frame, if one arrived (never blocks)."""
        for name, cam in self.cameras.items():
            frame = cam.poll()
            if frame is not None:
                self.latest[name] = frame
                self.frames[name] += 1

    def age(self, now: float) -> float:
        """Age of the oldest camera's newest frame [s] (inf before every camera has one)."""
        return max((now - f.host_time if f is not None else float("inf"))
                   for f in self.latest.values())

    def stale(self, now: float) -> str | None:
        """Why the frames are too old to act on (which camera, how old), or None."""
        for name, f in self.latest.items():
            if f is None:
                return f"camera {name}: no frame yet"
            if now - f.host_time > self.max_age:
                return (f"camera {name}: newest frame {(now - f.host_time) * 1e3:.0f} ms old "
                        f"(limit {self.max_age * 1e3:.0f} ms)")
        return None

    def images(self) -> dict[str, np.ndarray]:
        """The newest frames as the policy's image inputs (``stale`` must be None)."""
        out = {}
        for key, shape, _ in self.inputs:
            name, kind = key.rsplit(".", 1)
            frame = self.latest[name]
            if frame is None:
                raise CameraError(f"camera {name} has delivered no frame")
            out[key] = frame_input(frame, kind, shape, name)
        return out

    def blank(self) -> dict[str, np.ndarray]:
        """Zero images of the inputs' shapes and dtypes (warming the network up)."""
        return {key: np.zeros(shape, dtype=dtype) for key, shape, dtype in self.inputs}


def frame_input(frame: CameraFrame, kind: str, shape: tuple[int, ...],
                camera: str = "camera") -> np.ndarray:
    """One image input of ``shape`` (C, H, W) from a frame: ``rgb`` (uint8) or ``depth``
    (float32 metres); see module docstring."""
    _, h, w = shape
    if kind == "rgb":
        if frame.color is None:
            raise CameraError(f"{camera}: the policy sees color; the frame has no color "
                              f"stream (enable it)")
        rgb = torch.from_numpy(frame.color).permute(2, 0, 1)  # (3, H, W)
        if rgb.shape[1:] != (h, w):
            mode = "area" if rgb.shape[1] >= h and rgb.shape[2] >= w else "bilinear"
            rgb = F.interpolate(rgb[None].float(), size=(h, w), mode=mode)[0]
            rgb = rgb.round().clamp(0, 255).to(torch.uint8)
        return rgb.contiguous().numpy()
    if kind == "depth":
        if frame.depth is None:
            raise CameraError(f"{camera}: the policy sees depth; the frame has no depth "
                              f"stream (enable it, aligned to color)")
        depth = frame.depth_m()
        if depth.shape != (h, w):
            rows = (np.arange(h) * depth.shape[0]) // h
            cols = (np.arange(w) * depth.shape[1]) // w
            depth = depth[rows[:, None], cols[None, :]]
        return np.ascontiguousarray(depth[None], dtype=np.float32)
    raise ConfigError(f"unknown image kind {kind!r} (rgb or depth)")
