"""A live view of a simulation being driven: MuJoCo's passive viewer, in a process of its own.

    view = EnvView(env, title="record push")             # one env of a BatchedEnv
    view.watch(realtime=True)                             # follow its step() and reset()
    ...
    view.close()

The loop never renders and never waits for the view. When the view is due (at most
``ViewConfig.fps`` times a second) the loop copies the newest state (qpos, mocap positions,
a goal point, a status line) into shared memory, a seqlock: the sequence number is odd while
it writes. The view process reads it at the same rate, runs the kinematics, draws the safety
shield's workspace box and the goal, and syncs MuJoCo's passive viewer, whose UI thread
renders. So rendering never holds the loop's GIL: on a desktop the GPU draws; under Xvfb
Mesa's software renderer takes CPU time from the machine (at a lower priority, on one
thread), not from the loop's thread. Goals
and targets that are scene mocap markers move with the mocap positions. Closing the window
ends the view (``running`` turns False); the loop goes on.

``EnvView`` follows one env of a ``BatchedEnv``; ``ArmView`` an arm known only by its joint
readings (the deploy runtime's), polled from a thread at the view's rate. The passive viewer
needs a display (``has_display``: a desktop, or ``xvfb-run``); without one the view process
streams the same scene to Rerun's web viewer instead (``sim.rerun_scene``).
"""

from __future__ import annotations

import ctypes
import dataclasses
import multiprocessing as mp
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import mujoco
import numpy as np

from robot_rl.errors import ConfigError
from robot_rl.sim.rerun_scene import GRPC_PORT, WEB_PORT, has_display, require_rerun

if TYPE_CHECKING:
    import torch

    from robot_rl.sim.env import BatchedEnv
    from robot_rl.sim.vec_env import StepResult

Vec3 = Sequence[float]
WORKSPACE_RGBA = (0.2, 0.6, 1.0, 0.08)
EDGE_RGBA = (0.2, 0.6, 1.0, 0.9)
GOAL_RGBA = (0.2, 0.9, 0.3, 0.6)
GOAL_RADIUS = 0.02
STATUS_BYTES = 256
NICE = 10
"""The view process's niceness above the loop's."""
START_TIMEOUT = 60.0
"""Seconds the view process may take to open its window."""


@dataclasses.dataclass(kw_only=True)
class ViewConfig:
    """How the live view follows the simulation."""

    fps: float = 30.0
    """States the view takes from the loop per second (at most)."""
    workspace: bool = True
    """Draw the safety shield's workspace box."""
    rerun: bool | None = None
    """Show the scene in Rerun instead of MuJoCo's viewer (default: only where there is no
    display); needs rerun-sdk (the ``view`` extra)."""
    rerun_out: str | None = None
    """With Rerun: save the scene as this .rrd file instead of serving the web viewer."""
    web_port: int = WEB_PORT
    """With Rerun: the port of its web viewer."""
    grpc_port: int = GRPC_PORT
    """With Rerun: the port the web viewer reads the scene from."""

    def validate(self) -> None:
        if not self.fps > 0:
            raise ConfigError(f"view fps must be > 0, got {self.fps}")


class _Shared:
    """The block the loop writes and the view process reads (see module docstring).

    values: qpos (nq) | mocap_pos (nmocap * 3) | goal (3) | goal set (1)."""

    def __init__(self, ctx: Any, nq: int, nmocap: int):
        self.nq, self.nmocap = nq, nmocap
        self.values = ctx.RawArray(ctypes.c_double, nq + 3 * nmocap + 4)
        self.status = ctx.RawArray(ctypes.c_char, STATUS_BYTES)
        self.seq = ctx.RawValue(ctypes.c_int64, 0)
        self.synced = ctx.RawValue(ctypes.c_int64, 0)
        self.state = ctx.RawValue(ctypes.c_int32, 0)
        """0 starting, 1 open, 2 window closed (or failed), 3 asked to stop."""

    def arrays(self) -> np.ndarray:
        return np.frombuffer(self.values, dtype=np.float64)

    def write(self, values: np.ndarray, status: bytes) -> None:
        self.seq.value += 1  # odd: being written
        self.arrays()[:] = values
        self.status.raw = status[:STATUS_BYTES].ljust(STATUS_BYTES, b"\0")
        self.seq.value += 1

    def read(self, last: int) -> tuple[int, np.ndarray, str] | None:
        """The newest state if its sequence number is not ``last`` (None: nothing new)."""
        for _ in range(100):
            s = self.seq.value
            if s == last:
                return None
            if s % 2:
                time.sleep(0.0005)
                continue
            values = self.arrays().copy()
            status = self.status.raw.rstrip(b"\0").decode(errors="replace")
            if self.seq.value == s:
                return s, values, status
        return None


class ViewProcess:
    """MuJoCo's passive viewer of ``model`` in a process of its own, fed by ``publish``."""

    def __init__(self, model: mujoco.MjModel, cfg: ViewConfig | None = None, *,
                 workspace: tuple[Vec3, Vec3] | None = None, title: str = ""):
        self.cfg = cfg = cfg or ViewConfig()
        cfg.validate()
        self.mode = "rerun" if (cfg.rerun if cfg.rerun is not None else not has_display()) \
            else "mujoco"
        if self.mode == "rerun":
            require_rerun()
        self.model = model
        ctx = mp.get_context("spawn")
        self.shared = _Shared(ctx, model.nq, model.nmocap)
        self._values = np.zeros(len(self.shared.values))
        self._values[:model.nq] = model.qpos0
        self._period = 1.0 / self.cfg.fps
        self._last_publish = -float("inf")
        self.published = 0
        """States handed over."""
        self.status = ""
        """A line shown under the title in the window's corner (sent with each state)."""
        box = None if workspace is None or not self.cfg.workspace else \
            tuple(tuple(float(x) for x in v) for v in workspace)
        self.process = ctx.Process(target=_serve if self.mode == "mujoco" else _serve_rerun,
                                   args=(model, self.cfg, box, title, self.shared),
                                   name="robot-rl-view", daemon=True)
        self.process.start()
        end = time.monotonic() + START_TIMEOUT
        while self.shared.state.value == 0 and self.process.is_alive():
            if time.monotonic() > end:
                self.process.kill()
                raise ConfigError(f"the view's window did not open in {START_TIMEOUT:g} s")
            time.sleep(0.02)
        if self.shared.state.value != 1:
            self.process.join(timeout=5)
            if self.mode == "rerun":
                raise ConfigError(f"the Rerun view did not start (exit status "
                                  f"{self.process.exitcode}); are ports {cfg.web_port} and "
                                  f"{cfg.grpc_port} free?")
            shown = os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
            raise ConfigError(f"the view could not open its window on {shown} (exit "
                              f"status {self.process.exitcode}); is the display reachable?")
        if self.mode == "rerun":
            where = f"saved to {cfg.rerun_out}" if cfg.rerun_out else (
                f"Rerun's web viewer at http://localhost:{cfg.web_port} (over SSH: ssh -L "
                f"{cfg.web_port}:localhost:{cfg.web_port} -L {cfg.grpc_port}:localhost:"
                f"{cfg.grpc_port} HOST)")
            print(f"live view: no display, the scene in Rerun: {where}", file=sys.stderr,
                  flush=True)

    @property
    def running(self) -> bool:
        """False once the window is closed (or ``close`` was called)."""
        return self.shared.state.value == 1

    @property
    def synced(self) -> int:
        """States the viewer has been synced with."""
        return int(self.shared.synced.value)

    def due(self, now: float | None = None) -> bool:
        """Whether the view wants a new state (its period has passed since the last)."""
        t = time.monotonic() if now is None else now
        return self.running and t - self._last_publish >= self._period

    def publish(self, qpos: np.ndarray | None = None, mocap_pos: np.ndarray | None = None,
                goal: np.ndarray | None = None) -> None:
        """Hand over the newest state (copied): ``qpos`` (nq,), ``mocap_pos`` (nmocap, 3),
        ``goal`` (3,) drawn as a sphere; what is not given keeps its last value."""
        nq, nm = self.model.nq, self.model.nmocap
        v = self._values
        if qpos is not None:
            v[:nq] = qpos
        if mocap_pos is not None and nm:
            v[nq:nq + 3 * nm] = np.asarray(mocap_pos, dtype=np.float64).ravel()
        if goal is not None:
            v[-4:-1], v[-1] = goal, 1.0
        self.shared.write(v, self.status.encode())
        self._last_publish = time.monotonic()
        self.published += 1

    def close(self) -> None:
        """Close the window and end the view process."""
        if self.shared.state.value == 1:
            self.shared.state.value = 3
        self.process.join(timeout=15)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(timeout=5)


def _frames(shared: _Shared, model: mujoco.MjModel, data: mujoco.MjData, fps: float,
            running: Callable[[], bool]) -> Iterator[tuple[np.ndarray | None, str]]:
    """Each new state the loop hands over, put into ``data`` with its kinematics run: yields
    its goal (or None) and status line, ``fps`` times a second at most, while ``running()``.
    Counts each frame drawn in ``shared.synced``."""
    nq, nm = model.nq, model.nmocap
    last, period = 0, 1.0 / fps
    while running():
        time.sleep(period)
        got = shared.read(last)
        if got is None:
            continue
        last, v, status = got
        data.qpos[:] = v[:nq]
        if nm:
            data.mocap_pos[:] = v[nq:nq + 3 * nm].reshape(nm, 3)
        mujoco.mj_kinematics(model, data)
        yield (v[-4:-1] if v[-1] else None), status
        shared.synced.value += 1


def _serve(model: mujoco.MjModel, cfg: ViewConfig, workspace: tuple[Vec3, Vec3] | None,
           title: str, shared: _Shared) -> None:
    """The view process: the passive viewer, synced with the shared state at ``cfg.fps``.
    It runs at a lower priority, and Mesa's software renderer (no GPU) on one thread, so
    that rendering yields the CPU to the loop and the arm."""
    os.nice(NICE)
    os.environ.setdefault("LP_NUM_THREADS", "1")
    import mujoco.viewer

    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    try:
        handle = mujoco.viewer.launch_passive(model, data, show_left_ui=False,
                                              show_right_ui=False)
    except Exception:
        shared.state.value = 2
        raise
    shared.state.value = 1
    try:
        for goal, status in _frames(shared, model, data, cfg.fps,
                                    lambda: shared.state.value == 1 and handle.is_running()):
            with handle.lock():
                _draw(handle.user_scn, workspace, goal)
            if title or status:
                handle.set_texts((None, None, title, status))
            handle.sync()
    finally:
        if shared.state.value == 1:
            shared.state.value = 2  # the person closed the window
        handle.close()
        # the viewer's UI thread tears its window down on its own: the process must not
        # exit (GLFW's atexit) before it has
        for t in threading.enumerate():
            if t is not threading.current_thread() and not t.daemon:
                t.join(timeout=10)
        time.sleep(0.2)


def _serve_rerun(model: mujoco.MjModel, cfg: ViewConfig,
                 workspace: tuple[Vec3, Vec3] | None, title: str, shared: _Shared) -> None:
    """The view process without a display: the scene in Rerun (``sim.rerun_scene``), served
    to its web viewer (or saved to ``cfg.rerun_out``), synced at ``cfg.fps``."""
    os.nice(NICE)
    import rerun as rr

    from robot_rl.sim.rerun_scene import RerunScene, serve_web

    try:
        rec = rr.RecordingStream(f"robot-rl view {title}".strip())
        if cfg.rerun_out:
            rec.save(cfg.rerun_out)
        else:
            serve_web(rec, cfg.web_port, cfg.grpc_port)
        data = mujoco.MjData(model)
        mujoco.mj_forward(model, data)
        scene = RerunScene(rec, model)
        scene.decorations(workspace)
    except Exception:
        shared.state.value = 2
        raise
    shared.state.value = 1
    t0 = time.monotonic()
    try:
        for goal, status in _frames(shared, model, data, cfg.fps,
                                    lambda: shared.state.value == 1):
            scene.update(data, time.monotonic() - t0, goal)
            if status:
                rec.log("status", rr.TextLog(status))
    finally:
        rec.flush()
        rec.disconnect()
        if shared.state.value == 1:
            shared.state.value = 2


def _draw(scn: mujoco.MjvScene, workspace: tuple[Vec3, Vec3] | None,
          goal: np.ndarray | None) -> None:
    """The goal sphere and the workspace box (translucent, with its edges) as user geoms."""
    scn.ngeom = 0
    if goal is not None:
        _add_geom(scn, mujoco.mjtGeom.mjGEOM_SPHERE, np.full(3, GOAL_RADIUS), goal, GOAL_RGBA)
    if workspace is None:
        return
    lo, hi = (np.asarray(v, dtype=np.float64) for v in workspace)
    _add_geom(scn, mujoco.mjtGeom.mjGEOM_BOX, (hi - lo) / 2, (lo + hi) / 2, WORKSPACE_RGBA)
    corners = np.array([[(lo, hi)[i & 1][0], (lo, hi)[(i >> 1) & 1][1],
                         (lo, hi)[(i >> 2) & 1][2]] for i in range(8)])
    for a in range(8):
        for bit in (1, 2, 4):
            if a & bit or scn.ngeom >= scn.maxgeom:
                continue
            g = scn.geoms[scn.ngeom]
            mujoco.mjv_initGeom(g, mujoco.mjtGeom.mjGEOM_LINE, np.zeros(3), np.zeros(3),
                                np.eye(3).ravel(), np.array(EDGE_RGBA, np.float32))
            mujoco.mjv_connector(g, mujoco.mjtGeom.mjGEOM_LINE, 2.0, corners[a],
                                 corners[a | bit])
            scn.ngeom += 1


def _add_geom(scn: mujoco.MjvScene, kind: int, size: np.ndarray, pos: np.ndarray,
              rgba: Sequence[float]) -> None:
    if scn.ngeom >= scn.maxgeom:
        return
    mujoco.mjv_initGeom(scn.geoms[scn.ngeom], kind, np.asarray(size, np.float64),
                        np.asarray(pos, np.float64), np.eye(3).ravel(),
                        np.array(rgba, np.float32))
    scn.ngeom += 1


class EnvView:
    """The view of one env of a ``BatchedEnv``, with its task's workspace box. ``update()``
    hands the env's state over when the view is due; ``watch()`` makes every ``step`` and
    ``reset`` of that env instance do so (and, with ``realtime``, keeps its steps to the
    control rate), so loops that take any env (evaluation, wrappers that step an inner env
    several times per action) need no change."""

    def __init__(self, env: BatchedEnv, cfg: ViewConfig | None = None, index: int = 0,
                 title: str = ""):
        if not hasattr(env, "backend") or not hasattr(env, "model"):
            raise ConfigError(f"the live view follows a batched simulation env, not a "
                              f"{type(env).__name__}")
        if not 0 <= index < env.num_envs:
            raise ConfigError(f"view env {index} of {env.num_envs}")
        self.env, self.index = env, index
        s = env.cfg.safety
        self.view = ViewProcess(env.model, cfg, workspace=(s.workspace_lo, s.workspace_hi),
                                title=title)
        self._next = 0.0

    def update(self, force: bool = False) -> None:
        """Hand the env's state over if the view is due (``force``: whenever it runs)."""
        if self.view.due() or (force and self.view.running):
            b = self.env.backend
            self.view.publish(b.qpos[self.index].detach().cpu().numpy(),
                              b.mocap_pos[self.index].detach().cpu().numpy())

    def watch(self, realtime: bool = False) -> None:
        """Follow every ``step`` and ``reset`` of the env (this instance only)."""
        env, period = self.env, self.env.control_dt
        step, reset = env.step, env.reset

        def watched_step(action: torch.Tensor, hold: torch.Tensor | None = None
                         ) -> StepResult:
            out = step(action, hold)
            self.update()
            if realtime:
                self._next = max(self._next + period, time.monotonic() - period)
                delay = self._next - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            return out

        def watched_reset(seed: int | None = None) -> torch.Tensor:
            out = reset(seed)
            self.update(force=True)
            return out

        env.step = watched_step  # type: ignore[method-assign]
        env.reset = watched_reset  # type: ignore[method-assign]

    def close(self) -> None:
        self.view.close()


class ArmView:
    """The view of an arm known only by its joint readings (the deploy runtime's arm: the
    simulated one in its own process, or a real one). ``reading()`` returns the newest joint
    positions (n,) or None, ``goal()`` the goal point or None; a thread polls both at the
    view's rate, so the control loop does nothing."""

    def __init__(self, model: mujoco.MjModel, joint_names: Sequence[str],
                 reading: Callable[[], np.ndarray | None],
                 goal: Callable[[], np.ndarray | None] | None = None, *,
                 cfg: ViewConfig | None = None, workspace: tuple[Vec3, Vec3] | None = None,
                 title: str = ""):
        self.view = ViewProcess(model, cfg, workspace=workspace, title=title)
        self._adr = np.array([model.joint(j).qposadr[0] for j in joint_names])
        self._qpos = model.qpos0.copy()
        self._reading, self._goal = reading, goal
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="arm-view", daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._stop.wait(1.0 / self.view.cfg.fps) and self.view.running:
            q = self._reading()
            if q is None:
                continue
            self._qpos[self._adr] = q
            self.view.publish(self._qpos, goal=None if self._goal is None else self._goal())

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)
        self.view.close()
