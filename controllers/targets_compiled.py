"""The pose-target layer and the rotation-vector map compiled: numba, float64 numpy inputs.

On one sample the ``ee_pose`` / ``ee_delta`` action space (``ik.axis_angle_to_mat``) and the
shield's pose-target layer (``SafetyShield._pose_targets``) cost 24 and 27 µs, mostly numpy
dispatch. These are the same computations as loops; the array versions stay the reference
(``tests/controllers/test_targets_compiled.py``) and the torch path.

    axis_angle_to_mat(rv (E, 3)) -> (E, 3, 3)
    pose_targets(pos (E, 3), rot (E, 3, 3), ee_pos (E, 3), ee_vel (E, 3), box (2, 3): the
                 workspace's low and high corners, hand (H, 3), scalars (floor_height,
                 brake_accel_ee)) -> (pos (E, 3), workspace (E,), table_floor (E,))
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(nogil=True, cache=True)
def axis_angle_to_mat(rv: np.ndarray) -> np.ndarray:
    E = rv.shape[0]
    out = np.empty((E, 3, 3))
    for e in range(E):
        angle = np.sqrt(rv[e, 0] * rv[e, 0] + rv[e, 1] * rv[e, 1] + rv[e, 2] * rv[e, 2])
        d = max(angle, 1e-12)
        x, y, z = rv[e, 0] / d, rv[e, 1] / d, rv[e, 2] / d
        k = np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])
        s, c = np.sin(angle), np.cos(angle)
        for i in range(3):
            for j in range(3):
                kk = k[i, 0] * k[0, j] + k[i, 1] * k[1, j] + k[i, 2] * k[2, j]
                out[e, i, j] = (1.0 if i == j else 0.0) + s * k[i, j] + (1.0 - c) * kk
    return out


@numba.njit(nogil=True, cache=True)
def pose_targets(pos: np.ndarray, rot: np.ndarray, ee_pos: np.ndarray, ee_vel: np.ndarray,
                 box: np.ndarray, hand: np.ndarray, scalars: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    E = pos.shape[0]
    floor_height, a2 = scalars[0], 2.0 * scalars[1]
    out = pos.copy()
    ws = np.zeros(E, dtype=np.bool_)
    low = np.zeros(E, dtype=np.bool_)
    for e in range(E):
        for r in range(3):  # the box shrunk by the stopping distance (``_ee_box``, lag 0)
            up, down = max(ee_vel[e, r], 0.0), max(-ee_vel[e, r], 0.0)
            hi = max(box[1, r] - up * up / a2, box[0, r])
            lo = -1e6 if r == 2 else min(box[0, r] + down * down / a2, hi)
            y = min(max(pos[e, r], lo), hi)
            if y != pos[e, r]:
                ws[e] = True
            out[e, r] = y
        drop = np.inf  # the target pose's lowest hand point below the site
        for h in range(hand.shape[0]):
            zc = rot[e, 2, 0] * hand[h, 0] + rot[e, 2, 1] * hand[h, 1] + rot[e, 2, 2] * hand[h, 2]
            drop = min(drop, zc)
        down = max(-ee_vel[e, 2], 0.0)
        floor = floor_height + down * down / a2 - drop
        if out[e, 2] < floor:
            low[e] = True
            out[e, 2] = floor
    return out, ws, low


def warm_up() -> None:
    """Compile (or load from numba's cache), off the control loop."""
    axis_angle_to_mat(np.zeros((1, 3)))
    pose_targets(np.zeros((1, 3)), np.zeros((1, 3, 3)), np.zeros((1, 3)), np.zeros((1, 3)),
                 np.zeros((2, 3)), np.zeros((1, 3)), np.array([0.0, 1.0]))
