"""Differential inverse kinematics: pose targets tracked by the arm's joint position servo.

Each control step turns the end-effector pose target into a joint position target with one
damped least-squares step (``dls_joint_delta``), plus a null-space pull of the redundant
joints towards the home posture:

    e  = (p_target - p, orientation error)             clamped to max_pos_error / max_rot_error
    dq = J^T (J J^T + damping^2 I)^-1 e + (I - J^+ J) posture_gain (q_home - q)
    q_target = q + dq

The joint target then goes through the shield's joint-target layers (the same command
trajectory, limits and guards as joint action spaces) and the joint PD law, inside the
physics model in simulation and in the arm's own servo loop on a position- or
velocity-controlled robot (ros2_control). This is what Isaac Lab's differential IK action
does; ``OperationalSpace`` is the torque-controlled alternative.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from robot_rl.controllers.action_spaces import TargetKind, Targets
from robot_rl.controllers.arm_state import ArmState
from robot_rl.controllers.configs import DiffIKConfig
from robot_rl.controllers.ik import dls_joint_delta, orientation_error
from robot_rl.controllers.joint import JointController
from robot_rl.controllers.xp import Constants, clamp_norm, namespace
from robot_rl.errors import ConfigError

if TYPE_CHECKING:
    from robot_rl.robots import RobotSpec


class DiffIK(JointController):
    """Pose targets -> joint position targets (see module docstring)."""

    target_kind: TargetKind = "pose"

    def __init__(self, cfg: DiffIKConfig, robot: RobotSpec):
        super().__init__(robot)
        if min(cfg.damping, cfg.max_pos_error, cfg.max_rot_error) <= 0 or \
                cfg.posture_gain < 0:
            raise ConfigError("diff_ik damping and maximum errors must be positive, "
                              "posture_gain >= 0")
        self.cfg = cfg
        self._c = Constants(home=np.asarray(robot.home, dtype=np.float64))

    def joint_targets(self, targets: Targets, state: ArmState) -> Targets:
        """(E, n) joint position targets for pose targets at the measured state."""
        assert targets.pos is not None and targets.rot is not None
        cfg = self.cfg
        e_pos = clamp_norm(targets.pos - state.ee_pos, cfg.max_pos_error)
        e_rot = clamp_norm(orientation_error(state.ee_rot, targets.rot), cfg.max_rot_error)
        err = namespace(e_pos).concatenate([e_pos, e_rot], axis=-1)
        posture = cfg.posture_gain * (self._c(state.q)["home"] - state.q)
        dq = dls_joint_delta(state.jac, err, cfg.damping, posture_err=posture)
        return Targets("joint", joint=state.q + dq, gripper=targets.gripper)
