"""The arm's state (``ArmState``) from the CPU backend's arrays in one compiled call.

``SimState.arm_state`` builds it from the backend's live views with some 40 torch operations
(the Jacobian from ``cdof``, the hand's rotation from its quaternion, the link poses, the mass
matrix and the drift forces): about 180 µs per control step at 64 envs, most of it dispatch.
On the CPU backend, whose arrays are numpy, this numba function computes the same quantities
as loops over the batch (``tests/sim/test_arm_compiled.py`` checks it against the torch
version). It feeds the control path when it runs on numpy (``BatchedEnv.numpy_control``).

Shapes: E envs, nq / nv positions / dofs, nb bodies, n arm joints, L arm links.

    arm_arrays(qpos (E, nq), qvel (E, nv), sensordata (E, ns), cdof (E, nv, 6),
               subtree_com (E, nb, 3), xpos (E, nb, 3), xmat (E, nb, 9), mass (E, nM),
               bias, passive, gravcomp (E, nv),
               jq (n,): qpos columns of the arm joints, dofs (n,): their dofs,
               chain (n,): 1 where the dof moves the hand's body, root: the hand's root body,
               pos_adr, quat_adr: the hand's position and quaternion sensors in sensordata,
               bodies (L,): the arm's link bodies, grav_mask (n,): 1 where gravity
               compensation is actuator-side, mass_idx (n, n): positions in ``mass``,
               with_mass)
        -> (q (E, n), qd (E, n), ee_pos (E, 3), ee_rot (E, 3, 3), jac (E, 6, n),
            gravity (E, n), link_pos (E, L, 3), link_rot (E, L, 3, 3),
            mass (E, n, n) and drift (E, n) with_mass, else (0, n, n) and (0, n))
"""

from __future__ import annotations

import dataclasses

import mujoco
import numba
import numpy as np


@dataclasses.dataclass(frozen=True)
class ArmIndex:
    """Where the arm's quantities sit in the backend's arrays (``arm_arrays``' index
    arguments), made once per env by ``arm_index``."""

    jq: np.ndarray
    dofs: np.ndarray
    chain: np.ndarray
    root: int
    pos_adr: int
    quat_adr: int
    bodies: np.ndarray
    grav_mask: np.ndarray
    mass_idx: np.ndarray


def arm_index(model: mujoco.MjModel, jq: list[int], dofs: list[int], ee_body: int,
              chain: np.ndarray, bodies: list[int], mass_idx: np.ndarray,
              pos_sensor: str = "ee_pos", quat_sensor: str = "ee_quat") -> ArmIndex:
    """The index of an arm: its joints' qpos columns ``jq`` and ``dofs``, the hand's body
    and the (nv,) mask of the dofs that move it, its link bodies, the (n, n) positions of its
    mass matrix in MuJoCo's sparse ``M``, and the hand's pose sensors."""
    i64 = np.int64
    return ArmIndex(
        jq=np.asarray(jq, dtype=i64), dofs=np.asarray(dofs, dtype=i64),
        chain=np.ascontiguousarray(np.asarray(chain, dtype=np.float64)[dofs]),
        root=int(model.body_rootid[ee_body]), pos_adr=int(model.sensor(pos_sensor).adr[0]),
        quat_adr=int(model.sensor(quat_sensor).adr[0]), bodies=np.asarray(bodies, dtype=i64),
        grav_mask=np.ascontiguousarray(model.jnt_actgravcomp[model.dof_jntid[dofs]],
                                       dtype=np.float64),
        mass_idx=np.ascontiguousarray(mass_idx, dtype=i64))


@numba.njit(nogil=True, cache=True)
def arm_arrays(qpos: np.ndarray, qvel: np.ndarray, sensordata: np.ndarray, cdof: np.ndarray,
               subtree_com: np.ndarray, xpos: np.ndarray, xmat: np.ndarray,
               mass: np.ndarray, bias: np.ndarray, passive: np.ndarray, gravcomp: np.ndarray,
               jq: np.ndarray, dofs: np.ndarray, chain: np.ndarray, root: int, pos_adr: int,
               quat_adr: int, bodies: np.ndarray, grav_mask: np.ndarray,
               mass_idx: np.ndarray, with_mass: bool) -> tuple:
    E = qpos.shape[0]
    n, L = dofs.shape[0], bodies.shape[0]
    q, qd = np.empty((E, n)), np.empty((E, n))
    ee_pos, ee_rot = np.empty((E, 3)), np.empty((E, 3, 3))
    jac, gravity = np.empty((E, 6, n)), np.empty((E, n))
    link_pos, link_rot = np.empty((E, L, 3)), np.empty((E, L, 3, 3))
    ne = E if with_mass else 0
    m_out, drift = np.empty((ne, n, n)), np.empty((ne, n))
    for e in range(E):
        for j in range(n):
            q[e, j] = qpos[e, jq[j]]
            qd[e, j] = qvel[e, dofs[j]]
            gravity[e, j] = gravcomp[e, dofs[j]] * grav_mask[j]
        p0, p1, p2 = sensordata[e, pos_adr], sensordata[e, pos_adr + 1], \
            sensordata[e, pos_adr + 2]
        ee_pos[e, 0], ee_pos[e, 1], ee_pos[e, 2] = p0, p1, p2
        w, x, y, z = sensordata[e, quat_adr], sensordata[e, quat_adr + 1], \
            sensordata[e, quat_adr + 2], sensordata[e, quat_adr + 3]
        r = ee_rot[e]  # ik.quat_to_mat, term for term
        r[0, 0] = 1 - 2 * (y * y + z * z)
        r[0, 1] = 2 * (x * y - w * z)
        r[0, 2] = 2 * (x * z + w * y)
        r[1, 0] = 2 * (x * y + w * z)
        r[1, 1] = 1 - 2 * (x * x + z * z)
        r[1, 2] = 2 * (y * z - w * x)
        r[2, 0] = 2 * (x * z - w * y)
        r[2, 1] = 2 * (y * z + w * x)
        r[2, 2] = 1 - 2 * (x * x + y * y)
        # the Jacobian from cdof (angular, then linear axis of each dof): the linear part
        # moved from the subtree's centre of mass to the hand (kinematics.jacobian)
        a0 = p0 - subtree_com[e, root, 0]
        a1 = p1 - subtree_com[e, root, 1]
        a2 = p2 - subtree_com[e, root, 2]
        for j in range(n):
            d, c = dofs[j], chain[j]
            w0, w1, w2 = cdof[e, d, 0], cdof[e, d, 1], cdof[e, d, 2]
            jac[e, 0, j] = (cdof[e, d, 3] + (w1 * a2 - w2 * a1)) * c
            jac[e, 1, j] = (cdof[e, d, 4] + (w2 * a0 - w0 * a2)) * c
            jac[e, 2, j] = (cdof[e, d, 5] + (w0 * a1 - w1 * a0)) * c
            jac[e, 3, j] = w0 * c
            jac[e, 4, j] = w1 * c
            jac[e, 5, j] = w2 * c
        for k in range(L):
            b = bodies[k]
            for i in range(3):
                link_pos[e, k, i] = xpos[e, b, i]
                for c in range(3):
                    link_rot[e, k, i, c] = xmat[e, b, 3 * i + c]
        if with_mass:
            for i in range(n):
                drift[e, i] = passive[e, dofs[i]] - bias[e, dofs[i]] + gravity[e, i]
                for j in range(n):
                    m_out[e, i, j] = mass[e, mass_idx[i, j]]
    return q, qd, ee_pos, ee_rot, jac, gravity, link_pos, link_rot, m_out, drift


__all__ = ["ArmIndex", "arm_arrays", "arm_index"]
