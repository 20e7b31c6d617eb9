"""The joint PD law, in two equivalent forms.

    tau = clamp(kp * (q_target - q) - kd * qd, -tau_max, tau_max)      (+ gravity compensation)

``pd_torque`` is the batched torch form of ``controllers.servo.pd_effort``, which the deploy
runtime evaluates on the host for an effort interface.
``realize_pd_in_model`` writes the same law into the MJCF's joint actuators as an affine
actuator (gain kp on the control, bias -kp q - kd qd), so that MuJoCo evaluates it inside every
physics step, in C, for all envs at once; the control is then the target position. With the
implicit-fast integrator the damping term is integrated implicitly, which keeps stiff gains
stable at the 2 ms physics step. Gravity compensation is the model's (``actuatorgravcomp``)
and counts against the same torque limit, as on a torque-controlled arm.
"""

from __future__ import annotations

from collections.abc import Sequence

import mujoco
import numpy as np
import torch

from robot_rl.controllers.servo import pd_effort

Floats = Sequence[float] | np.ndarray
"""Per-joint values: a robot spec's sequence or a (n,) array."""


def pd_torque(
    q: torch.Tensor,
    qd: torch.Tensor,
    q_target: torch.Tensor,
    kp: torch.Tensor,
    kd: torch.Tensor,
    tau_max: torch.Tensor,
) -> torch.Tensor:
    """Joint torques (..., n) of the PD law; every argument broadcasts to (..., n)."""
    return pd_effort(q_target, q, qd, kp, kd, tau_max)


def realize_pd_in_model(
    spec: mujoco.MjSpec,
    actuators: Sequence[str],
    kp: Floats,
    kd: Floats,
    q_min: Floats,
    q_max: Floats,
    tau_max: Floats,
) -> None:
    """Turn torque actuators into the PD law above; their control becomes the target position."""
    for name, p, d, lo, hi, t in zip(actuators, kp, kd, q_min, q_max, tau_max, strict=True):
        set_affine_servo(spec.actuator(name), gain=p, pos_gain=p, vel_gain=d, ctrl=(lo, hi),
                         tau_max=t)


def realize_velocity_servo_in_model(
    spec: mujoco.MjSpec,
    actuators: Sequence[str],
    kd: Floats,
    qd_max: Floats,
    tau_max: Floats,
) -> None:
    """Turn torque actuators into a velocity servo, tau = kd (qd_cmd - qd) within tau_max,
    its damping integrated implicitly; the control becomes the joint velocity command
    (within +-qd_max): a velocity-controlled arm's own servo loop."""
    for name, d, vmax, t in zip(actuators, kd, qd_max, tau_max, strict=True):
        set_affine_servo(spec.actuator(name), gain=d, pos_gain=0.0, vel_gain=d,
                         ctrl=(-vmax, vmax), tau_max=t)


def set_affine_servo(act: mujoco.MjsActuator, *, gain: float, pos_gain: float,
                     vel_gain: float, ctrl: tuple[float, float], tau_max: float) -> None:
    """Make ``act`` the servo tau = gain * ctrl - pos_gain * q - vel_gain * qd, with ctrl in
    ``ctrl`` and |tau| <= tau_max (the PD law: gain = pos_gain = kp; a velocity servo:
    gain = vel_gain = kd, pos_gain = 0)."""
    act.gaintype = mujoco.mjtGain.mjGAIN_FIXED
    act.biastype = mujoco.mjtBias.mjBIAS_AFFINE
    act.gainprm[:3] = [gain, 0.0, 0.0]
    act.biasprm[:3] = [0.0, -pos_gain, -vel_gain]
    act.gear[0] = 1.0
    act.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
    act.ctrlrange = list(ctrl)
    act.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
    act.forcerange = [-tau_max, tau_max]

