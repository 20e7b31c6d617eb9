"""A MuJoCo scene in Rerun: the live view where there is no display (``sim.view``).

    scene = RerunScene(rec, model)       # logs every visible geom's shape once (static)
    scene.update(data, t)                # each frame: the geoms' poses, on the time timeline

Geoms of groups 0-2 (what MuJoCo's viewer shows by default) with some opacity are drawn:
planes and boxes as boxes, spheres and ellipsoids as ellipsoids, capsules, cylinders, and
meshes (their vertices and faces) under ``world/geoms/{name}``, each moved by a
``Transform3D`` from ``geom_xpos``/``geom_xmat``. The shield's workspace box (wireframe) and a
goal sphere go under ``world/workspace`` and ``world/goal``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import mujoco
import numpy as np

from robot_rl.errors import ConfigError
from robot_rl.sim.configs import GRPC_PORT, WEB_PORT

VISIBLE_GROUPS = 3
"""Geom groups 0..2 are drawn (MuJoCo's viewer default)."""
PLANE_HALF = 1.0
"""Half extent of an infinite plane's drawn square [m]."""


def require_rerun() -> Any:
    """The ``rerun`` module, or a one-line error naming the extra."""
    try:
        import rerun
    except ImportError as e:
        raise ConfigError(f"Rerun views need rerun-sdk ({e}); install the extra: "
                          "pip install 'robot-rl[view]'") from None
    return rerun


def has_display() -> bool:
    """Whether a window can open (X11 or Wayland)."""
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def serve_web(rec: Any, web_port: int = WEB_PORT, grpc_port: int = GRPC_PORT) -> str:
    """Serve ``rec`` on ``grpc_port`` and Rerun's web viewer, reading it, on ``web_port``;
    returns the recording's URI."""
    rr = require_rerun()
    uri = str(rec.serve_grpc(grpc_port=grpc_port))
    rr.serve_web_viewer(web_port=web_port, open_browser=False, connect_to=uri)
    return uri


def _rgba(model: mujoco.MjModel, g: int) -> np.ndarray:
    mat = int(model.geom_matid[g])
    rgba = model.mat_rgba[mat] if mat >= 0 else model.geom_rgba[g]
    return (np.clip(rgba, 0, 1) * 255).astype(np.uint8)


class RerunScene:
    """Logs ``model``'s visible geoms into ``rec`` and moves them (module docstring)."""

    def __init__(self, rec: Any, model: mujoco.MjModel):
        import rerun as rr

        self.rr, self.rec, self.model = rr, rec, model
        self.geoms: list[tuple[int, str]] = []
        for g in range(model.ngeom):
            if model.geom_group[g] >= VISIBLE_GROUPS or _rgba(model, g)[3] == 0:
                continue
            shape = self._shape(g)
            if shape is None:
                continue
            name = model.geom(g).name or f"geom{g}"
            path = f"world/geoms/{name}"
            rec.log(path, shape, static=True)
            self.geoms.append((g, path))

    def _shape(self, g: int) -> Any:
        rr, m = self.rr, self.model
        kind, size, color = int(m.geom_type[g]), m.geom_size[g], _rgba(m, g)
        t = mujoco.mjtGeom
        if kind == t.mjGEOM_PLANE:
            hx, hy = (size[0] or PLANE_HALF), (size[1] or PLANE_HALF)
            return rr.Boxes3D(half_sizes=[[hx, hy, 1e-3]], colors=[color], fill_mode="solid")
        if kind in (t.mjGEOM_BOX,):
            return rr.Boxes3D(half_sizes=[size], colors=[color], fill_mode="solid")
        if kind == t.mjGEOM_SPHERE:
            return rr.Ellipsoids3D(half_sizes=[[size[0]] * 3], colors=[color],
                                   fill_mode="solid")
        if kind == t.mjGEOM_ELLIPSOID:
            return rr.Ellipsoids3D(half_sizes=[size], colors=[color], fill_mode="solid")
        if kind == t.mjGEOM_CAPSULE:  # Rerun's capsule runs from its origin along +z
            return rr.Capsules3D(lengths=[2 * size[1]], radii=[size[0]],
                                 translations=[[0, 0, -size[1]]], colors=[color])
        if kind == t.mjGEOM_CYLINDER:
            return rr.Cylinders3D(lengths=[2 * size[1]], radii=[size[0]], colors=[color],
                                  fill_mode="solid")
        if kind == t.mjGEOM_MESH:
            mesh = int(m.geom_dataid[g])
            v0, nv = int(m.mesh_vertadr[mesh]), int(m.mesh_vertnum[mesh])
            f0, nf = int(m.mesh_faceadr[mesh]), int(m.mesh_facenum[mesh])
            return rr.Mesh3D(vertex_positions=m.mesh_vert[v0:v0 + nv],
                             triangle_indices=m.mesh_face[f0:f0 + nf], albedo_factor=color)
        return None

    def decorations(self, workspace: tuple[Sequence[float], Sequence[float]] | None) -> None:
        """The shield's workspace box (static wireframe)."""
        if workspace is None:
            return
        lo, hi = (np.asarray(v, dtype=np.float64) for v in workspace)
        self.rec.log("world/workspace", self.rr.Boxes3D(
            centers=[(lo + hi) / 2], half_sizes=[(hi - lo) / 2], colors=[(50, 150, 255)],
            fill_mode="majorwireframe"), static=True)

    def update(self, data: mujoco.MjData, t: float, goal: np.ndarray | None = None) -> None:
        """The geoms' poses (and the goal) at time ``t`` [s]."""
        rr, rec = self.rr, self.rec
        rec.set_time("time", duration=t)
        for g, path in self.geoms:
            rec.log(path, rr.Transform3D(translation=data.geom_xpos[g],
                                         mat3x3=data.geom_xmat[g].reshape(3, 3)))
        if goal is not None:
            rec.log("world/goal", rr.Points3D([goal], radii=[0.02], colors=[(50, 230, 80)]))
