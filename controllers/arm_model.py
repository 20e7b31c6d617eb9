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
        out = ArmState(q=np.array(q, dtype=np.float64)[None],
                       qd=np.array(qd, dtype=np.float64)[None],
                       ee_pos=self._xpos[None].copy(), ee_rot=self._xmat.reshape(1, 3, 3).copy(),
                       jac=self._jac[None, :, self._dofs].copy())
        if mass:
            mujoco.mj_crb(m, d)
            mujoco.mj_makeM(m, d)
            mujoco.mj_comVel(m, d)
            mujoco.mj_passive(m, d)
            mujoco.mj_rne(m, d, 0, self._bias)
            mujoco.mj_fullM(m, d, self._full)
            out.mass = self._full[self._mass_ix][None]
            drift = self._passive[self._dofs] - self._bias[self._dofs]
            out.drift = (drift + self._comp * self._gravcomp[self._dofs])[None]
        return out
