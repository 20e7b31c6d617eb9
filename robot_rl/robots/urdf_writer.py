"""One of our arms as a URDF: ``robot-rl robot urdf`` (for ``robot_state_publisher``, RViz,
MoveIt) and the round trip that tests import (``robot_rl/robots/urdf.py``)."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Sequence

import mujoco
import numpy as np

from robot_rl.errors import ConfigError
from robot_rl.robots.mjcf import compile_spec
from robot_rl.robots.spec import RobotSpec

EE_LINK = "ee"
"""The fixed link written at the end-effector site."""


def write_urdf(robot: RobotSpec) -> str:
    """The arm of a RobotSpec as a URDF (links, joints with the spec's limits, inertials,
    collision primitives, and a fixed ``ee`` link at the end-effector site): for
    ``robot_state_publisher`` and round trips through ``RobotSpec.from_urdf``. Capsules are written
    as cylinders (URDF has none); joints must sit at their body's origin."""
    model = compile_spec(robot.load_spec(), robot.mjcf)
    limits = {n: (lo, hi, v, t) for n, lo, hi, v, t in zip(
        robot.joint_names, robot.q_min, robot.q_max, robot.qd_max, robot.tau_max, strict=True)}
    if robot.gripper is not None:
        act = model.actuator(robot.gripper.actuator)
        force = float(np.max(np.abs(act.forcerange))) or 100.0
        for jname in robot.gripper.joints:
            lo, hi = model.joint(jname).range
            limits[jname] = (float(lo), float(hi), 0.2, force)
    rootid = model.body(robot.root_body).id
    urdf = ET.Element("robot", name=robot.name)
    for b in range(rootid, model.nbody):
        if b != rootid and not _below(model, b, rootid):
            continue
        _write_link(urdf, model, b)
        if b != rootid:
            _write_joint(urdf, model, b, limits, robot)
    site = model.site(robot.ee_site)
    ET.SubElement(urdf, "link", name=EE_LINK)
    ee = ET.SubElement(urdf, "joint", name=f"{EE_LINK}_fixed", type="fixed")
    ET.SubElement(ee, "parent", link=model.body(site.bodyid[0]).name)
    ET.SubElement(ee, "child", link=EE_LINK)
    ET.SubElement(ee, "origin", xyz=_vec(site.pos), rpy=_vec(_rpy(site.quat)))
    ET.indent(urdf)
    return ET.tostring(urdf, encoding="unicode") + "\n"


def _below(model: mujoco.MjModel, body: int, ancestor: int) -> bool:
    while body > 0:
        body = int(model.body_parentid[body])
        if body == ancestor:
            return True
    return False


def _vec(v: Sequence[float] | np.ndarray) -> str:
    return " ".join(f"{float(x):.10g}" for x in v)


def _rpy(quat: np.ndarray) -> np.ndarray:
    """URDF's fixed-axis roll, pitch, yaw of a MuJoCo quaternion (w, x, y, z)."""
    mat = np.zeros(9)
    mujoco.mju_quat2Mat(mat, np.asarray(quat, dtype=np.float64))
    r = mat.reshape(3, 3)
    pitch = math.asin(max(-1.0, min(1.0, -r[2, 0])))
    if abs(r[2, 0]) < 1 - 1e-12:
        roll, yaw = math.atan2(r[2, 1], r[2, 2]), math.atan2(r[1, 0], r[0, 0])
    else:  # gimbal lock: yaw carries it all
        roll, yaw = 0.0, math.atan2(-r[0, 1], r[1, 1])
    return np.array([roll, pitch, yaw])


def _write_link(urdf: ET.Element, model: mujoco.MjModel, b: int) -> None:
    link = ET.SubElement(urdf, "link", name=model.body(b).name)
    if model.body_mass[b] > 0:
        inertial = ET.SubElement(link, "inertial")
        ET.SubElement(inertial, "origin", xyz=_vec(model.body_ipos[b]),
                      rpy=_vec(_rpy(model.body_iquat[b])))
        ET.SubElement(inertial, "mass", value=f"{model.body_mass[b]:.10g}")
        ixx, iyy, izz = model.body_inertia[b]
        ET.SubElement(inertial, "inertia", ixx=f"{ixx:.10g}", iyy=f"{iyy:.10g}",
                      izz=f"{izz:.10g}", ixy="0", ixz="0", iyz="0")
    for g in np.flatnonzero(model.geom_bodyid == b):
        size, kind = model.geom_size[g], int(model.geom_type[g])
        shape: tuple[str, dict[str, str]]
        if kind == int(mujoco.mjtGeom.mjGEOM_BOX):
            shape = ("box", {"size": _vec(2 * size)})
        elif kind == int(mujoco.mjtGeom.mjGEOM_SPHERE):
            shape = ("sphere", {"radius": f"{size[0]:.10g}"})
        elif kind in (int(mujoco.mjtGeom.mjGEOM_CYLINDER), int(mujoco.mjtGeom.mjGEOM_CAPSULE)):
            shape = ("cylinder", {"radius": f"{size[0]:.10g}", "length": f"{2 * size[1]:.10g}"})
        else:
            continue
        col = ET.SubElement(link, "collision")
        ET.SubElement(col, "origin", xyz=_vec(model.geom_pos[g]),
                      rpy=_vec(_rpy(model.geom_quat[g])))
        ET.SubElement(ET.SubElement(col, "geometry"), shape[0], shape[1])


def _write_joint(urdf: ET.Element, model: mujoco.MjModel, b: int,
                 limits: dict[str, tuple[float, float, float, float]],
                 robot: RobotSpec) -> None:
    jnt_ids = np.flatnonzero(model.jnt_bodyid == b)
    if len(jnt_ids) > 1:
        raise ConfigError(f"{robot.mjcf}: body {model.body(b).name!r} has {len(jnt_ids)} "
                          f"joints; URDF gives a link one")
    parent = model.body(int(model.body_parentid[b])).name
    if len(jnt_ids) == 0:
        joint = ET.SubElement(urdf, "joint", name=f"{model.body(b).name}_fixed", type="fixed")
    else:
        j = int(jnt_ids[0])
        jname = model.joint(j).name
        kind = {int(mujoco.mjtJoint.mjJNT_HINGE): "revolute",
                int(mujoco.mjtJoint.mjJNT_SLIDE): "prismatic"}.get(int(model.jnt_type[j]))
        if kind is None or np.any(np.abs(model.jnt_pos[j]) > 1e-12):
            raise ConfigError(f"{robot.mjcf}: joint {jname!r} must be a hinge or slide at "
                              f"its body's origin to be written as URDF")
        joint = ET.SubElement(urdf, "joint", name=jname, type=kind)
    ET.SubElement(joint, "parent", link=parent)
    ET.SubElement(joint, "child", link=model.body(b).name)
    ET.SubElement(joint, "origin", xyz=_vec(model.body_pos[b]),
                  rpy=_vec(_rpy(model.body_quat[b])))
    if len(jnt_ids):
        ET.SubElement(joint, "axis", xyz=_vec(model.jnt_axis[j]))
        lo, hi, vel, eff = limits.get(jname, (*model.jnt_range[j], 1.0, 1.0))
        ET.SubElement(joint, "limit", lower=f"{lo:.10g}", upper=f"{hi:.10g}",
                      velocity=f"{vel:.10g}", effort=f"{eff:.10g}")
        if model.dof_damping[model.jnt_dofadr[j]] > 0:
            ET.SubElement(joint, "dynamics",
                          damping=f"{model.dof_damping[model.jnt_dofadr[j]]:.10g}")
