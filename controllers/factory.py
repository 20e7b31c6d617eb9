"""Build a controller from its config, checking it can track the action space's targets."""

from __future__ import annotations

from typing import TYPE_CHECKING

from robot_rl.controllers.action_spaces import ActionSpace
from robot_rl.controllers.base import Controller, DirectTorque
from robot_rl.controllers.configs import (
    ControllerConfig,
    DiffIKConfig,
    JointImpedanceConfig,
    JointPDConfig,
    OSCConfig,
)
from robot_rl.controllers.diff_ik import DiffIK
from robot_rl.controllers.joint import JointController, joint_impedance
from robot_rl.controllers.osc import OperationalSpace
from robot_rl.errors import ConfigError

if TYPE_CHECKING:
    from robot_rl.robots import RobotSpec


def make_controller(cfg: ControllerConfig | None, action_space: ActionSpace,
                    robot: RobotSpec) -> Controller:
    """The controller of ``cfg`` (or the default for the action space: joint PD for joint
    targets, differential IK on the joint PD for pose targets, pass-through for torques)."""
    kind = action_space.kind
    if kind == "torque":
        if cfg is not None:
            raise ConfigError(f"action space joint_torque drives the actuators directly; "
                              f"controller {cfg.type!r} cannot be used with it (set None)")
        return DirectTorque(robot)
    if cfg is None:
        cfg = JointPDConfig() if kind == "joint" else DiffIKConfig()
    controller: Controller
    if isinstance(cfg, JointPDConfig):
        controller = JointController(robot)
    elif isinstance(cfg, JointImpedanceConfig):
        controller = joint_impedance(cfg, robot)
    elif isinstance(cfg, DiffIKConfig):
        controller = DiffIK(cfg, robot)
    elif isinstance(cfg, OSCConfig):
        controller = OperationalSpace(cfg, robot)
    else:
        raise ConfigError(f"unknown controller config {type(cfg).__name__}")
    if controller.target_kind != kind:
        raise ConfigError(f"controller {cfg.type!r} tracks {controller.target_kind} targets, "
                          f"but the action space gives {kind} targets")
    return controller
