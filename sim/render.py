"""Offscreen rendering of chosen envs (and ``VideoWriter``, from ``robot_rl.video``).

    with EnvRenderer(env, env_ids=[0, 1]) as r, VideoWriter("out.mp4", fps=50) as v:
        v.write(r.render())          # (H, W * len(env_ids), 3) uint8, envs side by side

Rendering needs an OpenGL backend, chosen by MUJOCO_GL when a renderer is created (the
order of imports does not matter): ``egl`` (headless; ``import robot_rl`` sets it when unset
and there is no display; needs Debian's ``libegl1`` and ``libgl1-mesa-dri``), ``osmesa``, or
``glfw`` (a display).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from types import TracebackType

import mujoco
import numpy as np

from robot_rl.errors import ConfigError, RenderError
from robot_rl.video import VideoWriter

__all__ = ["EnvRenderer", "OffscreenGL", "VideoWriter"]

GL_HELP = ("offscreen rendering needs an OpenGL backend: on a headless Linux machine install "
           "EGL (apt-get install libegl1 libgl1-mesa-dri) and set MUJOCO_GL=egl before "
           "Python imports mujoco")


class EnvRenderer:
    """Renders the current state of some envs of a BatchedEnv from one of the scene cameras."""

    def __init__(self, env: object, env_ids: Sequence[int] = (0,), camera: str = "corner",
                 width: int = 640, height: int = 480):
        from robot_rl.sim.env import BatchedEnv

        assert isinstance(env, BatchedEnv)
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
        self._gl = OffscreenGL(model, width, height, camera)

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
    """An offscreen OpenGL context and MuJoCo scene rendering one fixed camera."""

    def __init__(self, model: mujoco.MjModel, width: int, height: int, camera: str):
        vis = model.vis.global_
        if width > vis.offwidth or height > vis.offheight:
            raise ConfigError(f"{width}x{height} exceeds the model's offscreen buffer "
                              f"{vis.offwidth}x{vis.offheight} (<visual><global offwidth/"
                              f"offheight>)")
        self.model = model
        self._rect = mujoco.MjrRect(0, 0, width, height)
        self._ctx = None
        try:
            self._ctx = _gl_context_class()(width, height)
            self._ctx.make_current()
            self._mjr = mujoco.MjrContext(model, mujoco.mjtFontScale.mjFONTSCALE_150.value)
        except Exception as e:  # GL failures surface as many exception types
            backend = os.environ.get("MUJOCO_GL", "") or "<unset: glfw, needs a display>"
            self.close()
            raise RenderError(f"{GL_HELP} (MUJOCO_GL={backend}: {type(e).__name__}: "
                              f"{str(e).strip()[:200]})") from None
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN.value, self._mjr)
        self._scene = mujoco.MjvScene(model, maxgeom=10_000)
        self._option = mujoco.MjvOption()
        self._camera = mujoco.MjvCamera()
        self._camera.type = mujoco.mjtCamera.mjCAMERA_FIXED
        self._camera.fixedcamid = model.camera(camera).id
        self._pixels = np.empty((height, width, 3), dtype=np.uint8)

    def render(self, data: mujoco.MjData) -> np.ndarray:
        """(H, W, 3) uint8 image of ``data`` (kinematics and cameras already computed)."""
        assert self._ctx is not None
        self._ctx.make_current()
        mujoco.mjv_updateScene(self.model, data, self._option, None, self._camera,
                               mujoco.mjtCatBit.mjCAT_ALL.value, self._scene)
        mujoco.mjr_render(self._rect, self._scene, self._mjr)
        mujoco.mjr_readPixels(self._pixels, None, self._rect, self._mjr)
        return np.flipud(self._pixels).copy()

    def close(self) -> None:
        if self._ctx is not None:
            if hasattr(self, "_mjr"):
                self._ctx.make_current()
                self._mjr.free()
                del self._mjr
            self._ctx.free()
            self._ctx = None
