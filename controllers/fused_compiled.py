"""The pose-target path fused: act and command each in one compiled call (numba, no GIL).

With every layer compiled, one sample of shield + OSC still cost ~35 µs: half of it the
Python between seven compiled calls (argument checks, a LAPACK inverse, small arrays passed
from one call to the next). These two functions call the same compiled layers, in the same
order, from inside one call each; no layer is written again here. ``ActionPipeline`` takes
them for pose targets on a torque controller (OSC, Cartesian impedance) when every input is
numpy and the shield is compiled; ``pipeline.fused = False`` runs the layers one call at a
time, and ``shield.compiled = False`` the array reference, which
``tests/controllers/test_fused_compiled.py`` checks both against.

Shapes: E arms, A action dims, n joints; B and B' each 1 (one base for all arms) or E.

    pose_act(action (E, A) float32 or float64, prev (E, A) same dtype, max_delta (< 0: no
             rate limit), hold (E,) bool: hold still besides NaN rows, pos_base (B, 3),
             pos_scale (3,), rot_base (B', 3, 3), rot_scale, rotation (bool),
             target_box (2, 3): the action space's box (-inf .. inf: none), ee_pos (E, 3),
             ee_rot (E, 3, 3), jac (E, 6, n), qd (E, n),
             box (2, 3), hand (H, 3), pose_scalars (floor_height, brake_accel_ee))
        -> (applied (E, A) in the action's dtype, flags (E, 5): invalid (the NaN guard),
            action_bounds, rate_limit, workspace, table_floor, pos (E, 3), rot (E, 3, 3))
        The action layers (``actions_compiled``), the pose action space (p = base + scale *
        a[:3] clipped into the target box, R = exp(rot_scale a[3:6]) R_base, or R_base without
        rotation), the hold pose
        for held rows (invalid or ``hold``: where the arm is), the pose-target layer
        (``targets_compiled``).
    osc_command(pos_t (E, 3), rot_t (E, 3, 3), ee_rot (E, 3, 3), kp (6,), kd (6,), home (n,),
                law_scalars, q, qd (E, n), ee_pos (E, 3), jac (E, 6, n), mass (E, n, n),
                drift, gravity (E, n) or (0, n), link_pos (E, L, 3), link_rot (E, L, 3, 3),
                guard_link, guard_pts, guard_mask, limits, shield_scalars, passes, flag_tol)
        -> (tau (E, n), flags (E, 5) as ``shield_compiled.FLAG_NAMES``)
        M^-1 once, the law (``osc_compiled``), the torque layer (``shield_compiled``).
"""

from __future__ import annotations

import numba
import numpy as np

from robot_rl.controllers.actions_compiled import filter_action
from robot_rl.controllers.compiled import inverse, matmul
from robot_rl.controllers.osc_compiled import osc_torque
from robot_rl.controllers.shield_compiled import filter_torque
from robot_rl.controllers.targets_compiled import axis_angle_to_mat, pose_targets


@numba.njit(nogil=True, cache=True)
def pose_act(action: np.ndarray, prev: np.ndarray, max_delta: float, hold: np.ndarray,
             pos_base: np.ndarray, pos_scale: np.ndarray, rot_base: np.ndarray,
             rot_scale: float, rotation: bool, target_box: np.ndarray, ee_pos: np.ndarray,
             ee_rot: np.ndarray,
             jac: np.ndarray, qd: np.ndarray, box: np.ndarray, hand: np.ndarray,
             pose_scalars: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    applied, invalid, bounds, rate = filter_action(action, prev, max_delta)
    E, n = qd.shape
    last_p, last_r = pos_base.shape[0] - 1, rot_base.shape[0] - 1  # each 0 or E - 1
    rv = np.zeros((E, 3))
    if rotation:
        for e in range(E):
            for r in range(3):
                rv[e, r] = rot_scale * np.float64(applied[e, 3 + r])
    turn = axis_angle_to_mat(rv)
    pos, rot = np.empty((E, 3)), np.empty((E, 3, 3))
    vel = np.empty((E, 3))
    for e in range(E):
        if invalid[e] or hold[e]:  # the hold pose: where the arm is
            pos[e] = ee_pos[e]
            rot[e] = ee_rot[e]
        else:
            bp, br = min(e, last_p), min(e, last_r)
            for r in range(3):
                p = pos_base[bp, r] + pos_scale[r] * np.float64(applied[e, r])
                pos[e, r] = min(max(p, target_box[0, r]), target_box[1, r])
            if rotation:
                rot[e] = matmul(turn[e], rot_base[br])
            else:
                rot[e] = rot_base[br]
        for r in range(3):
            acc = 0.0
            for j in range(n):
                acc += jac[e, r, j] * qd[e, j]
            vel[e, r] = acc
    pos, workspace, low = pose_targets(pos, rot, ee_pos, vel, box, hand, pose_scalars)
    flags = np.empty((E, 5), dtype=np.bool_)  # one array: each returned array costs a boxing
    for e in range(E):
        flags[e, 0], flags[e, 1], flags[e, 2] = invalid[e], bounds[e], rate[e]
        flags[e, 3], flags[e, 4] = workspace[e], low[e]
    return applied, flags, pos, rot


@numba.njit(nogil=True, cache=True)
def osc_command(pos_t: np.ndarray, rot_t: np.ndarray, ee_rot: np.ndarray, kp: np.ndarray,
                kd: np.ndarray, home: np.ndarray, law_scalars: np.ndarray, q: np.ndarray,
                qd: np.ndarray, ee_pos: np.ndarray, jac: np.ndarray, mass: np.ndarray,
                drift: np.ndarray, gravity: np.ndarray, link_pos: np.ndarray,
                link_rot: np.ndarray, guard_link: np.ndarray, guard_pts: np.ndarray,
                guard_mask: np.ndarray, limits: np.ndarray, shield_scalars: np.ndarray,
                passes: int, flag_tol: float) -> tuple[np.ndarray, np.ndarray]:
    minv = np.empty_like(mass)
    for e in range(mass.shape[0]):
        minv[e] = inverse(mass[e])
    tau = osc_torque(pos_t, rot_t, q, qd, ee_pos, ee_rot, jac, mass, minv, kp, kd, home,
                     law_scalars)
    return filter_torque(tau, q, qd, ee_pos, jac, mass, minv, drift, gravity, link_pos,
                         link_rot, guard_link, guard_pts, guard_mask, limits, shield_scalars,
                         passes, flag_tol)


def warm_up(n: int) -> None:
    """Compile (or load from numba's cache) both functions for their argument types (the
    action layers' float32 and float64), off the control loop."""
    z = np.zeros
    eye3 = np.broadcast_to(np.eye(3), (1, 3, 3)).copy()
    eye = np.broadcast_to(np.eye(n), (1, n, n)).copy()
    for dtype in (np.float32, np.float64):
        delta: float = dtype(0.1)  # type: ignore[assignment]  # the dtype's own scalar
        pose_act(z((1, 6), dtype), z((1, 6), dtype), delta, z(1, np.bool_), z((1, 3)),
                 np.ones(3), eye3, 0.5, True, np.array([[-np.inf] * 3, [np.inf] * 3]),
                 z((1, 3)), eye3.copy(), z((1, 6, n)),
                 z((1, n)), np.array([[-1.0] * 3, [1.0] * 3]), z((1, 3)),
                 np.array([0.0, 1.0]))
    osc_command(z((1, 3)), eye3, eye3.copy(), np.ones(6), np.ones(6), z(n),
                np.array([1.0, 1.0, 0.05, 0.5, 1e-3, 1.0]), z((1, n)), z((1, n)), z((1, 3)),
                z((1, 6, n)), eye, z((0, n)), z((1, n)), z((1, 1, 3)), z((1, 1, 3, 3)),
                np.zeros(1, dtype=np.int64), z((1, 3)), np.ones((1, n)), z((6, n)),
                np.array([0.0, 1.0, 1.0, 1.0, 1.0]), 1, 1e-9)
