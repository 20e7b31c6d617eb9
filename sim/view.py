"""A live view of a simulation being driven: MuJoCo's passive viewer, from its own thread.

    view = LiveView(env.model, workspace=(lo, hi), title="record push")
    while ...:
        env.step(action)
        if view.due():                                   # at most ViewConfig.fps times a second
            view.publish(qpos[0], mocap_pos[0])          # copies two small arrays
    view.close()

The control loop only hands over the newest state (a copy, under a lock, when the view wants
a frame); the view's thread puts it into its own ``MjData``, runs the kinematics, draws the
shield's workspace box and syncs the viewer at ``ViewConfig.fps``. The loop never waits for
rendering, and the viewer's own UI thread (started by ``mujoco.viewer.launch_passive``)
renders at the display's rate. Goals and targets are the scene's mocap markers, so they move
with ``mocap_pos``. Closing the window ends the view; the loop goes on.

The passive viewer needs a display (``DISPLAY``, e.g. a desktop or Xvfb). ``has_display``
tells; the callers fall back to Rerun's web viewer without one.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import mujoco
import numpy as np

from robot_rl.errors import ConfigError

if TYPE_CHECKING:
    from robot_rl.sim.env import BatchedEnv

Vec3 = Sequence[float]
WORKSPACE_RGBA = (0.2, 0.6, 1.0, 0.08)
EDGE_RGBA = (0.2, 0.6, 1.0, 0.9)
GOAL_RGBA = (0.2, 0.9, 0.3, 0.6)
GOAL_RADIUS = 0.02
Snapshot = tuple[np.ndarray, "np.ndarray | None"]
"""qpos (nq,) and mocap_pos (nmocap, 3) or None."""


@dataclasses.dataclass(kw_only=True)
class ViewConfig:
    """How the live view follows the simulation."""

    fps: float = 30.0
    """Frames the view takes from the loop per second (at most)."""
    workspace: bool = True
    """Draw the safety shield's workspace box."""

    def validate(self) -> None:
        if not self.fps > 0:
            raise ConfigError(f"view fps must be > 0, got {self.fps}")


def has_display() -> bool:
    """Whether a window can open (X11 or Wayland)."""
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


class LiveView:
    """MuJoCo's passive viewer following published states (module docstring)."""

    def __init__(self, model: mujoco.MjModel, cfg: ViewConfig | None = None, *,
                 workspace: tuple[Vec3, Vec3] | None = None, title: str = "",
                 poll: Callable[[], Snapshot | None] | None = None,
                 goal: Callable[[], np.ndarray | None] | None = None):
        """``poll``: called by the view's thread each frame for the newest state, instead
        of the loop publishing it (a state the loop keeps anyway, such as the deploy
        runtime's last reading); ``goal``: a point drawn as a sphere (when not None)."""
        import mujoco.viewer

        self.cfg = cfg or ViewConfig()
        self.cfg.validate()
        if not has_display():
            raise ConfigError("the live view needs a display (DISPLAY is not set): run on a "
                              "desktop, under xvfb-run, or use the Rerun web viewer")
        self.model = model
        self.data = mujoco.MjData(model)
        self.workspace = workspace if self.cfg.workspace else None
        self.title = title
        self.status = ""
        """A line shown under the title in the window's corner (the loop may set it)."""
        self._lock = threading.Lock()
        self._slot: Snapshot | None = None
        self._poll, self._goal = poll, goal
        self._period = 1.0 / self.cfg.fps
        self._last_publish = -float("inf")
        self.published = 0
        """States handed over by the loop."""
        self.synced = 0
        """States the viewer was synced with."""
        self._stop = threading.Event()
        mujoco.mj_forward(model, self.data)
        before = set(threading.enumerate())
        self.handle = mujoco.viewer.launch_passive(model, self.data, show_left_ui=False,
                                                   show_right_ui=False)
        # the viewer's UI thread: close() waits for it to tear its window down (exiting
        # the process while it does crashes in GLFW)
        self._ui = [t for t in threading.enumerate() if t not in before]
        self._thread = threading.Thread(target=self._run, name="live-view", daemon=True)
        self._thread.start()

    @property
    def running(self) -> bool:
        """False once the window is closed (or ``close`` was called)."""
        return not self._stop.is_set() and self.handle.is_running()

    def due(self, now: float | None = None) -> bool:
        """Whether the view wants a new state (its frame period has passed)."""
        t = time.monotonic() if now is None else now
        return self.running and t - self._last_publish >= self._period

    def publish(self, qpos: np.ndarray, mocap_pos: np.ndarray | None = None) -> None:
        """Hand over the newest state: ``qpos`` (nq,), ``mocap_pos`` (nmocap, 3) (copied)."""
        snapshot = (np.array(qpos, dtype=np.float64),
                    None if mocap_pos is None else np.array(mocap_pos, dtype=np.float64))
        with self._lock:
            self._slot = snapshot
        self._last_publish = time.monotonic()
        self.published += 1

    def _run(self) -> None:
        while not self._stop.wait(self._period):
            if not self.handle.is_running():
                return
            if self._poll is not None:
                slot = self._poll()
            else:
                with self._lock:
                    slot, self._slot = self._slot, None
            if slot is None:
                continue
            qpos, mocap = slot
            self.data.qpos[:] = qpos
            if mocap is not None and self.model.nmocap:
                self.data.mocap_pos[:] = mocap
            mujoco.mj_kinematics(self.model, self.data)
            with self.handle.lock():
                self._draw(self.handle.user_scn)
            if self.title or self.status:
                self.handle.set_texts((None, None, self.title, self.status))
            self.handle.sync()
            self.synced += 1

    def _draw(self, scn: mujoco.MjvScene) -> None:
        scn.ngeom = 0
        goal = None if self._goal is None else self._goal()
        if goal is not None:
            _add_geom(scn, mujoco.mjtGeom.mjGEOM_SPHERE, np.full(3, GOAL_RADIUS),
                      np.asarray(goal, dtype=np.float64), GOAL_RGBA)
        if self.workspace is None:
            return
        lo, hi = (np.asarray(v, dtype=np.float64) for v in self.workspace)
        centre, half = (lo + hi) / 2, (hi - lo) / 2
        _add_geom(scn, mujoco.mjtGeom.mjGEOM_BOX, half, centre, WORKSPACE_RGBA)
        corners = np.array([[lo[0] if i & 1 == 0 else hi[0], lo[1] if i & 2 == 0 else hi[1],
                             lo[2] if i & 4 == 0 else hi[2]] for i in range(8)])
        for a in range(8):
            for bit in (1, 2, 4):
                b = a | bit
                if b != a and scn.ngeom < scn.maxgeom:
                    g = scn.geoms[scn.ngeom]
                    mujoco.mjv_initGeom(g, mujoco.mjtGeom.mjGEOM_LINE, np.zeros(3), np.zeros(3),
                                        np.eye(3).ravel(), np.array(EDGE_RGBA, np.float32))
                    mujoco.mjv_connector(g, mujoco.mjtGeom.mjGEOM_LINE, 2.0, corners[a],
                                         corners[b])
                    scn.ngeom += 1

    def close(self) -> None:
        """Stop following and close the window."""
        self._stop.set()
        self._thread.join(timeout=2.0)
        self.handle.close()
        for t in self._ui:
            t.join(timeout=10.0)


def _add_geom(scn: mujoco.MjvScene, kind: int, size: np.ndarray, pos: np.ndarray,
              rgba: Sequence[float]) -> None:
    if scn.ngeom >= scn.maxgeom:
        return
    mujoco.mjv_initGeom(scn.geoms[scn.ngeom], kind, size, pos, np.eye(3).ravel(),
                        np.array(rgba, np.float32))
    scn.ngeom += 1


class EnvView:
    """A ``LiveView`` of one env of a ``BatchedEnv``, with the shield's workspace box of its
    task. ``update()`` hands the env's state over when the view is due; ``watch(env)``
    makes every ``step`` and ``reset`` of that env instance do so (and, with ``realtime``,
    keeps its steps to the control rate), so loops that take any env (evaluation, wrappers
    that step an inner env several times) need no change."""

    def __init__(self, env: BatchedEnv, cfg: ViewConfig | None = None, index: int = 0,
                 title: str = ""):
        if not 0 <= index < env.num_envs:
            raise ConfigError(f"view env {index} of {env.num_envs}")
        self.env, self.index = env, index
        s = env.cfg.safety
        self.view = LiveView(env.model, cfg, workspace=(s.workspace_lo, s.workspace_hi),
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

        def watched_step(*args: object, **kwargs: object) -> object:
            out = step(*args, **kwargs)
            self.update()
            if realtime:
                self._next = max(self._next + period, time.monotonic() - period)
                delay = self._next - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            return out

        def watched_reset(*args: object, **kwargs: object) -> object:
            out = reset(*args, **kwargs)
            self.update(force=True)
            return out

        env.step = watched_step  # type: ignore[method-assign]
        env.reset = watched_reset  # type: ignore[method-assign]

    def close(self) -> None:
        self.view.close()


class ArmView:
    """A ``LiveView`` of an arm known only by its joint readings (the deploy runtime's arm,
    simulated in its own process, or a real one): ``model`` is the arm's, ``reading()``
    returns the newest joint positions (n,) or None, ``goal()`` the goal point or None.
    The view's thread polls both; the loop does nothing."""

    def __init__(self, model: mujoco.MjModel, joint_names: Sequence[str],
                 reading: Callable[[], np.ndarray | None],
                 goal: Callable[[], np.ndarray | None] | None = None, *,
                 cfg: ViewConfig | None = None, workspace: tuple[Vec3, Vec3] | None = None,
                 title: str = ""):
        adr = np.array([model.joint(j).qposadr[0] for j in joint_names])
        qpos0 = model.qpos0.copy()

        def poll() -> Snapshot | None:
            q = reading()
            if q is None:
                return None
            qpos = qpos0.copy()
            qpos[adr] = q
            return qpos, None

        self.view = LiveView(model, cfg, workspace=workspace, title=title, poll=poll,
                             goal=goal)

    def close(self) -> None:
        self.view.close()
