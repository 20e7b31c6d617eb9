"""The OSC law compiled: one numba call per evaluation, the GIL released.

``OperationalSpace.torque`` in ``osc.py`` (the readable array version, and the reference
``tests/controllers/test_osc_compiled.py`` checks this against within 1e-9) costs ~37 µs on
one sample, mostly numpy dispatch. This is the same law as loops, for float64 numpy inputs.

    osc_torque(pos_t (E, 3), rot_t (E, 3, 3), q, qd (E, n), ee_pos (E, 3), ee_rot (E, 3, 3),
               jac (E, 6, n), mass, minv (E, n, n), kp (6,), kd (6,), home (n,),
               scalars (kn, dn, max_pos_error, max_rot_error, singularity_damping,
               decouple_inertia as 0 / 1)) -> tau (E, n)
"""

from __future__ import annotations

import numba
import numpy as np

from robot_rl.controllers.compiled import matmul, matvec, solve


def _clamp_norm(v: np.ndarray, max_norm: float) -> None:
    """Scale v in place to a Euclidean norm of at most max_norm (``xp.clamp_norm``)."""
    s = 0.0
    for i in range(v.shape[0]):
        s += v[i] * v[i]
    f = max_norm / max(np.sqrt(s), max_norm)
    for i in range(v.shape[0]):
        v[i] = v[i] * f


def _osc_torque(pos_t: np.ndarray, rot_t: np.ndarray, q: np.ndarray, qd: np.ndarray,
                ee_pos: np.ndarray, ee_rot: np.ndarray, jac: np.ndarray, mass: np.ndarray,
                minv: np.ndarray, kp: np.ndarray, kd: np.ndarray, home: np.ndarray,
                scalars: np.ndarray) -> np.ndarray:
    E, n = q.shape
    kn, dn, max_pos, max_rot, reg, decouple = (scalars[0], scalars[1], scalars[2], scalars[3],
                                               scalars[4], scalars[5] > 0.5)
    out = np.empty((E, n))
    for e in range(E):
        e_pos = np.empty(3)
        for r in range(3):
            e_pos[r] = pos_t[e, r] - ee_pos[e, r]
        _clamp_norm(e_pos, max_pos)
        a = matmul(rot_t[e], ee_rot[e].T)  # R_des R^T
        e_rot = np.empty(3)
        e_rot[0] = 0.5 * (a[2, 1] - a[1, 2])
        e_rot[1] = 0.5 * (a[0, 2] - a[2, 0])
        e_rot[2] = 0.5 * (a[1, 0] - a[0, 1])
        _clamp_norm(e_rot, max_rot)
        twist = matvec(jac[e], qd[e])
        cmd = np.empty(6)
        for r in range(3):
            cmd[r] = kp[r] * e_pos[r] - kd[r] * twist[r]
            cmd[r + 3] = kp[r + 3] * e_rot[r] - kd[r + 3] * twist[r + 3]
        posture = np.empty(n)
        for j in range(n):
            posture[j] = kn * (home[j] - q[e, j]) - dn * qd[e, j]
        tau0 = matvec(mass[e], posture)
        minv_jt = matmul(minv[e], jac[e].T)  # M^-1 J^T
        lam_inv = matmul(jac[e], minv_jt)  # J M^-1 J^T + lambda I
        for r in range(6):
            lam_inv[r, r] += reg
        leak = matvec(minv_jt.T, tau0)  # J M^-1 tau0
        if decouple:
            force = solve(lam_inv, cmd - leak)
        else:
            force = cmd - solve(lam_inv, leak)
        out[e] = tau0 + matvec(jac[e].T, force)
    return out


_clamp_norm = numba.njit(nogil=True, cache=True)(_clamp_norm)
osc_torque = numba.njit(nogil=True, cache=True)(_osc_torque)


def warm_up(n: int) -> None:
    """Compile (or load from numba's cache), off the control loop."""
    z = np.zeros
    eye3 = np.broadcast_to(np.eye(3), (1, 3, 3)).copy()
    eye = np.broadcast_to(np.eye(n), (1, n, n)).copy()
    osc_torque(z((1, 3)), eye3, z((1, n)), z((1, n)), z((1, 3)), eye3.copy(), z((1, 6, n)),
               eye, eye.copy(), np.ones(6), np.ones(6), z(n),
               np.array([1.0, 1.0, 0.05, 0.5, 1e-3, 1.0]))
