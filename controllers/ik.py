"""Batched differential inverse kinematics and rotation helpers (torch, batch first).

Quaternions are (w, x, y, z), as MuJoCo writes them.
"""

from __future__ import annotations

import torch


def quat_to_mat(q: torch.Tensor) -> torch.Tensor:
    """(E, 4) unit quaternions (w, x, y, z) -> (E, 3, 3) rotation matrices."""
    w, x, y, z = q.unbind(dim=-1)
    return torch.stack([
        1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
        2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
        2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y),
    ], dim=-1).reshape(*q.shape[:-1], 3, 3)


def rot_z(angle: torch.Tensor) -> torch.Tensor:
    """(E,) angles -> (E, 3, 3) rotations about the world z axis."""
    c, s = torch.cos(angle), torch.sin(angle)
    zero, one = torch.zeros_like(angle), torch.ones_like(angle)
    return torch.stack([c, -s, zero, s, c, zero, zero, zero, one], dim=-1).reshape(-1, 3, 3)


def orientation_error(rot: torch.Tensor, rot_des: torch.Tensor) -> torch.Tensor:
    """(E, 3) rotation vector (small-angle) taking ``rot`` towards ``rot_des``, world frame.

    0.5 * sum_i  r_i x r_des_i  over the columns (axes) of both rotations.
    """
    return 0.5 * torch.linalg.cross(rot, rot_des, dim=1).sum(dim=2)


def dls_joint_delta(jac: torch.Tensor, err: torch.Tensor, damping: float = 0.05,
                    posture_err: torch.Tensor | None = None) -> torch.Tensor:
    """Damped least-squares joint step (E, n) reducing a task-space error (E, m).

    dq = J^T (J J^T + damping^2 I)^-1 err, plus ``posture_err`` projected into the null space
    of J (secondary objective, for redundant arms).
    """
    m = jac.shape[1]
    eye = torch.eye(m, dtype=jac.dtype, device=jac.device)
    jjt = jac @ jac.transpose(1, 2) + (damping ** 2) * eye
    sol = torch.linalg.solve(jjt, err.unsqueeze(-1))  # (E, m, 1)
    dq = (jac.transpose(1, 2) @ sol).squeeze(-1)
    if posture_err is not None:
        # J^+ J with the same damping; (I - J^+ J) projects onto (approximately) the null space.
        proj = jac.transpose(1, 2) @ torch.linalg.solve(jjt, jac)
        dq = dq + posture_err - (proj @ posture_err.unsqueeze(-1)).squeeze(-1)
    return dq


def shrink_to_caps(dq: torch.Tensor, caps: torch.Tensor) -> torch.Tensor:
    """Scale each joint step (E, n) down, keeping its direction, so |dq_j| <= caps_j (n,)."""
    peak = (dq.abs() / caps).amax(dim=1, keepdim=True).clamp(min=1.0)
    return dq / peak
