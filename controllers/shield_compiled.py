"""The shield's torque layer compiled: one numba call per evaluation, the GIL released.

``SafetyShield.filter_torque`` is ~100 numpy operations of 1-20 µs each; on one sample (the
deploy loop's case) their dispatch is most of its cost, not their arithmetic. This is the
same computation written as loops over the batch and the joints and compiled with numba
(``@njit(nogil=True, cache=True)``): float64 numpy in, float64 numpy out. The readable array
version in ``shield.py`` stays the reference: ``tests/controllers/test_shield_compiled.py``
checks that both give the same torques (within 1e-9) and the same flags on random states,
and ``SafetyShield`` uses this one only for float64 numpy inputs of a bound shield (torch
tensors, float32, an unbound shield, or ``shield.compiled = False`` take the reference).

Shapes: E arms, n joints, K guard points, L arm links.

    filter_torque(tau (E, n), q, qd (E, n), ee_pos (E, 3), jac (E, 6, n), mass, minv (E, n, n),
                  drift (E, n) or (0, n), gravity (E, n) or (0, n),
                  link_pos (E, L, 3), link_rot (E, L, 3, 3), guard_link (K,), guard_pts (K, 3),
                  guard_mask (K, n), limits (6, n): soft_lo, soft_hi, qd_lim, tau_lim,
                  ws_lo (3,) and ws_hi (3,) in the first 3 columns of rows 4 and 5,
                  scalars (floor_height, brake_accel_ee, brake_accel, brake_time,
                  max_joint_accel), passes, flag_tol)
        -> (tau (E, n), flags (E, 5): workspace, joint_limits, joint_velocity, table_floor,
            torque)
"""

from __future__ import annotations

import numba
import numpy as np

from robot_rl.controllers.compiled import clip_vec, guard_dot, matmul, matvec, solve

FLAG_NAMES = ("workspace", "joint_limits", "joint_velocity", "table_floor", "torque")


def _approach(d: float, a2: float) -> float:
    return (a2 * max(d, 0.0)) ** 0.5


def _filter_torque(tau_in: np.ndarray, q: np.ndarray, qd: np.ndarray, ee_pos: np.ndarray,
                   jac: np.ndarray, mass: np.ndarray, minv: np.ndarray, drift: np.ndarray,
                   gravity: np.ndarray, link_pos: np.ndarray, link_rot: np.ndarray,
                   guard_link: np.ndarray, guard_pts: np.ndarray, guard_mask: np.ndarray,
                   limits: np.ndarray, scalars: np.ndarray, passes: int, flag_tol: float
                   ) -> tuple[np.ndarray, np.ndarray]:
    E, n = tau_in.shape
    K = guard_link.shape[0]
    floor_height, brake_ee, brake, t, am = scalars[0], scalars[1], scalars[2], scalars[3], \
        scalars[4]
    soft_lo, soft_hi, qd_lim, tau_lim = limits[0], limits[1], limits[2], limits[3]
    ws_lo, ws_hi = limits[4, :3], limits[5, :3]
    has_drift, has_gravity = drift.shape[0] == E, gravity.shape[0] == E
    a2e, a2j = 2.0 * brake_ee, 2.0 * brake
    tau = tau_in.copy()
    flags = np.zeros((E, 5), dtype=np.bool_)
    # per-arm quantities of the projection (kept for the batch-wide pass loop below)
    ee_lo, ee_hi = np.empty((E, 3)), np.empty((E, 3))
    floor_lo = np.empty((E, K))
    gz, grx, gry = np.empty((E, K)), np.empty((E, K)), np.empty((E, K))
    acc_lo, acc_hi = np.empty((E, n)), np.empty((E, n))
    tau_lo, tau_hi = np.empty((E, n)), np.empty((E, n))
    qdd0 = np.empty((E, n))
    dots, run = np.empty(K), np.empty((3, n))
    v, w = np.empty(3), np.empty(3)
    lim_lo, lim_hi, drive = np.empty(n), np.empty(n), np.empty(n)
    for e in range(E):
        for r in range(3):
            v[r] = 0.0
            for j in range(n):
                v[r] += jac[e, r, j] * qd[e, j]
        for r in range(3):
            hi_v = _approach(ws_hi[r] - ee_pos[e, r], a2e)
            lo_v = -_approach(ee_pos[e, r] - ws_lo[r], a2e)
            ee_lo[e, r], ee_hi[e, r] = (lo_v - v[r]) / t, (hi_v - v[r]) / t
        ee_lo[e, 2] = -1e9
        for k in range(K):  # the guard points in the world
            lk = guard_link[k]
            for r in range(3):
                w[r] = link_pos[e, lk, r]
                for c in range(3):
                    w[r] += link_rot[e, lk, r, c] * guard_pts[k, c]
            gz[e, k], grx[e, k], gry[e, k] = w[2], w[0] - ee_pos[e, 0], w[1] - ee_pos[e, 1]
        guard_dot(jac[e], qd[e], guard_link, grx[e], gry[e], dots, run)
        for k in range(K):
            floor_lo[e, k] = (-_approach(gz[e, k] - floor_height, a2e) - dots[k]) / t
        for j in range(n):
            lim_hi[j] = _approach(soft_hi[j] - q[e, j], a2j)
            lim_lo[j] = -_approach(q[e, j] - soft_lo[j], a2j)
            q_lo = (max(lim_lo[j], -qd_lim[j]) - qd[e, j]) / t
            q_hi = (min(lim_hi[j], qd_lim[j]) - qd[e, j]) / t
            acc_lo[e, j] = min(max(q_lo, -am), q_hi)
            acc_hi[e, j] = max(min(q_hi, am), acc_lo[e, j])
            g = gravity[e, j] if has_gravity else 0.0
            tau_lo[e, j] = -tau_lim[j] - g
            tau_hi[e, j] = tau_lim[j] - g
        peak = -np.inf
        for j in range(n):
            x = tau[e, j]
            ratio = x / max(tau_hi[e, j], 1e-9) if x > 0 else x / min(tau_lo[e, j], -1e-9)
            peak = max(peak, ratio)
        flags[e, 4] = peak > 1.0
        scale = max(peak, 1.0)
        for j in range(n):
            tau[e, j] = tau[e, j] / scale
        for j in range(n):
            drive[j] = tau[e, j] + drift[e, j] if has_drift else tau[e, j]
        qdd0[e] = matvec(minv[e], drive)
        ws = False
        xdd0 = matvec(jac[e, :3], qdd0[e])
        for r in range(3):
            if (r < 2 and xdd0[r] < ee_lo[e, r]) or xdd0[r] > ee_hi[e, r]:
                ws = True
        jl = jv = False
        for j in range(n):
            a = qdd0[e, j]
            if a < (lim_lo[j] - qd[e, j]) / t or a > (lim_hi[j] - qd[e, j]) / t:
                jl = True
            if a < (-qd_lim[j] - qd[e, j]) / t or a > (qd_lim[j] - qd[e, j]) / t \
                    or a < acc_lo[e, j] or a > acc_hi[e, j]:
                jv = True
        guard_dot(jac[e], qdd0[e], guard_link, grx[e], gry[e], dots, run)
        tf = False
        for k in range(K):
            if dots[k] < floor_lo[e, k]:
                tf = True
        flags[e, 0], flags[e, 1], flags[e, 2], flags[e, 3] = ws, jl, jv, tf
    if flags[:, :4].any():
        qdd = qdd0.copy()
        row = np.empty(n)
        for _ in range(passes):
            any_hit = False
            for e in range(E):
                jp = jac[e, :3]
                minv_jt = matmul(minv[e], jp.T)  # M^-1 J^T
                lam_inv = matmul(jp, minv_jt)  # J M^-1 J^T
                xdd = matvec(jp, qdd[e])
                xdd_c = xdd.copy()
                if clip_vec(xdd_c, ee_lo[e], ee_hi[e]):
                    fix = solve(lam_inv, xdd_c - xdd)
                    qdd[e] += matvec(minv_jt, fix)
                guard_dot(jac[e], qdd[e], guard_link, grx[e], gry[e], dots, run)
                best, kb = -np.inf, 0
                for k in range(K):
                    s = floor_lo[e, k] - dots[k]
                    if s > best:
                        best, kb = s, k
                short = max(best, 0.0)
                for j in range(n):
                    row[j] = (jac[e, 2, j] + gry[e, kb] * jac[e, 3, j]
                              - grx[e, kb] * jac[e, 4, j]) * guard_mask[kb, j]
                minv_row = matvec(minv[e], row)
                den = 0.0
                for j in range(n):
                    den += row[j] * minv_row[j]
                gain = 1.0 / max(den, 1e-9)
                for j in range(n):
                    qdd[e, j] = qdd[e, j] + minv_row[j] * (short * gain)
                hit_q = clip_vec(qdd[e], acc_lo[e], acc_hi[e])
                want = tau[e] + matvec(mass[e], qdd[e] - qdd0[e])
                got = want.copy()
                hit_t = clip_vec(got, tau_lo[e], tau_hi[e])
                if hit_q or hit_t:
                    any_hit = True
                if hit_t:
                    qdd[e] += matvec(minv[e], got - want)
            if not any_hit:
                break
        for e in range(E):
            tau[e] = tau[e] + matvec(mass[e], qdd[e] - qdd0[e])
    for e in range(E):
        for j in range(n):
            y = min(max(tau[e, j], tau_lo[e, j]), tau_hi[e, j])
            if abs(y - tau[e, j]) > flag_tol:
                flags[e, 4] = True
            tau[e, j] = y
    return tau, flags


_approach = numba.njit(nogil=True, cache=True, inline="always")(_approach)
filter_torque = numba.njit(nogil=True, cache=True)(_filter_torque)


def warm_up(n: int, k: int, links: int) -> None:
    """Compile (or load from numba's cache) for the shapes' dtypes, off the control loop."""
    z = np.zeros
    eye = np.broadcast_to(np.eye(n), (1, n, n)).copy()
    filter_torque(z((1, n)), z((1, n)), z((1, n)), z((1, 3)), z((1, 6, n)), eye, eye.copy(),
                  z((0, n)), z((1, n)), z((1, links, 3)), z((1, links, 3, 3)),
                  np.zeros(k, dtype=np.int64), z((k, 3)), np.ones((k, n)), z((6, n)),
                  np.array([0.0, 1.0, 1.0, 1.0, 1.0]), 1, 1e-9)


__all__ = ["FLAG_NAMES", "filter_torque", "warm_up"]
