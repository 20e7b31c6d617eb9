"""Camera images over ROS 2, as the RealSense ROS wrapper publishes them.

Topics of a camera under namespace ``ns`` (the wrapper's names):

    {ns}/color/image_raw                    sensor_msgs/Image rgb8 (bgr8 accepted)
    {ns}/aligned_depth_to_color/image_raw   sensor_msgs/Image 16UC1 millimetres (32FC1 metres
                                            accepted), the color capture's header stamp
    {ns}/color/camera_info                  sensor_msgs/CameraInfo of the color image

``RosImageCamera`` subscribes to them on a node and is a ``Camera``: ``poll`` returns the
newest color (+ depth of the same stamp) pair once, never blocking, so a policy node's loop
can feed it to ``DeployRuntime``. Malformed images are dropped with a reason. The node's
executor delivers the messages; ``read`` only waits for it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import numpy as np
from rclpy.node import Node
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import CameraInfo, Image

from robot_rl.hardware.cameras.base import Camera, CameraFrame, Intrinsics

IMAGE_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=2,
                       reliability=ReliabilityPolicy.BEST_EFFORT)
"""Images: the newest only, no retransmission (the wrapper's sensor-data default)."""
DEPTH_SCALE = 0.001
"""Metres per unit of a 16UC1 depth image."""


def color_topic(ns: str) -> str:
    return f"{ns.rstrip('/')}/color/image_raw"


def depth_topic(ns: str) -> str:
    return f"{ns.rstrip('/')}/aligned_depth_to_color/image_raw"


def info_topic(ns: str) -> str:
    return f"{ns.rstrip('/')}/color/camera_info"


def _stamp(msg: Image | CameraInfo, stamp_ns: int, frame_id: str) -> None:
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(int(stamp_ns), 1_000_000_000)
    msg.header.frame_id = frame_id


def image_msg(array: np.ndarray, stamp_ns: int, frame_id: str) -> Image:
    """(H, W, 3) uint8 RGB -> rgb8, (H, W) uint16 millimetres -> 16UC1."""
    msg = Image()
    _stamp(msg, stamp_ns, frame_id)
    msg.height, msg.width = int(array.shape[0]), int(array.shape[1])
    if array.dtype == np.uint8 and array.ndim == 3 and array.shape[2] == 3:
        msg.encoding, msg.step = "rgb8", 3 * msg.width
    elif array.dtype == np.uint16 and array.ndim == 2:
        msg.encoding, msg.step = "16UC1", 2 * msg.width
    else:
        raise ValueError(f"no image encoding for an array of {array.dtype} {array.shape}")
    msg.is_bigendian = 0
    msg.data = np.ascontiguousarray(array).tobytes()
    return msg


def camera_info_msg(intr: Intrinsics, stamp_ns: int, frame_id: str) -> CameraInfo:
    msg = CameraInfo()
    _stamp(msg, stamp_ns, frame_id)
    msg.height, msg.width = intr.height, intr.width
    msg.distortion_model = "plumb_bob" if intr.model == "none" else intr.model
    msg.d = [float(c) for c in intr.coeffs]
    msg.k = [intr.fx, 0.0, intr.ppx, 0.0, intr.fy, intr.ppy, 0.0, 0.0, 1.0]
    msg.r = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    msg.p = [intr.fx, 0.0, intr.ppx, 0.0, 0.0, intr.fy, intr.ppy, 0.0, 0.0, 0.0, 1.0, 0.0]
    return msg


def image_array(msg: Image) -> np.ndarray | str:
    """The image as (H, W, 3) uint8 RGB or (H, W) uint16 millimetres; a reason if malformed."""
    h, w, enc = msg.height, msg.width, msg.encoding
    layouts = {"rgb8": (np.uint8, 3), "bgr8": (np.uint8, 3), "16UC1": (np.uint16, 1),
               "32FC1": (np.float32, 1)}
    if enc not in layouts:
        return f"unsupported encoding {enc!r} (rgb8, bgr8, 16UC1 or 32FC1)"
    dtype, ch = layouts[enc]
    row = w * ch * np.dtype(dtype).itemsize
    if h < 1 or w < 1 or msg.step < row or len(msg.data) < msg.step * h:
        return f"{enc} image {w}x{h}: step {msg.step} and {len(msg.data)} bytes do not fit"
    a = np.frombuffer(bytes(msg.data), dtype=np.uint8).reshape(h, msg.step)[:, :row]
    a = a.copy().view(np.dtype(dtype).newbyteorder(">" if msg.is_bigendian else "<"))
    a = a.astype(dtype).reshape(h, w, ch) if ch == 3 else a.astype(dtype).reshape(h, w)
    if enc == "bgr8":
        return a[..., ::-1].copy()
    if enc == "32FC1":  # metres -> millimetres, NaN/inf as no return
        m = np.nan_to_num(a, nan=0.0, posinf=0.0, neginf=0.0)
        return np.clip(np.round(m / DEPTH_SCALE), 0, 65535).astype(np.uint16)
    return a


class RosImageCamera(Camera):
    """A camera behind the RealSense ROS wrapper's topics (module docstring)."""

    def __init__(self, node: Node, name: str, namespace: str, depth: bool,
                 log: Callable[[str], None] | None = None):
        self.name, self.namespace, self.depth = name, namespace, depth
        self.log = log or (lambda m: None)
        self._lock = threading.Lock()
        self._color: tuple[int, np.ndarray] | None = None
        self._depth: dict[int, np.ndarray] = {}
        self._intr: Intrinsics | None = None
        self._frame: CameraFrame | None = None
        self.frames = 0
        """Complete frames assembled."""
        self.rejected = 0
        node.create_subscription(Image, color_topic(namespace), self._on_color, IMAGE_QOS)
        node.create_subscription(CameraInfo, info_topic(namespace), self._on_info, IMAGE_QOS)
        if depth:
            node.create_subscription(Image, depth_topic(namespace), self._on_depth, IMAGE_QOS)

    @property
    def topics(self) -> list[str]:
        ns = self.namespace
        return [color_topic(ns)] + ([depth_topic(ns)] if self.depth else [])

    def _decode(self, msg: Image, what: str) -> tuple[int, np.ndarray] | None:
        a = image_array(msg)
        if isinstance(a, str):
            self.rejected += 1
            self.log(f"{self.name}: dropped a {what} image: {a}")
            return None
        return msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec, a

    def _on_color(self, msg: Image) -> None:
        got = self._decode(msg, "color")
        if got is not None and got[1].ndim == 3:
            with self._lock:
                self._color = got
                self._assemble()

    def _on_depth(self, msg: Image) -> None:
        got = self._decode(msg, "depth")
        if got is not None and got[1].ndim == 2:
            with self._lock:
                self._depth[got[0]] = got[1]
                while len(self._depth) > 4:  # keep the newest few for pairing
                    self._depth.pop(min(self._depth))
                self._assemble()

    def _on_info(self, msg: CameraInfo) -> None:
        k = list(msg.k)
        with self._lock:
            self._intr = Intrinsics(width=msg.width, height=msg.height, fx=k[0], fy=k[4],
                                    ppx=k[2], ppy=k[5], model=msg.distortion_model,
                                    coeffs=tuple(float(c) for c in msg.d))

    def _assemble(self) -> None:
        """A frame from the newest color and the depth of its stamp (if depth is on)."""
        if self._color is None:
            return
        stamp, color = self._color
        depth = self._depth.pop(stamp, None) if self.depth else None
        if self.depth and depth is None:
            return
        h, w = color.shape[:2]
        intr = self._intr or Intrinsics(width=w, height=h, fx=0.0, fy=0.0, ppx=w / 2,
                                        ppy=h / 2)
        self._frame = CameraFrame(color=color, depth=depth,
                                  depth_scale=DEPTH_SCALE if depth is not None else 0.0,
                                  frame_number=self.frames, timestamp_ms=stamp * 1e-6,
                                  timestamp_domain="ros_time", host_time=time.monotonic(),
                                  intrinsics=intr)
        self.frames += 1
        self._color = None

    def connect(self) -> None:
        """Subscribed on creation; the node's executor delivers the images."""

    def close(self) -> None:
        """The subscriptions end with the node."""

    def poll(self) -> CameraFrame | None:
        with self._lock:
            frame, self._frame = self._frame, None
        return frame

    def read(self, timeout_s: float | None = None) -> CameraFrame | None:
        return self._poll_until(timeout_s, " + ".join(self.topics), nap=0.002)
