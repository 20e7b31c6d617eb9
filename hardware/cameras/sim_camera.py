"""Cameras on the simulated arm: the scene's cameras rendered from the arm's ground truth, as
``Camera``s that deliver frames the way a RealSense does.

    with SimRobot(cfg, scene=task_cfg) as robot, \\
            SimArmCameras(robot, task_cfg.cameras, SimCameraConfig(fps=30)) as cams:
        frame = cams.camera("front").poll()     # CameraFrame or None; never blocks

One thread renders every camera at ``fps`` from a snapshot of the scene (``SimRobot.
scene_state``) with the policy render mode of training (``sim.render``; no shadows, no goal
markers), then delivers the frames ``latency`` later; a capture is lost with probability
``drop_prob`` (all cameras' frames of it, as a USB hiccup loses a frameset). Frames carry what
a RealSense's do: color (H, W, 3) uint8 RGB; depth (H, W) uint16 millimetres aligned to the
color image (``depth_scale`` 0.001, 0 where nothing is in range); the pinhole intrinsics of
the scene camera's field of view; ``host_time`` when the frame is delivered;
``timestamp_ms`` the capture time on the monotonic clock.

The OpenGL context is made and used on the render thread only. The render thread shares the
caller's GIL, as a RealSense driver's Python frames do. With ``on_frame(name, frame)``, a
thread per camera hands each frame to it as the frame comes due (the arm's process writes
them to shared memory, ``sim_robot_node`` publishes them); ``poll`` then has nothing to give.
"""

from __future__ import annotations

import collections
import math
import threading
import time
from collections.abc import Callable
from typing import Protocol

import mujoco
import numpy as np

from robot_rl.errors import ConfigError
from robot_rl.hardware.cameras.base import Camera, CameraError, CameraFrame, Intrinsics
from robot_rl.hardware.configs import SimCameraConfig
from robot_rl.hardware.sim_robot import SceneState
from robot_rl.hardware.timing import Rate
from robot_rl.sim.configs import CameraConfig
from robot_rl.sim.render import OffscreenGL

DEPTH_SCALE = 0.001
"""Metres per raw depth unit, a RealSense's default."""


class SceneSource(Protocol):
    """What the cameras render: a simulated arm (``SimRobot``)."""

    model: mujoco.MjModel

    def scene_state(self) -> SceneState: ...


def intrinsics_of(model: mujoco.MjModel, camera: str, width: int, height: int) -> Intrinsics:
    """The pinhole intrinsics of a scene camera's image of ``width`` x ``height`` (MuJoCo's
    cameras have square pixels and a vertical field of view ``fovy``)."""
    fovy = math.radians(float(model.cam_fovy[model.camera(camera).id]))
    f = 0.5 * height / math.tan(0.5 * fovy)
    return Intrinsics(width=width, height=height, fx=f, fy=f, ppx=0.5 * width,
                      ppy=0.5 * height)


class SimArmCameras:
    """The scene cameras of a simulated arm, rendered on a thread (module docstring)."""

    def __init__(self, source: SceneSource, cameras: CameraConfig,
                 cfg: SimCameraConfig | None = None,
                 on_frame: Callable[[str, CameraFrame], None] | None = None):
        cameras.validate()
        self.cfg = cfg = cfg or SimCameraConfig()
        cfg.validate()
        model = source.model
        cameras.check_scene(model)
        self.source, self.cameras = source, cameras
        self._views = {n: _SimCamera(n, intrinsics_of(model, n, cameras.width, cameras.height))
                       for n in cameras.names}
        self._rng = np.random.default_rng(cfg.seed)
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self.on_frame = on_frame
        self._pumps: list[threading.Thread] = []
        self.captures = 0
        """Captures rendered."""
        self.dropped = 0
        """Captures lost (``drop_prob``)."""

    def camera(self, name: str) -> Camera:
        """The ``Camera`` of scene camera ``name``."""
        if name not in self._views:
            raise ConfigError(f"no simulated camera {name!r}; these render: "
                              f"{', '.join(self._views)}")
        return self._views[name]

    def as_dict(self) -> dict[str, Camera]:
        """{name: Camera} of every camera (what ``DeployRuntime`` takes)."""
        return dict(self._views)

    def connect(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._ready.clear()
        for view in self._views.values():
            view.begin()
        self._thread = threading.Thread(target=self._run, name="sim-cameras", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            self._thread.join()
            self._thread = None
            raise self._error
        if self.on_frame is not None:
            self._pumps = [threading.Thread(target=self._pump, args=(view,), daemon=True,
                                            name=f"sim-camera-{name}")
                           for name, view in self._views.items()]
            for pump in self._pumps:
                pump.start()

    def close(self) -> None:
        if self._thread is None:
            return
        self._stop.set()
        for thread in [*self._pumps, self._thread]:
            thread.join()
        self._pumps, self._thread = [], None

    def _pump(self, view: _SimCamera) -> None:
        """Hand ``view``'s frames to ``on_frame`` as they come due, until ``close``."""
        assert self.on_frame is not None
        while not self._stop.is_set():
            try:
                frame = view.read(0.1)
            except CameraError:  # none due within the wait
                continue
            if frame is not None:
                self.on_frame(view.name, frame)

    def __enter__(self) -> SimArmCameras:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the render thread -----------------------------------------------------------------

    def _run(self) -> None:
        cams, model = self.cameras, self.source.model
        try:
            gl = OffscreenGL(model, cams.width, cams.height, cams.names[0], cams.mode)
        except BaseException as e:  # noqa: BLE001 - raised by connect on the caller's thread
            self._error = e
            self._ready.set()
            return
        self._ready.set()
        data = mujoco.MjData(model)
        ids = [model.camera(n).id for n in cams.names]
        rate = Rate(self.cfg.fps)
        try:
            while not self._stop.is_set():
                rate.sleep()
                captured = time.monotonic()
                scene = self.source.scene_state()
                data.qpos[:], data.mocap_pos[:] = scene.qpos, scene.mocap_pos
                mujoco.mj_kinematics(model, data)
                mujoco.mj_camlight(model, data)
                shots = [gl.render_rgbd(data, i) if cams.depth else (gl.render(data, i), None)
                         for i in ids]
                self.captures += 1
                if self._rng.random() < self.cfg.drop_prob:
                    self.dropped += 1
                    continue
                due = captured + self.cfg.latency
                for (rgb, depth), view in zip(shots, self._views.values(), strict=True):
                    raw = None if depth is None else np.clip(
                        np.round(depth / DEPTH_SCALE), 0, 65535).astype(np.uint16)
                    view.deliver(CameraFrame(
                        color=rgb, depth=raw, depth_scale=DEPTH_SCALE if cams.depth else 0.0,
                        frame_number=self.captures, timestamp_ms=captured * 1e3,
                        timestamp_domain="system_time", host_time=due,
                        intrinsics=view.intrinsics))
        finally:
            gl.close()
            for view in self._views.values():
                view.end()


class _SimCamera(Camera):
    """One scene camera's frames, delivered when due (``host_time``)."""

    def __init__(self, name: str, intrinsics: Intrinsics):
        self.name, self.intrinsics = name, intrinsics
        self._queue: collections.deque[CameraFrame] = collections.deque(maxlen=64)
        self._cond = threading.Condition()
        self._live = True

    def deliver(self, frame: CameraFrame) -> None:
        with self._cond:
            self._queue.append(frame)
            self._cond.notify_all()

    def begin(self) -> None:
        with self._cond:
            self._queue.clear()
            self._live = True

    def end(self) -> None:
        with self._cond:
            self._live = False
            self._cond.notify_all()

    def connect(self) -> None:
        """The frames stream while the ``SimArmCameras`` they belong to is connected."""

    def close(self) -> None:
        """Closing ``SimArmCameras`` stops every camera."""

    def poll(self) -> CameraFrame | None:
        """The newest frame now due, dropping older ones; None if none is due."""
        now = time.monotonic()
        newest = None
        with self._cond:
            while self._queue and self._queue[0].host_time <= now:
                newest = self._queue.popleft()
        return newest

    def read(self, timeout_s: float | None = None) -> CameraFrame | None:
        deadline = time.monotonic() + (1.0 if timeout_s is None else timeout_s)
        while True:
            frame = self.poll()
            if frame is not None:
                return frame
            now = time.monotonic()
            with self._cond:
                if not self._live and not self._queue:
                    raise CameraError(f"simulated camera {self.name} is closed")
                wait = deadline - now
                if wait <= 0:
                    break
                if self._queue:  # the next frame is queued: wait until it is due
                    wait = min(wait, max(self._queue[0].host_time - now, 0.0))
                self._cond.wait(wait)
        raise CameraError(f"simulated camera {self.name}: no frame within "
                          f"{1.0 if timeout_s is None else timeout_s:.2f} s")
