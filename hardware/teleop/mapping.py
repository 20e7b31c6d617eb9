"""TeleopMapper: a device's end-effector twist -> an action of the task's action space.

Demonstrations are recorded in the task's own action space (the one the policy learns in),
whatever the device: ee_delta takes the twist directly (full deflection = the space's full
offset); joint_delta and joint_velocity go through damped least-squares differential IK on
the arm's Jacobian (the same ``ArmState`` in sim and on hardware), with the orientation held
where it was while no rotation is commanded, and the home posture in the null space.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from robot_rl.controllers.arm_state import ArmState
from robot_rl.controllers.ik import dls_joint_delta, orientation_error
from robot_rl.hardware.teleop.base import TeleopCommand, TeleopError
from robot_rl.robots import RobotSpec

SUPPORTED = ("ee_delta", "joint_delta", "joint_velocity")


class TeleopMapper:
    """See module docstring. ``lin_speed`` [m/s] and ``ang_speed`` [rad/s]: the end-effector
    speed asked for at full deflection (joint-space action spaces)."""

    def __init__(self, action_cfg: Any, action_dim: int, has_gripper: bool,
                 robot: RobotSpec, control_dt: float, lin_speed: float = 0.25,
                 ang_speed: float = 1.0):
        kind = getattr(action_cfg, "type", None)
        if kind not in SUPPORTED:
            raise TeleopError(f"teleoperation drives {', '.join(SUPPORTED)} action spaces; "
                              f"this task uses {kind!r}")
        self.kind, self.cfg = kind, action_cfg
        self.dim, self.has_gripper = action_dim, has_gripper
        self.robot, self.dt = robot, control_dt
        self.lin_step, self.ang_step = lin_speed * control_dt, ang_speed * control_dt
        kp, kd = np.asarray(robot.kp), np.asarray(robot.kd)
        self._response = 1.0 - np.exp(-control_dt * kp / kd)
        """Per joint: the fraction of a target offset the PD servo covers in one step."""
        self._home = np.asarray(robot.home, dtype=np.float64)
        self._rot_ref: np.ndarray | None = None

    def reset(self) -> None:
        """Forget the held orientation (a new episode)."""
        self._rot_ref = None

    def __call__(self, cmd: TeleopCommand, arm: ArmState) -> np.ndarray:
        """(A,) action in [-1, 1] for ``cmd`` at ``arm`` (numpy, one arm)."""
        twist = np.clip(np.asarray(cmd.twist, dtype=np.float64), -1.0, 1.0)
        if self.kind != "ee_delta":
            return self.joint_step(self._joint_delta(twist, arm), cmd.gripper)
        rot = bool(getattr(self.cfg, "rotation", True))
        return self._with_gripper(twist if rot else twist[:3], cmd.gripper)

    def joint_step(self, dq: np.ndarray, gripper: float | None = None) -> np.ndarray:
        """(A,) the action of a joint action space that moves the joints by ``dq`` (n,) [rad]
        in one control step (the gripper: -1 open .. +1 closed; None: closed)."""
        if self.kind == "ee_delta":
            raise TeleopError("joint_step needs a joint action space, this one is ee_delta")
        dq = np.asarray(dq, dtype=np.float64)
        if self.kind == "joint_delta":  # a target offset the servo covers by the next step
            arm_a = dq / self._response / float(self.cfg.scale)
        else:  # joint_velocity
            arm_a = dq / self.dt / float(self.cfg.scale)
        return self._with_gripper(arm_a, gripper)

    def _with_gripper(self, arm_a: np.ndarray, gripper: float | None) -> np.ndarray:
        out = arm_a
        if self.has_gripper:
            g = 1.0 if gripper is None else float(gripper)
            out = np.concatenate([arm_a, [g]])
        if out.shape != (self.dim,):
            raise TeleopError(f"mapped {out.size} action values, the action space has "
                              f"{self.dim}")
        return np.clip(out, -1.0, 1.0)

    def _joint_delta(self, twist: np.ndarray, arm: ArmState) -> np.ndarray:
        """(n,) the joints' motion over one step that moves the hand by ``twist``."""
        q = np.asarray(arm.q, dtype=np.float64)[0]
        rot = np.asarray(arm.ee_rot, dtype=np.float64)[0]
        if self._rot_ref is None or np.any(twist[3:] != 0.0):
            self._rot_ref = rot
        ang = twist[3:] * self.ang_step if np.any(twist[3:] != 0.0) else \
            0.5 * orientation_error(rot[None], self._rot_ref[None])[0]
        err = np.concatenate([twist[:3] * self.lin_step, ang])
        posture = 0.05 * (self._home - q) if np.any(twist != 0.0) else np.zeros_like(q)
        return dls_joint_delta(np.asarray(arm.jac, dtype=np.float64), err[None],
                               posture_err=posture[None])[0]
