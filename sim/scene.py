"""Scene composition: a table, the robot mounted on it, task objects, markers and sensors.

Everything a task reads at run time comes from named sensors (positions, orientations,
velocities, contact forces) or from the joint state, so the same task code runs on every
backend: the sensors are computed inside the physics step, in C threads or GPU kernels.

World frame: z up, the table top at z = 0, the robot's base at the origin, facing +x.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import mujoco
import numpy as np

from robot_rl.robots import RobotSpec, compile_spec

# Collision bits: environment geoms collide with the arm (contype 2) and with each other.
ENV_CONTYPE, ENV_CONAFFINITY = 1, 3
TABLE = "table"

_CONTACT_FOUND, _CONTACT_FORCE = 1, 2  # mjtConDataField bits in a contact sensor's intprm[0]
_REDUCE_NETFORCE = 3


@dataclasses.dataclass(frozen=True, kw_only=True)
class SceneConfig:
    """Table and camera layout."""

    table_half_size: tuple[float, float] = (0.75, 0.8)
    """Half extents of the table top in x and y [m]."""
    table_center_x: float = 0.35
    """x of the table centre; the robot sits near its back edge at x = 0 [m]."""
    table_friction: float = 0.6
    """Sliding friction of the table top."""


def _look_at(eye: Sequence[float], target: Sequence[float]) -> list[float]:
    """Camera ``xyaxes`` for a camera at ``eye`` looking at ``target`` with z up."""
    forward = np.subtract(target, eye, dtype=float)
    forward /= np.linalg.norm(forward)
    right = np.cross(forward, [0.0, 0.0, 1.0])
    right /= np.linalg.norm(right)
    up = np.cross(right, forward)
    return [*right, *up]


class SceneBuilder:
    """Builds the MjSpec of a scene; tasks add their objects, markers and sensors to it."""

    def __init__(self, robot: RobotSpec, physics_dt: float, cfg: SceneConfig | None = None):
        self.robot = robot
        self.cfg = cfg or SceneConfig()
        # The scene is built into the robot's own spec, so the robot keeps its names; its
        # root body stays where its MJCF puts it (the mount point is the origin).
        self.spec = robot.load_spec()
        robot.check_names(self.spec)
        self.spec.modelname = f"{robot.name}_scene"
        self.spec.option.timestep = physics_dt
        self.spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
        self.spec.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
        self.spec.visual.global_.offwidth = 1280
        self.spec.visual.global_.offheight = 960
        # A 1024 shadow map renders ~2.5x faster than 4096 in software GL and looks the same.
        self.spec.visual.quality.shadowsize = 1024
        self._add_world()
        self._add_robot_sensors()

    # -- composition ----------------------------------------------------------------------

    def _add_world(self) -> None:
        wb = self.spec.worldbody
        sx, sy = self.cfg.table_half_size
        wb.add_light(pos=[0.6, -0.3, 2.5], dir=[-0.1, 0.1, -1.0], diffuse=[0.75, 0.75, 0.75],
                     castshadow=True)
        self.spec.visual.headlight.ambient = [0.35, 0.35, 0.35]
        wb.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[3, 3, 0.05],
                    pos=[0, 0, -0.75], rgba=[0.35, 0.37, 0.4, 1], contype=0, conaffinity=0)
        wb.add_geom(name=TABLE, type=mujoco.mjtGeom.mjGEOM_BOX, size=[sx, sy, 0.02],
                    pos=[self.cfg.table_center_x, 0, -0.02], rgba=[0.55, 0.42, 0.3, 1],
                    friction=[self.cfg.table_friction, 0.005, 0.0001],
                    contype=ENV_CONTYPE, conaffinity=ENV_CONAFFINITY)
        wb.add_camera(name="corner", pos=[1.15, -0.8, 0.85],
                      xyaxes=_look_at([1.15, -0.8, 0.85], [0.4, 0.0, 0.2]), fovy=50)
        wb.add_camera(name="front", pos=[1.45, 0.0, 0.85],
                      xyaxes=_look_at([1.45, 0.0, 0.85], [0.35, 0.0, 0.15]), fovy=55)
        wb.add_camera(name="side", pos=[0.45, -1.35, 0.75],
                      xyaxes=_look_at([0.45, -1.35, 0.75], [0.4, 0.0, 0.2]), fovy=55)

    def _add_robot_sensors(self) -> None:
        ee = self.robot.ee_site
        self.add_frame_sensors("ee", mujoco.mjtObj.mjOBJ_SITE, ee)
        self.add_contact_force("arm_table_force", subtree=self.robot.root_body, geom=TABLE)

    # -- helpers for tasks ----------------------------------------------------------------

    def add_object(self, name: str, *, geom_type: mujoco.mjtGeom, size: Sequence[float],
                   mass: float, rgba: Sequence[float], friction: float = 1.0,
                   pos: Sequence[float] = (0.5, 0.0, 0.05)) -> None:
        """A free-floating rigid object with frame sensors ``{name}_pos/_quat/_linvel``."""
        body = self.spec.worldbody.add_body(name=name, pos=list(pos))
        body.add_freejoint(name=f"{name}_joint")
        body.add_geom(name=f"{name}_geom", type=geom_type, size=list(size), mass=mass,
                      rgba=list(rgba), friction=[friction, 0.005, 0.0001], condim=4,
                      contype=ENV_CONTYPE, conaffinity=ENV_CONAFFINITY)
        self.add_frame_sensors(name, mujoco.mjtObj.mjOBJ_BODY, name)

    def add_marker(self, name: str, *, size: float, rgba: Sequence[float]) -> None:
        """A visual-only mocap sphere (targets, goals); tasks move it via ``mocap_pos``."""
        body = self.spec.worldbody.add_body(name=name, mocap=True, pos=[0.5, 0, 0.2])
        body.add_geom(name=f"{name}_geom", type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[size, 0, 0],
                      rgba=list(rgba), contype=0, conaffinity=0, group=2)

    def add_frame_sensors(self, prefix: str, objtype: mujoco.mjtObj, objname: str) -> None:
        add_frame_sensors(self.spec, prefix, objtype, objname)

    def add_contact_force(self, name: str, *, subtree: str, geom: str) -> None:
        add_contact_force(self.spec, name, subtree=subtree, geom=geom)

    def add_contact_found(self, name: str, *, body1: str, body2: str) -> None:
        """Number of contacts (0 or 1 here) between two bodies, as a float."""
        self.spec.add_sensor(name=name, type=mujoco.mjtSensor.mjSENS_CONTACT,
                             objtype=mujoco.mjtObj.mjOBJ_BODY, objname=body1,
                             reftype=mujoco.mjtObj.mjOBJ_BODY, refname=body2,
                             intprm=[_CONTACT_FOUND, 0, 1])

    def compile(self) -> mujoco.MjModel:
        return compile_spec(self.spec, f"scene for robot {self.robot.name!r}")


def add_frame_sensors(spec: mujoco.MjSpec, prefix: str, objtype: mujoco.mjtObj,
                      objname: str) -> None:
    """``{prefix}_pos`` (3), ``{prefix}_quat`` (4, w x y z) and ``{prefix}_linvel`` (3).

    For ``mjOBJ_BODY`` the frame is the body's centre of mass; for sites, the site frame.
    """
    for suffix, stype in (("pos", mujoco.mjtSensor.mjSENS_FRAMEPOS),
                          ("quat", mujoco.mjtSensor.mjSENS_FRAMEQUAT),
                          ("linvel", mujoco.mjtSensor.mjSENS_FRAMELINVEL)):
        spec.add_sensor(name=f"{prefix}_{suffix}", type=stype, objtype=objtype, objname=objname)


def add_contact_force(spec: mujoco.MjSpec, name: str, *, subtree: str, geom: str) -> None:
    """Net contact force (3, world frame) between a body's subtree and a geom."""
    spec.add_sensor(name=name, type=mujoco.mjtSensor.mjSENS_CONTACT,
                    objtype=mujoco.mjtObj.mjOBJ_XBODY, objname=subtree,
                    reftype=mujoco.mjtObj.mjOBJ_GEOM, refname=geom,
                    intprm=[_CONTACT_FORCE, _REDUCE_NETFORCE, 1])
