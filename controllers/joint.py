"""Joint-space controllers evaluated inside MuJoCo at every physics step: the PD law of
``robot_rl.controllers.pd`` with two ways to choose its gains.

``JointPD`` uses the robot's servo gains (``RobotSpec.kp/kd``); ``JointImpedance`` takes a
stiffness and a damping ratio and sets kd = 2 zeta sqrt(kp m_jj) from the joint inertias of
the home pose, a compliant law for contact-rich work. Both are written into the model as
affine actuators by ``realize_pd_in_model`` (see ``robot_rl.controllers.pd``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import mujoco
import numpy as np

from robot_rl.controllers.action_spaces import TargetKind
from robot_rl.controllers.arm_model import home_data
from robot_rl.controllers.base import Controller
from robot_rl.controllers.configs import JointImpedanceConfig
from robot_rl.controllers.pd import realize_pd_in_model
from robot_rl.errors import ConfigError

if TYPE_CHECKING:
    from robot_rl.robots import RobotSpec


class JointController(Controller):
    """The joint PD law with gains ``kp``, ``kd``, realized inside the physics model."""

    target_kind: TargetKind = "joint"
    in_model = True

    def __init__(self, robot: RobotSpec, kp: np.ndarray | None = None,
                 kd: np.ndarray | None = None):
        super().__init__(robot)
        if kp is not None and kd is not None:
            self.kp, self.kd = kp, kd

    def configure(self, spec: mujoco.MjSpec) -> None:
        r = self.robot
        realize_pd_in_model(spec, r.actuator_names, self.kp, self.kd, r.q_min, r.q_max,
                            r.tau_max)


def joint_impedance(cfg: JointImpedanceConfig, robot: RobotSpec) -> JointController:
    """A ``JointController`` with gains from a stiffness and a damping ratio."""
    n = robot.num_joints
    kp = np.broadcast_to(np.asarray(cfg.stiffness, dtype=np.float64), (n,)).copy()
    if np.any(kp <= 0) or cfg.damping_ratio <= 0:
        raise ConfigError("joint_impedance stiffness and damping_ratio must be positive")
    m = home_joint_inertia(robot)
    return JointController(robot, kp, 2.0 * cfg.damping_ratio * np.sqrt(kp * m))


def home_joint_inertia(robot: RobotSpec) -> np.ndarray:
    """(n,) diagonal of the arm's joint-space mass matrix at the home pose (with armature)."""
    model = robot.load_spec().compile()
    data = home_data(model, robot)
    dofs = [int(model.joint(name).dofadr[0]) for name in robot.joint_names]
    mujoco.mj_fwdPosition(model, data)
    full = np.zeros((model.nv, model.nv))
    mujoco.mj_fullM(model, data, full)
    return full[dofs, dofs]
