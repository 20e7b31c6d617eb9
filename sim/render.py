"""Offscreen rendering of chosen envs (and ``VideoWriter``, from ``robot_rl.video``).

    with EnvRenderer(env, env_ids=[0, 1]) as r, VideoWriter("out.mp4", fps=50) as v:
        v.write(r.render())          # (H, W * len(env_ids), 3) uint8, envs side by side

Two render modes. ``video`` is MuJoCo's default look, for people: a shadow map, 4x MSAA,
reflections, the skybox, finely tessellated round geoms. ``policy`` is for images a policy
learns from and acts on, where the default costs ~8x the frame rate for detail a 96x96
image cannot hold: no shadows, reflections or skybox, no multisampling, coarser
tessellation (``POLICY_QUALITY``); and no goal markers (``MARKER_GROUP``), which a real
camera does not see. Datasets record their cameras in policy mode, so a
policy trained on them sees what it will see when acting.

Rendering needs an OpenGL backend, chosen by MUJOCO_GL when a renderer is created (the
order of imports does not matter): ``egl`` (headless; ``import robot_rl`` sets it when unset
and there is no display; needs Debian's ``libegl1`` and ``libgl1-mesa-dri``), ``osmesa``, or
``glfw`` (a display).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING

import mujoco
import numpy as np

from robot_rl.errors import ConfigError, RenderError
from robot_rl.sim.configs import RenderMode
from robot_rl.video import VideoWriter

if TYPE_CHECKING:
    from robot_rl.sim.scene_env import SceneEnv

__all__ = ["EnvRenderer", "OffscreenGL", "RenderMode", "VideoWriter", "render_model"]

POLICY_QUALITY = {"shadowsize": 0, "offsamples": 0, "numslices": 12, "numstacks": 8}
"""``model.vis.quality`` in policy mode (MuJoCo's defaults: 4096 or the model's shadow map,
4x MSAA, 28 slices and 16 stacks per round geom)."""
POLICY_OFF = (mujoco.mjtRndFlag.mjRND_SHADOW, mujoco.mjtRndFlag.mjRND_REFLECTION,
              mujoco.mjtRndFlag.mjRND_SKYBOX)
"""Scene render flags off in policy mode."""
MARKER_GROUP = 2
"""Geom group of visual-only markers (goals, targets: ``Scene.add_marker``): drawn in videos,
hidden from policy cameras, as a real camera sees no goal marker on the table."""


def render_model(model: mujoco.MjModel, mode: RenderMode) -> mujoco.MjModel:
    """A copy of ``model`` for a renderer of ``mode`` to draw with, with ``POLICY_QUALITY``
    in policy mode: the settings apply when a GL context is made, and visual randomization
    changes colours and fields of view, while the env's own model keeps its values."""
    if mode not in ("video", "policy"):
        raise ConfigError(f"render mode must be 'video' or 'policy', got {mode!r}")
    out = copy.deepcopy(model)
    if mode == "policy":
        for key, value in POLICY_QUALITY.items():
            setattr(out.vis.quality, key, value)
    return out

GL_HELP = ("offscreen rendering needs an OpenGL backend: on a headless Linux machine install "
           "EGL (apt-get install libegl1 libgl1-mesa-dri) and set MUJOCO_GL=egl before "
           "Python imports mujoco")


class EnvRenderer:
    """Renders the current state of some envs of a BatchedEnv from one of the scene cameras."""

    def __init__(self, env: SceneEnv, env_ids: Sequence[int] = (0,), camera: str = "corner",
                 width: int = 640, height: int = 480, mode: RenderMode = "video"):
        self.env = env
        self.env_ids = list(env_ids)
        bad = [i for i in self.env_ids if not 0 <= i < env.num_envs]
        if bad or not self.env_ids:
            raise ConfigError(f"env ids to render must be in [0, {env.num_envs}), got {bad}")
        model = env.model
        if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, camera) < 0:
            names = [model.camera(i).name for i in range(model.ncam)]
            raise ConfigError(f"unknown camera {camera!r}; cameras of this scene: "
                              f"{', '.join(names) or 'none (use free)'}")
        self._data = mujoco.MjData(model)
        self._gl = OffscreenGL(model, width, height, camera, mode)

    def render(self) -> np.ndarray:
        """(H, W * k, 3) uint8 frame of the k chosen envs side by side."""
        frames = []
        for i in self.env_ids:
            self.env.backend.write_data(i, self._data)
            mujoco.mj_kinematics(self.env.model, self._data)
            mujoco.mj_camlight(self.env.model, self._data)
            frames.append(self._gl.render(self._data))
        return np.concatenate(frames, axis=1)

    def close(self) -> None:
        self._gl.close()

    def __enter__(self) -> EnvRenderer:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def _gl_context_class() -> type:
    """MuJoCo's GL context class for the MUJOCO_GL in effect now."""
    backend = os.environ.get("MUJOCO_GL", "").lower()
    if backend == "egl":
        from mujoco.egl import GLContext
    elif backend == "osmesa":
        from mujoco.osmesa import GLContext
    else:
        from mujoco.glfw import GLContext
    return GLContext


class OffscreenGL:
    """An offscreen OpenGL context and MuJoCo scene rendering fixed cameras (``camera`` by
    default, any other by id) in a render mode."""

    def __init__(self, model: mujoco.MjModel, width: int, height: int, camera: str,
                 mode: RenderMode = "video"):
        vis = model.vis.global_
        if width > vis.offwidth or height > vis.offheight:
            raise ConfigError(f"{width}x{height} exceeds the model's offscreen buffer "
                              f"{vis.offwidth}x{vis.offheight} (<visual><global offwidth/"
                              f"offheight>)")
        self.model = model
        self._draw = render_model(model, mode)
        self._rect = mujoco.MjrRect(0, 0, width, height)
        self._ctx = None
        try:
            self._ctx = _gl_context_class()(width, height)
            self._ctx.make_current()
            self._mjr = mujoco.MjrContext(self._draw,
                                          mujoco.mjtFontScale.mjFONTSCALE_150.value)
        except Exception as e:  # GL failures surface as many exception types
            backend = os.environ.get("MUJOCO_GL", "") or "<unset: glfw, needs a display>"
            self.close()
            raise RenderError(f"{GL_HELP} (MUJOCO_GL={backend}: {type(e).__name__}: "
                              f"{str(e).strip()[:200]})") from None
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN.value, self._mjr)
        self._scene = mujoco.MjvScene(self._draw, maxgeom=10_000)
        self._option = mujoco.MjvOption()
        if mode == "policy":
            for flag in POLICY_OFF:
                self._scene.flags[flag] = 0
            self._option.geomgroup[MARKER_GROUP] = 0
        self._camera = mujoco.MjvCamera()
        self._camera.type = mujoco.mjtCamera.mjCAMERA_FIXED
        self._camera.fixedcamid = model.camera(camera).id
        self._pixels = np.empty((height, width, 3), dtype=np.uint8)
        self._depth = np.empty((height, width), dtype=np.float32)
        extent = model.stat.extent
        self._near, self._far = model.vis.map.znear * extent, model.vis.map.zfar * extent
        self.before_draw: Callable[[mujoco.MjModel, mujoco.MjData], None] | None = None
        """Called with the model drawn with and the data before each draw (visual
        randomization)."""

    def render(self, data: mujoco.MjData, camera_id: int | None = None) -> np.ndarray:
        """(H, W, 3) uint8 image of ``data`` (kinematics and cameras already computed) from
        camera ``camera_id`` (default: the one named when made)."""
        self._draw_scene(data, camera_id)
        mujoco.mjr_readPixels(self._pixels, None, self._rect, self._mjr)
        return np.flipud(self._pixels).copy()

    def render_rgbd(self, data: mujoco.MjData, camera_id: int | None = None
                    ) -> tuple[np.ndarray, np.ndarray]:
        """(H, W, 3) uint8 image and (H, W) float32 depth [m]: each pixel's distance along
        the camera's axis (as a depth camera reports it; 0 where no surface is in range, as
        a depth camera reports a pixel without a return), from one render."""
        self._draw_scene(data, camera_id)
        mujoco.mjr_readPixels(self._pixels, self._depth, self._rect, self._mjr)
        # OpenGL's depth buffer in [0, 1] to metres (MuJoCo's projection: znear, zfar)
        z = self._near / (1.0 - self._depth * (1.0 - self._near / self._far))
        z[self._depth >= 1.0] = 0.0  # the far plane: nothing there
        return np.flipud(self._pixels).copy(), np.flipud(z).astype(np.float32)

    def _draw_scene(self, data: mujoco.MjData, camera_id: int | None) -> None:
        assert self._ctx is not None
        self._ctx.make_current()
        if self.before_draw is not None:
            self.before_draw(self._draw, data)
        if camera_id is not None:
            self._camera.fixedcamid = camera_id
        mujoco.mjv_updateScene(self._draw, data, self._option, None, self._camera,
                               mujoco.mjtCatBit.mjCAT_ALL.value, self._scene)
        mujoco.mjr_render(self._rect, self._scene, self._mjr)

    def close(self) -> None:
        if self._ctx is not None:
            if hasattr(self, "_mjr"):
                self._ctx.make_current()
                self._mjr.free()
                del self._mjr
            self._ctx.free()
            self._ctx = None
