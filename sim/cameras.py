"""Camera images of every env at once, for policies: RGB and depth as batched tensors.

    cams = SimCameras(env, CameraConfig(names=("front",), height=96, width=96, depth=True))
    frames = cams.render()                  # after env.step / env.reset
    frames["front"].rgb                     # (E, 3, H, W) uint8, on the env's device
    frames["front"].depth                   # (E, 1, H, W) float32 [m] along the camera axis
    cams.images()                           # {"front.rgb": ..., "front.depth": ...}

Two renderers behind one interface, chosen by the env's backend:

- **cpu**: MuJoCo's OpenGL renderer (EGL offscreen), one context drawing every env's
  cameras in turn, in the policy render mode (``sim.render``: no shadows, reflections,
  skybox or multisampling), ~10x the default mode's frame rate.
- **warp**: MuJoCo Warp's batch ray tracer (``create_render_context`` / ``render`` /
  ``get_rgb`` / ``get_depth``), every world in one launch, no OpenGL; runs on the GPU, and on
  Warp's CPU device (how the tests exercise it). Its images match the OpenGL policy mode's
  (same camera conventions; shading differs slightly).

Depth is each pixel's distance along the camera's optical axis, as a depth camera (a
RealSense) reports it, in metres.
"""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Any, NamedTuple

import mujoco
import numpy as np
import torch

from robot_rl.errors import ConfigError
from robot_rl.sim.configs import CameraConfig
from robot_rl.sim.render import OffscreenGL
from robot_rl.sim.visual_dr import VisualRandomizer

if TYPE_CHECKING:
    from robot_rl.sim.scene_env import SceneEnv


class CameraFrames(NamedTuple):
    rgb: torch.Tensor
    """(E, 3, H, W) uint8."""
    depth: torch.Tensor | None
    """(E, 1, H, W) float32 [m]; None unless the config asks for depth."""


class SimCameras:
    """Renders ``cfg.names`` for every env of a BatchedEnv (see module docstring)."""

    def __init__(self, env: SceneEnv, cfg: CameraConfig, seed: int = 0):
        """``seed``: of the visual randomization's draws."""
        cfg.validate()
        model = env.model
        cfg.check_scene(model)
        self.env, self.cfg = env, cfg
        self._ids = [model.camera(c).id for c in cfg.names]
        self.visual = VisualRandomizer(cfg.visual, model, self._ids, env.num_envs, seed)
        warp = hasattr(env.backend, "render_context")
        if warp and cfg.visual.scene:
            raise ConfigError("camera pose, field of view, light and colour randomization "
                              "are drawn by the OpenGL renderer (cpu backend); with "
                              "MuJoCo Warp's renderer only pixel and depth noise and frame "
                              "timing apply")
        self._renderer: _GLRenderer | _WarpRenderer = (
            _WarpRenderer(env, cfg) if warp else _GLRenderer(env, cfg, self._ids, self.visual))

    @property
    def kind(self) -> str:
        """Which renderer draws: ``opengl`` or ``warp``."""
        return self._renderer.kind

    def render(self, env_ids: torch.Tensor | None = None) -> dict[str, CameraFrames]:
        """Every camera of the envs ``env_ids`` (default all) at their current state, with
        the visual randomization applied."""
        frames = self._renderer.render(env_ids)
        return {k: CameraFrames(*self.visual.apply_images(f.rgb, f.depth))
                for k, f in frames.items()}

    def images(self, env_ids: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """``render`` as one tensor per key of ``CameraConfig.image_shapes``."""
        out: dict[str, torch.Tensor] = {}
        for name, f in self.render(env_ids).items():
            out[f"{name}.rgb"] = f.rgb
            if f.depth is not None:
                out[f"{name}.depth"] = f.depth
        return out

    def redraw(self, env_ids: torch.Tensor | list[int]) -> None:
        """New visual randomization draws for ``env_ids`` (call at their resets)."""
        self.visual.redraw(env_ids)

    def close(self) -> None:
        self._renderer.close()

    def __enter__(self) -> SimCameras:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


class _GLRenderer:
    """One OpenGL context drawing each env's cameras in turn."""

    kind = "opengl"

    def __init__(self, env: SceneEnv, cfg: CameraConfig, ids: list[int],
                 visual: VisualRandomizer):
        self.env, self.cfg, self.ids, self.visual = env, cfg, ids, visual
        self._data = mujoco.MjData(env.model)
        self._gl = OffscreenGL(env.model, cfg.width, cfg.height, cfg.names[0], cfg.mode)
        self._env = 0  # the env being drawn, for the randomization's hook
        self._gl.before_draw = lambda draw, data: visual.apply_scene(draw, data, self._env)

    def render(self, env_ids: torch.Tensor | None) -> dict[str, CameraFrames]:
        cfg, model = self.cfg, self.env.model
        envs = range(self.env.num_envs) if env_ids is None else env_ids.tolist()
        rgb = np.empty((len(self.ids), len(envs), cfg.height, cfg.width, 3), np.uint8)
        depth = np.empty((len(self.ids), len(envs), cfg.height, cfg.width), np.float32) \
            if cfg.depth else None
        moved = self.visual.cfg.scene  # the randomization moves cameras and lights
        for k, e in enumerate(envs):
            self._env = int(e)
            self.env.backend.write_data(int(e), self._data)
            for c, cam in enumerate(self.ids):
                if c == 0 or moved:  # poses again before each draw that moves them
                    mujoco.mj_kinematics(model, self._data)
                    mujoco.mj_camlight(model, self._data)
                if depth is not None:
                    rgb[c, k], depth[c, k] = self._gl.render_rgbd(self._data, cam)
                else:
                    rgb[c, k] = self._gl.render(self._data, cam)
        dev = self.env.device
        return {name: CameraFrames(
            torch.from_numpy(rgb[c]).permute(0, 3, 1, 2).contiguous().to(dev),
            None if depth is None else torch.from_numpy(depth[c])[:, None].to(dev))
            for c, name in enumerate(cfg.names)}

    def close(self) -> None:
        self._gl.close()


class _WarpRenderer:
    """MuJoCo Warp's batch ray tracer over the env's worlds."""

    kind = "warp"

    def __init__(self, env: SceneEnv, cfg: CameraConfig):
        self.env, self.cfg = env, cfg
        backend: Any = env.backend
        self._backend = backend
        self._rc = backend.render_context(cfg.names, cfg.height, cfg.width, cfg.depth)

    def render(self, env_ids: torch.Tensor | None) -> dict[str, CameraFrames]:
        out = {}
        frames = self._backend.render(self._rc, len(self.cfg.names), self.cfg.depth)
        for name, (rgb, depth) in zip(self.cfg.names, frames, strict=True):
            if env_ids is not None:
                rgb = rgb[env_ids]
                depth = depth[env_ids] if depth is not None else None
            out[name] = CameraFrames(rgb, depth)
        return out

    def close(self) -> None:
        self._rc = None
