"""The simulated arm in a process of its own, as a real arm's driver is.

``SimRobot`` steps its physics on a thread of the caller's process, which then shares Python's
GIL with the deploy loop: every physics step can delay a loop tick. A real arm never runs in
the policy's process, so timing figures are taken against this instead:

    with SimRobotProcess(SimRobotConfig(interface="effort")) as robot:   # same Robot interface
        r = robot.observe(); robot.send_action(cmd); robot.ee_pos()

The child process runs an ordinary ``SimRobot`` (same physics, latency, noise, delay and
held-out dynamics). After every physics step it publishes the reading ``observe`` may return
(latency applied) and the ground truth into shared memory, and picks up the newest command,
so a command acts at the next physics step, as with the threaded arm. Readings carry the
child's ``time.monotonic`` stamps, which is the same clock system-wide on Linux.

With a task's ``scene`` the arm stands in that task's scene (``SimRobot``), and with
``cameras`` the child also renders the scene's cameras (``SimArmCameras``: rate, latency,
drops) and publishes each delivered frame into shared memory; ``camera(name)`` reads them
here as a ``Camera``, as a camera driver's frames reach the policy's process:

    with SimRobotProcess(SimRobotConfig(), scene=task_cfg, cameras=task_cfg.cameras) as robot:
        robot.reset(None, scene); frame = robot.camera("front").poll()
"""

from __future__ import annotations

import functools
import multiprocessing as mp
import time
from typing import Any

import numpy as np

from robot_rl.errors import ConfigError
from robot_rl.hardware.cameras.base import Camera, CameraError, CameraFrame, Intrinsics
from robot_rl.hardware.cameras.sim_camera import DEPTH_SCALE, SimArmCameras, intrinsics_of
from robot_rl.hardware.configs import INTERFACES, SimCameraConfig, SimRobotConfig
from robot_rl.hardware.robot import JointCommand, JointReading, Robot
from robot_rl.hardware.sim_robot import SceneState, build_model, init_sim_arm
from robot_rl.sim.configs import CameraConfig
from robot_rl.sim.tasks.config import TaskConfig

_CAMERA_FIELDS = ("seq", "host_time", "timestamp_ms", "frame_number")


class _Layout:
    """Offsets into the shared float64 block for an arm of n joints in a scene of nq joint
    positions and nmocap markers, with ``cameras`` publishing frames."""

    def __init__(self, n: int, nq: int, nmocap: int, cameras: tuple[str, ...] = ()):
        self.n = n
        fields = [("reading_seq", 1), ("stamp", 1), ("q", n), ("qd", n), ("effort", n),
                  ("true_q", n), ("ee_pos", 3), ("steps", 1), ("late_steps", 1),
                  ("cmd_seq", 1), ("cmd_interface", 1), ("cmd_hold", 1), ("cmd_gripper", 1),
                  ("cmd_values", n), ("sensing", 1), ("scene_qpos", nq),
                  ("mocap_pos", 3 * nmocap)]
        fields += [(f"{c}.{f}", 1) for c in cameras for f in _CAMERA_FIELDS]
        self.slices: dict[str, slice] = {}
        at = 0
        for name, width in fields:
            self.slices[name] = slice(at, at + width)
            at += width
        self.size = at

    def views(self, block: Any) -> dict[str, np.ndarray]:
        a = np.frombuffer(block, dtype=np.float64)
        return {name: a[s] for name, s in self.slices.items()}


class SimRobotProcess(Robot):
    """``SimRobot`` in a child process behind the same Robot interface (module docstring)."""

    def __init__(self, cfg: SimRobotConfig | None = None, start_timeout: float = 60.0, *,
                 scene: TaskConfig | None = None, cameras: CameraConfig | None = None,
                 camera_cfg: SimCameraConfig | None = None):
        super().__init__()
        self.cfg, self.spec = init_sim_arm(self, cfg)
        self.start_timeout = start_timeout
        self.scene, self.cameras = scene, cameras
        self.camera_cfg = camera_cfg or SimCameraConfig()
        self.model = build_model(self.cfg, self.spec, scene)
        """The child's model (its layout; rendering and physics happen in the child)."""
        m = self.model
        names = () if cameras is None else tuple(cameras.names)
        if cameras is not None:
            cameras.validate()
            cameras.check_scene(m)
            self.camera_cfg.validate()
        self._layout = _Layout(self.spec.num_joints, m.nq, m.nmocap, names)
        ctx = mp.get_context("spawn")  # no fork of a process holding torch/ROS threads
        self._block = ctx.RawArray("d", self._layout.size)
        self._lock = ctx.Lock()
        self._v = self._layout.views(self._block)
        self._images: dict[str, _SharedImages] = {}
        self._cameras: dict[str, _SharedCamera] = {}
        for c in names:
            assert cameras is not None
            self._images[c] = _SharedImages.allocate(ctx, cameras)
            self._cameras[c] = _SharedCamera(c, self, intrinsics_of(m, c, cameras.width,
                                                                    cameras.height))
        self._v["sensing"][0] = 1.0
        self._ctx = ctx
        self._proc: Any = None
        self._control: Any = None
        self._last_seq = -1.0
        self._last: JointReading | None = None

    # -- Robot -----------------------------------------------------------------------------

    def connect(self) -> None:
        if self._proc is not None:
            return
        parent, child = self._ctx.Pipe()
        self._control = parent
        self._proc = self._ctx.Process(
            target=_child, name="sim-robot", daemon=True,
            args=(self.cfg, self._block, self._lock, child, self.scene, self.cameras,
                  self.camera_cfg, self._images))
        self._proc.start()
        deadline = time.monotonic() + self.start_timeout
        while not parent.poll(0.05):
            if not self._proc.is_alive():
                code = self._proc.exitcode
                self._proc = None
                raise ConfigError(
                    f"the simulated arm's process exited (code {code}) before it was ready; a "
                    f"script that starts one needs an `if __name__ == \"__main__\":` guard "
                    f"(multiprocessing spawns it by importing the main module)")
            if time.monotonic() > deadline:
                self.close()
                raise ConfigError(f"the simulated arm's process did not start within "
                                  f"{self.start_timeout:g} s")
        msg = parent.recv()
        if msg != "ready":
            self.close()
            raise ConfigError(f"the simulated arm's process failed: {msg}")
        deadline = time.monotonic() + 5.0
        while self._read() is None and time.monotonic() < deadline:
            time.sleep(0.001)

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            self._control.send(("stop", None))
        except (BrokenPipeError, OSError):
            pass
        proc.join(timeout=5.0)
        if proc.is_alive():
            proc.kill()
            proc.join()

    def _read(self) -> JointReading | None:
        v = self._v
        with self._lock:
            seq = v["reading_seq"][0]
            if seq == self._last_seq:
                return self._last
            if seq == 0:
                return None
            reading = JointReading(v["q"].copy(), v["qd"].copy(), float(v["stamp"][0]),
                                   effort=v["effort"].copy())
        self._last_seq, self._last = seq, reading
        return reading

    def _write(self, cmd: JointCommand) -> None:
        v = self._v
        with self._lock:
            v["cmd_values"][:] = cmd.values
            v["cmd_interface"][0] = INTERFACES.index(cmd.interface)
            v["cmd_hold"][0] = float(cmd.hold)
            v["cmd_gripper"][0] = np.nan if cmd.gripper is None else cmd.gripper
            v["cmd_seq"][0] += 1

    # -- the simulation's controls and ground truth ------------------------------------------

    @property
    def sensing(self) -> bool:
        """False simulates a dead sensor: no new measurements (the physics goes on)."""
        return bool(self._v["sensing"][0])

    @sensing.setter
    def sensing(self, on: bool) -> None:
        self._v["sensing"][0] = float(on)

    def reset(self, q: tuple[float, ...] | np.ndarray | None = None,
              scene: SceneState | None = None) -> None:
        """Put the arm at rest at ``q`` (default: home), holding there; with ``scene``, the
        scene's objects and markers where it says (``SimRobot.reset``)."""
        self._call("reset", (None if q is None else np.asarray(q, dtype=np.float64), scene))

    def scene_state(self) -> SceneState:
        """The whole scene after the latest physics step (ground truth)."""
        with self._lock:
            return SceneState(self._v["scene_qpos"].copy(),
                              self._v["mocap_pos"].copy().reshape(-1, 3))

    def camera(self, name: str) -> Camera:
        """The ``Camera`` of scene camera ``name``, rendered in the child (``cameras``)."""
        if name not in self._cameras:
            raise ConfigError(f"no simulated camera {name!r}; these render: "
                              f"{', '.join(self._cameras) or 'none (pass cameras=)'}")
        return self._cameras[name]

    def camera_dict(self) -> dict[str, Camera]:
        """{name: Camera} of every camera the child renders (what ``DeployRuntime`` takes)."""
        return dict(self._cameras)

    def _frame(self, name: str, last_seq: float) -> tuple[CameraFrame, float] | None:
        """The newest frame of camera ``name`` and its sequence number if newer than
        ``last_seq``, else None."""
        v, images = self._v, self._images[name]
        with self._lock:
            seq = v[f"{name}.seq"][0]
            if seq == last_seq or seq == 0:
                return None
            color, depth = images.read()
            host_time = float(v[f"{name}.host_time"][0])
            stamp = float(v[f"{name}.timestamp_ms"][0])
            number = int(v[f"{name}.frame_number"][0])
        cam = self._cameras[name]
        return CameraFrame(color=color, depth=depth,
                           depth_scale=DEPTH_SCALE if depth is not None else 0.0,
                           frame_number=number, timestamp_ms=stamp,
                           timestamp_domain="system_time", host_time=host_time,
                           intrinsics=cam.intrinsics), float(seq)

    def ee_pos(self) -> np.ndarray:
        """(3,) true end-effector position after the latest physics step."""
        with self._lock:
            return self._v["ee_pos"].copy()

    def true_q(self) -> np.ndarray:
        with self._lock:
            return self._v["true_q"].copy()

    @property
    def steps(self) -> int:
        return int(self._v["steps"][0])

    @property
    def late_steps(self) -> int:
        return int(self._v["late_steps"][0])

    def _call(self, what: str, arg: Any) -> None:
        if self._proc is None:
            raise ConfigError("the simulated arm is not connected")
        self._control.send((what, arg))
        reply = self._control.recv()
        if reply != "ok":
            raise ConfigError(f"simulated arm: {what} failed: {reply}")


class _SharedImages:
    """One camera's newest color (H, W, 3) uint8 and depth (H, W) uint16 in shared memory."""

    def __init__(self, color: Any, depth: Any, shape: tuple[int, int]):
        self.color, self.depth, self.shape = color, depth, shape

    @staticmethod
    def allocate(ctx: Any, cameras: CameraConfig) -> _SharedImages:
        h, w = cameras.height, cameras.width
        depth = ctx.RawArray("H", h * w) if cameras.depth else None
        return _SharedImages(ctx.RawArray("B", h * w * 3), depth, (h, w))

    def write(self, frame: CameraFrame) -> None:
        assert frame.color is not None
        np.frombuffer(self.color, dtype=np.uint8)[:] = frame.color.reshape(-1)
        if self.depth is not None and frame.depth is not None:
            np.frombuffer(self.depth, dtype=np.uint16)[:] = frame.depth.reshape(-1)

    def read(self) -> tuple[np.ndarray, np.ndarray | None]:
        h, w = self.shape
        color = np.frombuffer(self.color, dtype=np.uint8).reshape(h, w, 3).copy()
        depth = None if self.depth is None else \
            np.frombuffer(self.depth, dtype=np.uint16).reshape(h, w).copy()
        return color, depth


class _SharedCamera(Camera):
    """A camera rendered in the arm's process, read from shared memory."""

    def __init__(self, name: str, robot: SimRobotProcess, intrinsics: Intrinsics):
        self.name, self.robot, self.intrinsics = name, robot, intrinsics
        self._seq = 0.0

    def connect(self) -> None:
        """The frames stream while the arm's process runs."""

    def close(self) -> None:
        """Closing the arm stops its cameras."""

    def poll(self) -> CameraFrame | None:
        if self.robot._proc is None:
            raise CameraError(f"simulated camera {self.name}: the arm is not connected")
        got = self.robot._frame(self.name, self._seq)
        if got is None:
            return None
        frame, self._seq = got
        return frame

    def read(self, timeout_s: float | None = None) -> CameraFrame | None:
        return self._poll_until(timeout_s, "the simulated arm's process")


def _publish_frame(v: dict[str, np.ndarray], lock: Any, images: dict[str, _SharedImages],
                   name: str, frame: CameraFrame) -> None:
    """In the child: one camera's frame into shared memory, as it comes due."""
    with lock:
        images[name].write(frame)
        v[f"{name}.host_time"][0] = frame.host_time
        v[f"{name}.timestamp_ms"][0] = frame.timestamp_ms
        v[f"{name}.frame_number"][0] = frame.frame_number
        v[f"{name}.seq"][0] += 1


def _child(cfg: SimRobotConfig, block: Any, lock: Any, control: Any,
           scene: TaskConfig | None = None, cameras: CameraConfig | None = None,
           camera_cfg: SimCameraConfig | None = None,
           images: dict[str, _SharedImages] | None = None) -> None:
    """The child process: a threaded SimRobot whose physics steps publish to shared memory
    (and, with cameras, a render thread whose frames do too)."""
    from robot_rl.hardware.sim_robot import SimRobot

    cams: SimArmCameras | None = None
    try:
        robot = SimRobot(cfg, scene=scene)
        m = robot.model
        names = () if cameras is None else tuple(cameras.names)
        layout = _Layout(robot.spec.num_joints, m.nq, m.nmocap, names)
        v = layout.views(block)
        seen = [0.0]
        interface = INTERFACES

        def after_step() -> None:  # on the physics thread, after every step
            robot.sensing = bool(v["sensing"][0])
            reading = robot.observe()  # latency applied
            true_q, ee_pos = robot.true_q(), robot.ee_pos()
            qpos, mocap = robot.data.qpos, robot.data.mocap_pos  # the physics thread's own
            with lock:
                v["scene_qpos"][:] = qpos
                v["mocap_pos"][:] = mocap.reshape(-1)
                if reading is not None and reading.stamp != v["stamp"][0]:
                    v["q"][:], v["qd"][:] = reading.q, reading.qd
                    if reading.effort is not None:
                        v["effort"][:] = reading.effort
                    v["stamp"][0] = reading.stamp
                    v["reading_seq"][0] += 1
                v["true_q"][:], v["ee_pos"][:] = true_q, ee_pos
                v["steps"][0], v["late_steps"][0] = robot.steps, robot.late_steps
                cmd = None
                if v["cmd_seq"][0] != seen[0]:
                    seen[0] = v["cmd_seq"][0]
                    g = float(v["cmd_gripper"][0])
                    cmd = JointCommand(interface[int(v["cmd_interface"][0])],
                                       v["cmd_values"].copy(), None if np.isnan(g) else g,
                                       hold=bool(v["cmd_hold"][0]))
            if cmd is not None:
                robot._write(cmd)  # limits were applied by the parent's send_action

        robot.on_step = after_step
        robot.connect()
        if cameras is not None:
            assert images is not None
            cams = SimArmCameras(robot, cameras, camera_cfg,
                                 on_frame=functools.partial(_publish_frame, v, lock, images))
            cams.connect()
    except Exception as e:  # noqa: BLE001 - reported to the parent, which raises it
        control.send(f"{type(e).__name__}: {e}")
        return
    control.send("ready")
    try:
        while True:
            what, arg = control.recv()
            if what == "stop":
                break
            reply = "ok"
            if what == "reset":
                try:
                    robot.reset(*arg)  # the next physics step publishes the reset state
                except Exception as e:  # noqa: BLE001 - the parent raises it
                    reply = f"{type(e).__name__}: {e}"
            control.send(reply)
    except (EOFError, KeyboardInterrupt):
        pass  # the parent went away
    finally:
        if cams is not None:
            cams.close()
        robot.close()
