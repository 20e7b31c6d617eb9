"""Motion helpers for the scripted experts: end-effector moves through differential IK."""

from __future__ import annotations

import functools

import torch

from robot_rl.controllers import ActionConfig, EEDeltaConfig, JointDeltaConfig
from robot_rl.controllers.ik import (
    dls_joint_delta,
    orientation_error,
    quat_to_mat,
    rot_z,
    shrink_to_caps,
)
from robot_rl.controllers.xp import clamp_norm
from robot_rl.errors import ConfigError
from robot_rl.robots import RobotSpec
from robot_rl.sim.state import SimState

SLOW_ZONE = 0.03
"""Height above its lowest target from which a scripted expert's hand comes down slowly [m]."""
SLOW_STEP = 0.012
"""... with its target at most this far below the hand [m]: slow enough for the shield's
floor layer, which keeps every part of the arm above the table by its stopping distance, not
to act (coming down at 0.13-0.40 m/s, 3-8 cm above the table, the push expert set it off)."""


LIMIT_ZONE = 0.1
"""How close to a joint limit [rad] a scripted expert stops driving that joint outward: the
shield's joint-limit layer acts inside its margin, before the limit itself."""


def eased_down(target: torch.Tensor, ee: torch.Tensor, lowest: float | torch.Tensor
               ) -> torch.Tensor:
    """The offset (E, 3) from the hand ``ee`` (E, 3) to ``target`` (E, 3), coming down fast to
    ``SLOW_ZONE`` above ``lowest`` (the target height of the descent; a float or (E,)), then
    at most ``SLOW_STEP`` below the hand. Sideways and upward offsets are as asked."""
    slow_from = torch.as_tensor(lowest, dtype=ee.dtype, device=ee.device) + SLOW_ZONE
    floor = torch.minimum(ee[:, 2] - SLOW_STEP, slow_from.expand_as(ee[:, 2]))
    z = torch.maximum(target[:, 2], floor)
    return torch.cat([target[:, :2] - ee[:, :2], (z - ee[:, 2])[:, None]], dim=1)


def move_ee(state: SimState, pos_err: torch.Tensor, action: ActionConfig,
            yaw: torch.Tensor | None = None, gain: float = 0.5,
            max_move: float = 0.02) -> torch.Tensor:
    """Arm action (E, A) of the ``action`` space (joint_delta or ee_delta) that moves the end
    effector by ``pos_err`` (E, 3) and turns the hand to its home orientation, turned by
    ``yaw`` (E,) about the world z axis if given.

    In ee_delta the action asks for the whole remaining error, at most the space's scales:
    the differential IK and the joint PD law cover about a quarter of a pose target's offset
    per control step (2.5 mm of a 1 cm offset, measured on arm7), so the hand closes in on
    its waypoint without overshoot. Without rotation actions the controller keeps the home
    orientation itself.

    In joint_delta each control step asks for ``gain`` of the remaining error, at most
    ``max_move`` metres: the joint-delta space carries velocity over to the next step, and a
    full-error step would overshoot. The home posture is the secondary (null-space)
    objective. Under the joint PD law a joint covers about ``1 - exp(-dt kp / kd)`` of a
    target offset in one control step, a different fraction for each joint; the step is
    divided by it so the joints move together along the IK direction. Each offset is capped
    so the PD law's steady speed (offset * kp / kd) stays at 80% of the joint's velocity
    limit: the experts' demonstrations are themselves safe.
    """
    rot = quat_to_mat(state.sensors["ee_quat"])
    rot_des = state.limits.ee_home_rot.expand_as(rot)
    if yaw is not None:
        rot_des = rot_z(yaw) @ rot_des
    if isinstance(action, EEDeltaConfig):
        parts = [clamp_norm(pos_err, action.pos_scale) / action.pos_scale]
        if action.rotation:
            parts.append(clamp_norm(orientation_error(rot, rot_des), action.rot_scale)
                         / action.rot_scale)
        return torch.cat(parts, dim=1).float()
    if not isinstance(action, JointDeltaConfig):
        raise ConfigError(f"the scripted experts act in joint_delta or ee_delta, not "
                          f"{action.type}")
    err = torch.cat([gain * clamp_norm(pos_err, max_move / gain),
                     gain * orientation_error(rot, rot_des)], dim=1)
    posture = 0.2 * (state.limits.home - state.joint_pos)
    jac = state.ee_jacobian()
    dq = dls_joint_delta(jac, err, posture_err=posture)
    # A joint at its limit that the step drives further out stays where it is, and the
    # others take over its share (solved again without it): the home orientation may be
    # out of a short arm's reach there (so5 pointing straight down above 8 cm), and its
    # position is then reached with the orientation it can have.
    q, lim = state.joint_pos, state.limits
    blocked = ((q <= lim.q_min + LIMIT_ZONE) & (dq < 0)) | \
        ((q >= lim.q_max - LIMIT_ZONE) & (dq > 0))
    if bool(blocked.any()):
        free = (~blocked).to(jac.dtype)
        # position first: the orientation weighs a tenth of it in the solve without the
        # blocked joints
        rows = torch.ones(6, dtype=jac.dtype, device=jac.device)
        rows[3:] = 0.1
        dq_free = dls_joint_delta(jac * free[:, None, :] * rows[:, None], err * rows,
                                  posture_err=posture * free) * free
        dq = torch.where(blocked.any(dim=1, keepdim=True), dq_free, dq)
    response, caps = _pd_response(state, action.scale)
    return (shrink_to_caps(dq / response, caps) / action.scale).float()


def _pd_response(state: SimState, step: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-joint fraction of an offset covered in one control step, and offset caps."""
    return _pd_response_of(state.robot, state.control_dt, step, state.dtype, state.device)


@functools.cache
def _pd_response_of(r: RobotSpec, dt: float, step: float, dtype: torch.dtype,
                    device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    kp, kd, qd_max = (torch.tensor(x, dtype=dtype, device=device) for x in (r.kp, r.kd, r.qd_max))
    response = 1.0 - torch.exp(-dt * kp / kd)
    caps = torch.clamp(0.8 * qd_max * kd / kp, max=step)
    return response, caps


def quat_yaw(q: torch.Tensor) -> torch.Tensor:
    """(E,) yaw angle about world z of (E, 4) quaternions (w, x, y, z)."""
    w, x, y, z = q.unbind(dim=1)
    return torch.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
