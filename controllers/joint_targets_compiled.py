"""The shield's joint-target layers (4-8 on joint position targets) compiled: numba, float64.

``SafetyShield._joint_targets`` is about 150 array operations per call: 219 µs on one sample
(the joint-servo deploy path) and, as torch, 1.45 ms per control step at 64 envs, half the
physics (the joint-PD training path). This is the same computation as loops over the batch
and the joints, in one call with the GIL released. The array version stays the reference
(``SafetyShield._joint_targets_reference``; ``tests/controllers/test_joint_targets_compiled.py``
checks the same targets within 1e-9 and the same flags on random states, alone and batched)
and the path for torch tensors on a GPU.

The reference's floor-and-box passes are batch-wide: a band's passes run for the whole batch
while any arm still needs one, and the second band (without the acceleration limit) is tried
for the whole batch when any arm fails the first. This code keeps that structure, so a batch
gives what the reference gives, not only each arm alone.

Shapes: E arms, n joints, K guard points, L arm links.

    joint_targets(qt (E, n), q, qd (E, n), ee_pos (E, 3), jac (E, 6, n), gravity (E, n) or
                  (0, n), link_pos (E, L, 3), link_rot (E, L, 3, 3), track_v (E, n) or (0, n)
                  for no trajectory, guard_link (K,), guard_pts (K, 3), guard_mask (K, n),
                  limits (8, n): soft_lo, soft_hi, qd_lim, tau_lim, kp, kd, and ws_lo (3,),
                  ws_hi (3,) in the first 3 columns of rows 6 and 7,
                  scalars (floor_height, brake_accel_ee, brake_accel, max_joint_accel, dt,
                  lag: the slowest joint's kd/kp), floor_passes)
        -> (qt (E, n), track_v (E, n) (zeros without a trajectory),
            flags (E, 5): workspace, joint_limits, joint_velocity, torque, table_floor)
"""

from __future__ import annotations

import numba
import numpy as np

from robot_rl.controllers.compiled import clip_vec, guard_dot, matmul, matvec, solve

FLAG_NAMES = ("workspace", "joint_limits", "joint_velocity", "torque", "table_floor")

_DAMPING = 0.05
"""``ik.dls_joint_delta``'s default damping, which the reference uses."""


def _dls(jac: np.ndarray, err: np.ndarray) -> np.ndarray:
    """(n,) damped least-squares step J^T (J J^T + d^2 I)^-1 err for J (m, n), err (m,)
    (``ik.dls_joint_delta``)."""
    jjt = matmul(jac, jac.T)
    for a in range(jac.shape[0]):
        jjt[a, a] += _DAMPING * _DAMPING
    return matvec(jac.T, solve(jjt, err))


def _ee_box(jac: np.ndarray, qd: np.ndarray, ws_lo: np.ndarray, ws_hi: np.ndarray,
            lag: float, a2: float, lo: np.ndarray, hi: np.ndarray) -> None:
    """lo, hi (3,): the workspace box shrunk by the hand's stopping distance
    (``SafetyShield._ee_box``); the low z face is open (the floor layer's)."""
    n = qd.shape[0]
    for r in range(3):
        v = 0.0
        for j in range(n):
            v += jac[r, j] * qd[j]
        up, down = max(v, 0.0), max(-v, 0.0)
        h = max(ws_hi[r] - up * lag - up * up / a2, ws_lo[r])
        low = min(ws_lo[r] + down * lag + down * down / a2, h)
        hi[r], lo[r] = h, low
    lo[2] = -1e6


def _pred(ee_pos: np.ndarray, jac: np.ndarray, dq: np.ndarray, out: np.ndarray) -> None:
    """out (3,) = ee_pos + J_p dq: where the hand goes for the joint step dq (n,)."""
    for r in range(3):
        acc = 0.0
        for j in range(dq.shape[0]):
            acc += jac[r, j] * dq[j]
        out[r] = ee_pos[r] + acc


def _box_out(p: np.ndarray, lo: np.ndarray, hi: np.ndarray, inside: np.ndarray) -> bool:
    """inside (3,) = p clipped to [lo, hi]; whether it moved."""
    inside[:] = p
    return clip_vec(inside, lo, hi)


def _trajectory(want: np.ndarray, q: np.ndarray, v_last: np.ndarray, soft_lo: np.ndarray,
                soft_hi: np.ndarray, qd_lim: np.ndarray, lag: np.ndarray, brake: float,
                am: float, dt: float, accel: bool, out: np.ndarray) -> tuple[bool, bool]:
    """out (n,) = the command continuing the joint trajectory towards ``want`` (n,)
    (``SafetyShield._trajectory``); (speed limited, braked)."""
    half = 0.5 * brake * dt
    limited = braked = False
    for j in range(q.shape[0]):
        v_want = (want[j] - q[j]) / lag[j]
        room_hi = max(soft_hi[j] - q[j] - max(v_last[j], 0.0) * lag[j], 0.0)
        room_lo = max(q[j] - soft_lo[j] + min(v_last[j], 0.0) * lag[j], 0.0)
        brake_hi = (half * half + 2.0 * brake * room_hi) ** 0.5 - half
        brake_lo = half - (half * half + 2.0 * brake * room_lo) ** 0.5
        hard_hi = min(brake_hi, qd_lim[j])
        hard_lo = min(max(brake_lo, -qd_lim[j]), hard_hi)
        if accel:
            lo = min(max(v_last[j] - am * dt, hard_lo), hard_hi)
            hi = min(max(v_last[j] + am * dt, lo), hard_hi)
        else:
            lo, hi = hard_lo, hard_hi
        v = min(max(v_want, lo), hi)
        if v != v_want:
            limited = True
        if (v_want > hard_hi and brake_hi < qd_lim[j]) or \
                (v_want < hard_lo and brake_lo > -qd_lim[j]):
            braked = True
        out[j] = q[j] + v * lag[j]
    return limited, braked


def _joint_targets(qt_in: np.ndarray, q: np.ndarray, qd: np.ndarray, ee_pos: np.ndarray,
                   jac: np.ndarray, gravity: np.ndarray, link_pos: np.ndarray,
                   link_rot: np.ndarray, track_v: np.ndarray, guard_link: np.ndarray,
                   guard_pts: np.ndarray, guard_mask: np.ndarray, limits: np.ndarray,
                   scalars: np.ndarray, floor_passes: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    E, n = qt_in.shape
    K = guard_link.shape[0]
    soft_lo, soft_hi, qd_lim, tau_lim = limits[0], limits[1], limits[2], limits[3]
    kp, kd = limits[4], limits[5]
    ws_lo, ws_hi = limits[6, :3], limits[7, :3]
    floor_height, brake_ee, brake, am, dt, lag = scalars[0], scalars[1], scalars[2], \
        scalars[3], scalars[4], scalars[5]
    has_track, has_gravity = track_v.shape[0] == E, gravity.shape[0] == E
    a2e, a2j = 2.0 * brake_ee, 2.0 * brake
    jlag = np.empty(n)
    for j in range(n):
        jlag[j] = kd[j] / kp[j]
    qt = qt_in.copy()
    flags = np.zeros((E, 5), dtype=np.bool_)
    box_lo, box_hi = np.empty((E, 3)), np.empty((E, 3))
    gz, grx, gry = np.empty((E, K)), np.empty((E, K)), np.empty((E, K))
    floor = np.empty((E, K))
    band_lo, band_hi = np.empty((E, n)), np.empty((E, n))
    acc_lo, acc_hi = np.empty((E, n)), np.empty((E, n))
    dq, pred, inside = np.empty(n), np.empty(3), np.empty(3)
    stop, dots, run = np.empty(n), np.empty(K), np.empty((3, n))
    want, tau_c = np.empty(n), np.empty(n)
    for e in range(E):
        _ee_box(jac[e], qd[e], ws_lo, ws_hi, lag, a2e, box_lo[e], box_hi[e])
        jp = jac[e, :3]
        # 4: the hand position the target leads to, projected back into the box
        for j in range(n):
            dq[j] = qt[e, j] - q[e, j]
        _pred(ee_pos[e], jac[e], dq, pred)
        if _box_out(pred, box_lo[e], box_hi[e], inside):
            flags[e, 0] = True
            step = _dls(jp, inside - pred)
            for j in range(n):
                qt[e, j] += step[j]
        # 5: soft limits, moved in by each joint's stopping distance
        for j in range(n):
            up, down = max(qd[e, j], 0.0), max(-qd[e, j], 0.0)
            hi = max(soft_hi[j] - up * jlag[j] - up * up / a2j, soft_lo[j])
            lo = min(soft_lo[j] + down * jlag[j] + down * down / a2j, hi)
            y = min(max(qt[e, j], lo), hi)
            if y != qt[e, j]:
                flags[e, 1] = True
            qt[e, j] = y
        # 6: the trajectory's speed and acceleration limits; the box wins over the
        # acceleration limit where the command would overshoot it
        moved = False
        if has_track:
            want[:] = qt[e]
            moved, braked = _trajectory(want, q[e], track_v[e], soft_lo, soft_hi, qd_lim,
                                        jlag, brake, am, dt, True, qt[e])
            for j in range(n):
                dq[j] = qt[e, j] - q[e, j]
            _pred(ee_pos[e], jac[e], dq, pred)
            if _box_out(pred, box_lo[e], box_hi[e], inside):
                _trajectory(want, q[e], track_v[e], soft_lo, soft_hi, qd_lim, jlag, brake,
                            am, dt, False, stop)
                qt[e] = stop
            if braked:
                flags[e, 1] = True
        led = False
        for j in range(n):
            lead = qd_lim[j] * jlag[j]
            y = min(max(qt[e, j], q[e, j] - lead), q[e, j] + lead)
            if y != qt[e, j]:
                led = True
            qt[e, j] = y
        flags[e, 2] = moved or led
        # 7: the PD torque within the torque band (the actuators' gravity counted)
        torque = False
        for j in range(n):
            g = gravity[e, j] if has_gravity else 0.0
            t_lo, t_hi = -tau_lim[j] - g, tau_lim[j] - g
            tau = kp[j] * (qt[e, j] - q[e, j]) - kd[j] * qd[e, j]
            tau_c[j] = min(max(tau, t_lo), t_hi)
            if tau_c[j] != tau:
                torque = True
            # the bands the passes below keep: soft limits, the speed's lead, the torque
            lead = qd_lim[j] * jlag[j]
            band_lo[e, j] = max(max(q[e, j] - lead, soft_lo[j]),
                                q[e, j] + (t_lo + kd[j] * qd[e, j]) / kp[j])
            band_hi[e, j] = min(min(q[e, j] + lead, soft_hi[j]),
                                q[e, j] + (t_hi + kd[j] * qd[e, j]) / kp[j])
        flags[e, 3] = torque
        if torque:
            for j in range(n):
                qt[e, j] = q[e, j] + (tau_c[j] + kd[j] * qd[e, j]) / kp[j]
        if has_track:
            for j in range(n):
                am_dt = am * dt * jlag[j]
                mid = q[e, j] + track_v[e, j] * jlag[j]
                acc_lo[e, j] = min(max(mid - am_dt, band_lo[e, j]), band_hi[e, j])
                acc_hi[e, j] = max(min(mid + am_dt, band_hi[e, j]), acc_lo[e, j])
        # 8: the guard points, their floor (raised by their stopping distance)
        for k in range(K):
            lk = guard_link[k]
            w0 = link_pos[e, lk, 0]
            w1 = link_pos[e, lk, 1]
            w2 = link_pos[e, lk, 2]
            for c in range(3):
                w0 += link_rot[e, lk, 0, c] * guard_pts[k, c]
                w1 += link_rot[e, lk, 1, c] * guard_pts[k, c]
                w2 += link_rot[e, lk, 2, c] * guard_pts[k, c]
            gz[e, k], grx[e, k], gry[e, k] = w2, w0 - ee_pos[e, 0], w1 - ee_pos[e, 1]
        guard_dot(jac[e], qd[e], guard_link, grx[e], gry[e], dots, run)
        for k in range(K):
            down = max(-dots[k], 0.0)
            floor[e, k] = floor_height + down * lag + down * down / a2e
        for j in range(n):
            dq[j] = qt[e, j] - q[e, j]
        guard_dot(jac[e], dq, guard_link, grx[e], gry[e], dots, run)
        for k in range(K):
            if floor[e, k] - gz[e, k] - dots[k] > 0:
                flags[e, 4] = True
    # 8 and 4 together, a few passes per band (batch-wide, as the reference)
    for band in range(2 if has_track else 1):
        use_acc = has_track and band == 0
        lo_b = acc_lo if use_acc else band_lo
        hi_b = acc_hi if use_acc else band_hi
        if _passes(qt, q, ee_pos, jac, gz, grx, gry, guard_link, guard_mask, floor, box_lo,
                   box_hi, lo_b, hi_b, floor_passes, flags, dq, pred, inside, dots, run):
            break
    v_out = np.zeros((E, n))
    if has_track:
        for e in range(E):
            for j in range(n):
                v_out[e, j] = (qt[e, j] - q[e, j]) / jlag[j]
    return qt, v_out, flags


def _passes(qt: np.ndarray, q: np.ndarray, ee_pos: np.ndarray, jac: np.ndarray,
            gz: np.ndarray, grx: np.ndarray, gry: np.ndarray, guard_link: np.ndarray,
            guard_mask: np.ndarray, floor: np.ndarray, box_lo: np.ndarray,
            box_hi: np.ndarray, lo_b: np.ndarray, hi_b: np.ndarray, floor_passes: int,
            flags: np.ndarray, dq: np.ndarray, pred: np.ndarray, inside: np.ndarray,
            dots: np.ndarray, run: np.ndarray) -> bool:
    """``SafetyShield._ee_passes`` on the whole batch within [lo_b, hi_b]: whether every arm
    ends with its guard points above their floor and its hand inside the box."""
    E, n = qt.shape
    K = guard_link.shape[0]
    need = np.zeros(E, dtype=np.bool_)
    out = np.zeros(E, dtype=np.bool_)
    dz = np.empty(E)
    kbest = np.zeros(E, dtype=np.int64)
    err = np.empty((E, 3))
    row, jw, free = np.empty(n), np.empty((3, n)), np.empty((1, n))
    at_hi, at_lo = np.empty(n, dtype=np.bool_), np.empty(n, dtype=np.bool_)
    for _ in range(floor_passes):
        for e in range(E):
            for j in range(n):
                dq[j] = qt[e, j] - q[e, j]
            guard_dot(jac[e], dq, guard_link, grx[e], gry[e], dots, run)
            best, kb = -np.inf, 0
            for k in range(K):
                s = floor[e, k] - gz[e, k] - dots[k]
                if s > best:  # the first largest, as argmax
                    best, kb = s, k
            dz[e], kbest[e] = best, kb
            need[e] = best > 1e-9
            _pred(ee_pos[e], jac[e], dq, pred)
            out[e] = _box_out(pred, box_lo[e], box_hi[e], inside)
            for r in range(3):
                err[e, r] = inside[r] - pred[r]
        if not (need.any() or out.any()):
            return True
        for e in range(E):
            kb = kbest[e]
            for j in range(n):
                row[j] = (jac[e, 2, j] + gry[e, kb] * jac[e, 3, j]
                          - grx[e, kb] * jac[e, 4, j]) * guard_mask[kb, j]
            for j in range(n):
                at_hi[j] = qt[e, j] >= hi_b[e, j]
                at_lo[j] = qt[e, j] <= lo_b[e, j]
            if out[e]:
                # a joint at its band cannot move further out of it: its column is left out
                for j in range(n):
                    push = 0.0
                    for r in range(3):
                        push += jac[e, r, j] * err[e, r]
                    held = (at_hi[j] and push > 0) or (at_lo[j] and push < 0)
                    for r in range(3):
                        jw[r, j] = 0.0 * jac[e, r, j] if held else jac[e, r, j]
                step = _dls(jw, err[e])
                for j in range(n):
                    qt[e, j] += step[j]
                flags[e, 0] = True
            if need[e]:
                for j in range(n):
                    stuck = (at_hi[j] and row[j] > 0) or (at_lo[j] and row[j] < 0)
                    free[0, j] = 0.0 * row[j] if stuck else row[j]
                fix = _dls(free, np.array([max(dz[e], 0.0)]))
                for j in range(n):
                    qt[e, j] += fix[j]
            for j in range(n):
                qt[e, j] = min(max(qt[e, j], lo_b[e, j]), hi_b[e, j])
    done = True
    for e in range(E):
        for j in range(n):
            dq[j] = qt[e, j] - q[e, j]
        guard_dot(jac[e], dq, guard_link, grx[e], gry[e], dots, run)
        for k in range(K):
            if floor[e, k] - gz[e, k] - dots[k] > 1e-9:
                done = False
        _pred(ee_pos[e], jac[e], dq, pred)
        if _box_out(pred, box_lo[e], box_hi[e], inside):
            done = False
    return done


_dls = numba.njit(nogil=True, cache=True)(_dls)
_ee_box = numba.njit(nogil=True, cache=True)(_ee_box)
_pred = numba.njit(nogil=True, cache=True)(_pred)
_box_out = numba.njit(nogil=True, cache=True)(_box_out)
_trajectory = numba.njit(nogil=True, cache=True)(_trajectory)
_passes = numba.njit(nogil=True, cache=True)(_passes)
joint_targets = numba.njit(nogil=True, cache=True)(_joint_targets)


def warm_up(n: int, k: int, links: int) -> None:
    """Compile (or load from numba's cache) for the shapes' dtypes, off the control loop:
    with and without a trajectory (the env's and a memoryless call's)."""
    z = np.zeros
    limits = np.ones((8, n))
    limits[6:, :3] = [[-1.0, -1.0, -1.0], [1.0, 1.0, 1.0]]
    scalars = np.array([0.0, 1.0, 1.0, 1.0, 0.02, 0.1])
    for track in (z((1, n)), z((0, n))):
        joint_targets(z((1, n)), z((1, n)), z((1, n)), z((1, 3)), z((1, 6, n)), z((1, n)),
                      z((1, links, 3)), z((1, links, 3, 3)), track,
                      np.zeros(k, dtype=np.int64), z((k, 3)), np.ones((k, n)), limits,
                      scalars, 1)


__all__ = ["FLAG_NAMES", "joint_targets", "warm_up"]
