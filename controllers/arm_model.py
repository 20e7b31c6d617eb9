"""ArmModel: ``ArmState`` of one robot from measured joint positions and velocities.

The deploy loop measures q and qd on the robot; the Jacobian, mass matrix and drift forces
that the controllers and the shield need come from the robot's MJCF through MuJoCo, as in
simulation. One sample, numpy, about ten microseconds:

    arm = ArmModel(model, robot)
    state = arm.state(q, qd, mass=True)      # ArmState with E = 1

Only the arm's joints are set; other joints of the model (gripper fingers, objects) stay at
their defaults, which changes the arm's mass matrix and drift forces slightly (the fingers'
few grams).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import mujoco
import numpy as np

from robot_rl.controllers.arm_state import ArmState
from robot_rl.errors import ConfigError

if TYPE_CHECKING:
    from robot_rl.robots import RobotSpec


def home_data(model: mujoco.MjModel, robot: RobotSpec) -> mujoco.MjData:
    """An MjData of ``model`` with the arm at its home pose and kinematics computed (other
    joints at their defaults): where home-pose quantities are read from."""
    data = mujoco.MjData(model)
    for name, q in zip(robot.joint_names, robot.home, strict=True):
        data.qpos[model.joint(name).qposadr[0]] = q
    mujoco.mj_kinematics(model, data)
    return data


def _index(ids: list[int]) -> slice | np.ndarray:
    """A slice for contiguous ids (views, no copies), else an index array."""
    if ids == list(range(ids[0], ids[0] + len(ids))):
        return slice(ids[0], ids[0] + len(ids))
    return np.asarray(ids)


class ArmModel:
    """Kinematics and dynamics of one arm from its MuJoCo model (see module docstring)."""

    def __init__(self, model: mujoco.MjModel, robot: RobotSpec):
        self.model = model
        self.robot = robot
        self.data = d = mujoco.MjData(model)
        joints = [model.joint(n) for n in robot.joint_names]
        self.n = len(joints)
        self._qadr = _index([int(j.qposadr[0]) for j in joints])
        dofs = [int(j.dofadr[0]) for j in joints]
        self._dofs = _index(dofs)
        self._site = int(model.site(robot.ee_site).id)
        self._comp = model.jnt_actgravcomp[model.dof_jntid[dofs]].astype(np.float64)
        nv = model.nv
        self._jac = np.zeros((6, nv))
        self._jacp, self._jacr = self._jac[:3], self._jac[3:]
        self._full = np.zeros((nv, nv))
        self._bias = np.zeros(nv)
        self._mass_ix = np.ix_(dofs, dofs)
        # MjData's arrays are views of its buffers; binding them once saves the wrapping.
        self._qpos, self._qvel = d.qpos, d.qvel
        self._xpos, self._xmat = d.site_xpos[self._site], d.site_xmat[self._site]
        self._passive, self._gravcomp = d.qfrc_passive, d.qfrc_gravcomp
        self._bodies = np.array([int(j.bodyid[0]) for j in joints])

    def state(self, q: np.ndarray, qd: np.ndarray, mass: bool = False) -> ArmState:
        """(1, ...) ArmState at joint positions ``q`` (n,) and velocities ``qd`` (n,)."""
        m, d = self.model, self.data
        if np.shape(q) != (self.n,) or np.shape(qd) != (self.n,):
            raise ConfigError(f"ArmModel.state wants q and qd of shape ({self.n},), got "
                              f"{np.shape(q)} and {np.shape(qd)}")
        self._qpos[self._qadr] = q
        self._qvel[self._dofs] = qd
        # Only the stages needed (no collision detection): kinematics, then com frames.
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)
        mujoco.mj_jacSite(m, d, self._jacp, self._jacr, self._site)
        mujoco.mj_comVel(m, d)
        mujoco.mj_passive(m, d)  # passive forces and the gravity compensation
        gravity = self._comp * self._gravcomp[self._dofs]
        out = ArmState(q=np.array(q, dtype=np.float64)[None],
                       qd=np.array(qd, dtype=np.float64)[None],
                       ee_pos=self._xpos[None].copy(), ee_rot=self._xmat.reshape(1, 3, 3).copy(),
                       jac=self._jac[None, :, self._dofs].copy(),
                       link_pos=d.xpos[self._bodies][None].copy(),
                       link_rot=d.xmat[self._bodies].reshape(1, -1, 3, 3).copy(),
                       gravity=gravity[None])
        if mass:
            mujoco.mj_crb(m, d)
            mujoco.mj_makeM(m, d)
            mujoco.mj_rne(m, d, 0, self._bias)
            mujoco.mj_fullM(m, d, self._full)
            out.mass = self._full[self._mass_ix][None]
            out.drift = (self._passive[self._dofs] - self._bias[self._dofs] + gravity)[None]
        return out


def body_links(model: mujoco.MjModel, robot: RobotSpec) -> np.ndarray:
    """(nbody,) the arm link each body moves with: the index of its nearest arm-joint
    ancestor (itself included), or -1 for bodies no arm joint moves (the world, the base,
    the scene)."""
    arm_bodies = [int(model.joint(j).bodyid[0]) for j in robot.joint_names]
    out = np.full(model.nbody, -1, dtype=np.int64)
    for b in range(1, model.nbody):
        a = b
        while a > 0 and a not in arm_bodies:
            a = int(model.body_parentid[a])
        if a > 0:
            out[b] = arm_bodies.index(a)
    return out


def guard_points(model: mujoco.MjModel, robot: RobotSpec, floor: float = 0.0
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The corners of the arm's collision geometry that the shield keeps above the table.

    Returns ((K, 3) points, each in the frame of the body of the arm joint that moves it,
    (K,) that joint's index): the corners of every collision geom's bounding box on a body
    whose nearest arm-joint ancestor is that joint (the gripper's fingers at both ends of
    their travel count with the last link). A link with a point below ``floor`` at the home
    pose is part of the mount (it can never be lifted clear) and is left out; without any
    geometry: the end-effector site, on the last link.
    """
    arm_bodies = [int(model.joint(j).bodyid[0]) for j in robot.joint_names]
    fingers = [model.joint(j).id for j in robot.gripper.joints] if robot.gripper else []
    body_link = body_links(model, robot)
    geoms: list[tuple[int, int]] = []
    for g in range(model.ngeom):
        k = int(body_link[model.geom_bodyid[g]])
        if k >= 0 and (model.geom_contype[g] or model.geom_conaffinity[g]):
            geoms.append((g, k))
    signs = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
    points: list[np.ndarray] = []
    links: list[int] = []
    low_at_home: set[int] = set()
    for end in (0, 1):  # fingers closed, then open
        data = home_data(model, robot)
        for j in fingers:
            data.qpos[model.jnt_qposadr[j]] = model.jnt_range[j][end]
        mujoco.mj_kinematics(model, data)
        for g, k in geoms:
            corners = model.geom_aabb[g, :3] + signs * model.geom_aabb[g, 3:]  # geom frame
            world = data.geom_xpos[g] + corners @ data.geom_xmat[g].reshape(3, 3).T
            if world[:, 2].min() < floor:
                low_at_home.add(k)
            b = arm_bodies[k]
            points.append((world - data.xpos[b]) @ data.xmat[b].reshape(3, 3))
            links += [k] * len(corners)
    pts, idx = np.concatenate(points) if points else np.zeros((0, 3)), np.asarray(links)
    keep = ~np.isin(idx, sorted(low_at_home))
    pts, idx = pts[keep], idx[keep]
    if len(pts) == 0:
        data = home_data(model, robot)
        b, site = arm_bodies[-1], model.site(robot.ee_site).id
        p = (data.site_xpos[site] - data.xpos[b]) @ data.xmat[b].reshape(3, 3)
        return p[None], np.array([len(arm_bodies) - 1])
    uniq, first = np.unique(np.round(np.c_[pts, idx], 9), axis=0, return_index=True)
    return pts[np.sort(first)], idx[np.sort(first)]
