"""Visual domain randomization of policy cameras: what differs between a simulator's images
and a real camera's, varied per env so a pixel policy does not rely on any one look.

    vdr = VisualRandomizer(VISUAL_PRESETS["default"], model, camera_ids, num_envs, seed=0)
                                                # VISUAL_PRESETS, VisualDR: sim.configs
    vdr.redraw([2, 5])                          # new draws for envs 2 and 5 (at their reset)
    vdr.apply_scene(draw_model, data, env=2)    # before drawing env 2 (OpenGL)
    rgb, depth = vdr.apply_images(rgb, depth, env_ids)   # after: pixel and depth noise

Scene terms (drawn per env, held until its next redraw): each camera's position and
orientation jitter and field of view, the lights' brightness and position, every geom's
colour. Image terms (fresh every frame): Gaussian pixel noise; depth noise that grows with
the square of the distance, as a stereo depth camera's does; and holes, blocks of pixels
with no depth (0), where a RealSense finds no stereo match. Frame timing (``frame_rate``,
``frame_latency``): the env shows each env the newest frame its camera would have delivered
(``sim.frame_age``), older than the state as a real camera's are.
"""

from __future__ import annotations

from collections.abc import Sequence

import mujoco
import numpy as np
import torch

from robot_rl.sim.configs import VisualDR

HOLE = 4
"""Side of a depth hole block [px]."""


class VisualRandomizer:
    """Per-env draws of a ``VisualDR`` and their application (see module docstring)."""

    def __init__(self, cfg: VisualDR, model: mujoco.MjModel, camera_ids: Sequence[int],
                 num_envs: int, seed: int = 0):
        cfg.validate()
        self.cfg, self.model = cfg, model
        self.cams = list(camera_ids)
        self.rng = np.random.default_rng(seed)
        self.gen = torch.Generator().manual_seed(seed)
        self.fovy0 = model.cam_fovy[self.cams].copy()
        self.diffuse0 = model.light_diffuse.copy()
        self.rgba0 = model.geom_rgba.copy()
        E, C, L, G = num_envs, len(self.cams), model.nlight, model.ngeom
        self.cam_dpos = np.zeros((E, C, 3))
        self.cam_drot = np.tile(np.eye(3), (E, C, 1, 1))
        self.dfovy = np.zeros((E, C))
        self.light_scale = np.ones((E, L))
        self.light_dpos = np.zeros((E, L, 3))
        self.dcolor = np.zeros((E, G, 3))
        self.redraw(range(num_envs))

    def redraw(self, env_ids: Sequence[int] | torch.Tensor) -> None:
        """New scene draws for ``env_ids``."""
        c, r = self.cfg, self.rng
        for e in (env_ids.tolist() if isinstance(env_ids, torch.Tensor) else env_ids):
            C = len(self.cams)
            self.cam_dpos[e] = r.uniform(-c.camera_pos, c.camera_pos, (C, 3))
            for k in range(C):
                axis = r.normal(size=3)
                axis /= np.linalg.norm(axis)
                quat = np.zeros(4)
                mujoco.mju_axisAngle2Quat(quat, axis, r.uniform(0.0, c.camera_rot))
                mat = np.zeros(9)
                mujoco.mju_quat2Mat(mat, quat)
                self.cam_drot[e, k] = mat.reshape(3, 3)
            self.dfovy[e] = r.uniform(-c.fovy, c.fovy, C)
            self.light_scale[e] = r.uniform(1.0 - c.light, 1.0 + c.light, self.model.nlight)
            self.light_dpos[e] = r.uniform(-c.light / 2, c.light / 2, (self.model.nlight, 3))
            self.dcolor[e] = r.uniform(-c.color, c.color, (self.model.ngeom, 3))

    def apply_scene(self, draw: mujoco.MjModel, data: mujoco.MjData, env: int) -> None:
        """Env ``env``'s draws onto the model the renderer draws with (fields of view,
        light colours, geom colours) and onto ``data`` after its kinematics (camera and
        light poses)."""
        if not self.cfg.scene:
            return
        draw.cam_fovy[self.cams] = self.fovy0 + self.dfovy[env]
        draw.light_diffuse[:] = self.diffuse0 * self.light_scale[env][:, None]
        draw.geom_rgba[:, :3] = np.clip(self.rgba0[:, :3] + self.dcolor[env], 0.0, 1.0)
        for k, cid in enumerate(self.cams):
            data.cam_xpos[cid] += self.cam_dpos[env, k]
            data.cam_xmat[cid] = (self.cam_drot[env, k] @ data.cam_xmat[cid].reshape(3, 3)
                                  ).reshape(9)
        data.light_xpos[:] += self.light_dpos[env]

    def apply_images(self, rgb: torch.Tensor, depth: torch.Tensor | None
                     ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Pixel noise on ``rgb`` (B, 3, H, W) uint8; depth noise and holes on ``depth``
        (B, 1, H, W) [m]. New tensors; the inputs are left as they were."""
        c = self.cfg
        if c.rgb_noise > 0:
            noise = torch.randn(rgb.shape, generator=self.gen).to(rgb.device) * c.rgb_noise
            rgb = (rgb.float() + noise).round().clamp(0, 255).to(torch.uint8)
        if depth is not None and (c.depth_noise > 0 or c.depth_holes > 0):
            g = torch.randn(depth.shape, generator=self.gen).to(depth.device)
            depth = depth + c.depth_noise * depth * depth * g
            if c.depth_holes > 0:
                B, _, H, W = depth.shape
                blocks = torch.rand((B, 1, -(-H // HOLE), -(-W // HOLE)), generator=self.gen)
                holes = (blocks < c.depth_holes).repeat_interleave(HOLE, 2).repeat_interleave(
                    HOLE, 3)[:, :, :H, :W].to(depth.device)
                depth = depth.masked_fill(holes, 0.0)
        return rgb, depth
