"""Rotations and damped least-squares inverse kinematics, batch first, numpy or torch.

Quaternions are (w, x, y, z), as MuJoCo writes them. Every function takes arrays of one kind
(see ``robot_rl.controllers.xp``) and returns that kind.
"""

from __future__ import annotations

from robot_rl.controllers import targets_compiled
from robot_rl.controllers.compiled import arg, is_f64
from robot_rl.controllers.xp import (
    Array,
    clip,
    eye_like,
    mT,
    namespace,
    norm,
    shrink_to_caps,
    solve,
)

__all__ = ["axis_angle_to_mat", "dls_joint_delta", "orientation_error", "quat_to_mat", "rot_z",
           "shrink_to_caps"]


def quat_to_mat(q: Array) -> Array:
    """(..., 4) unit quaternions (w, x, y, z) -> (..., 3, 3) rotation matrices."""
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    m = namespace(q).stack([
        1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
        2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
        2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y),
    ], -1)
    return m.reshape(*q.shape[:-1], 3, 3)


def axis_angle_to_mat(rv: Array) -> Array:
    """(..., 3) rotation vectors (axis * angle) -> (..., 3, 3) rotation matrices (Rodrigues)."""
    if is_f64(rv) and rv.ndim == 2:
        return targets_compiled.axis_angle_to_mat(arg(rv))  # one sample
    return axis_angle_to_mat_reference(rv)


def axis_angle_to_mat_reference(rv: Array) -> Array:
    """``axis_angle_to_mat`` as array operations (numpy or torch, any batch shape): the
    reference the compiled version (``targets_compiled``) is tested against."""
    xp = namespace(rv)
    angle = norm(rv, keepdims=True)  # (..., 1)
    axis = rv / clip(angle, lo=1e-12)  # zero rotation: any axis, sin = 1 - cos = 0
    x, y, z = axis[..., 0], axis[..., 1], axis[..., 2]
    zero = x * 0.0
    k = xp.stack([zero, -z, y, z, zero, -x, -y, x, zero], -1).reshape(*rv.shape[:-1], 3, 3)
    s, c = xp.sin(angle)[..., None], xp.cos(angle)[..., None]
    return eye_like(rv, 3) + s * k + (1.0 - c) * (k @ k)


def rot_z(angle: Array) -> Array:
    """(E,) angles -> (E, 3, 3) rotations about the world z axis."""
    xp = namespace(angle)
    c, s = xp.cos(angle), xp.sin(angle)
    zero, one = angle * 0.0, angle * 0.0 + 1.0
    return xp.stack([c, -s, zero, s, c, zero, zero, zero, one], -1).reshape(-1, 3, 3)


def orientation_error(rot: Array, rot_des: Array) -> Array:
    """(..., 3) rotation vector (sine-scaled) taking ``rot`` towards ``rot_des``, world frame.

    0.5 * sum_i r_i x r_des_i over the columns (axes) of both rotations, which is
    0.5 * vee(A - A^T) with A = R_des R^T: sin(angle) * axis, exact for small errors and
    never larger than 1.
    """
    a = rot_des @ mT(rot)
    return 0.5 * namespace(rot).stack([a[..., 2, 1] - a[..., 1, 2], a[..., 0, 2] - a[..., 2, 0],
                                       a[..., 1, 0] - a[..., 0, 1]], -1)


def dls_joint_delta(jac: Array, err: Array, damping: float = 0.05,
                    posture_err: Array | None = None) -> Array:
    """Damped least-squares joint step (E, n) reducing a task-space error (E, m).

    dq = J^T (J J^T + damping^2 I)^-1 err, plus ``posture_err`` projected into the null space
    of J (secondary objective, for redundant arms).
    """
    jjt = jac @ mT(jac) + (damping ** 2) * eye_like(jac, jac.shape[-2])
    dq = (mT(jac) @ solve(jjt, err[..., None]))[..., 0]
    if posture_err is not None:
        # J^+ J with the same damping; (I - J^+ J) projects onto (approximately) the null space.
        proj = mT(jac) @ solve(jjt, jac)
        dq = dq + posture_err - (proj @ posture_err[..., None])[..., 0]
    return dq
