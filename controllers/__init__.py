"""Action spaces, controllers and the safety shield, shared by simulation and hardware.

    action (E, A) in [-1, 1]
      -> SafetyShield.filter_action      NaN guard, bounds, rate limit          (control rate)
      -> ActionSpace                     joint / pose / torque targets          (control rate)
      -> SafetyShield.filter_targets     workspace, joint limits, speed, torque,
                                         floor on the targets                   (control rate)
      -> Controller                      joint PD / impedance inside MuJoCo     (physics rate)
                                         or OSC / direct torque, then
         SafetyShield.filter_torque      the same limits on torques             (every substeps)
      -> actuators

Everything here is batched array math that runs on torch tensors (training) or on numpy
arrays of one sample (the deploy loop); see ``robot_rl.controllers.xp``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from robot_rl.lazy import lazy_exports

if TYPE_CHECKING:
    from robot_rl.controllers.action_spaces import (
        ActionSpace,
        EEDelta,
        EEPose,
        JointDelta,
        JointTorque,
        JointVelocity,
        Targets,
        make_action_space,
    )
    from robot_rl.controllers.arm_state import ArmState
    from robot_rl.controllers.base import Controller, DirectTorque
    from robot_rl.controllers.configs import (
        ActionConfig,
        ControllerConfig,
        DiffIKConfig,
        EEDeltaConfig,
        EEPoseConfig,
        JointDeltaConfig,
        JointImpedanceConfig,
        JointPDConfig,
        JointTorqueConfig,
        JointVelocityConfig,
        MotionConfig,
        OSCConfig,
        ShieldConfig,
        cartesian_impedance,
    )
    from robot_rl.controllers.diff_ik import DiffIK
    from robot_rl.controllers.factory import make_controller
    from robot_rl.controllers.joint import JointController
    from robot_rl.controllers.motion import MotionProfile
    from robot_rl.controllers.osc import OperationalSpace
    from robot_rl.controllers.pd import pd_torque, realize_pd_in_model
    from robot_rl.controllers.shield import LAYERS, MOTION_LAYERS, SafetyShield, motion_acted
    from robot_rl.controllers.watchdog import EStop, Watchdog

_EXPORTS = {
    "ActionSpace": "robot_rl.controllers.action_spaces",
    "EEDelta": "robot_rl.controllers.action_spaces",
    "EEPose": "robot_rl.controllers.action_spaces",
    "JointDelta": "robot_rl.controllers.action_spaces",
    "JointTorque": "robot_rl.controllers.action_spaces",
    "JointVelocity": "robot_rl.controllers.action_spaces",
    "Targets": "robot_rl.controllers.action_spaces",
    "make_action_space": "robot_rl.controllers.action_spaces",
    "ActionConfig": "robot_rl.controllers.configs",
    "EEDeltaConfig": "robot_rl.controllers.configs",
    "EEPoseConfig": "robot_rl.controllers.configs",
    "JointDeltaConfig": "robot_rl.controllers.configs",
    "JointTorqueConfig": "robot_rl.controllers.configs",
    "JointVelocityConfig": "robot_rl.controllers.configs",
    "ArmState": "robot_rl.controllers.arm_state",
    "Controller": "robot_rl.controllers.base",
    "DirectTorque": "robot_rl.controllers.base",
    "DiffIK": "robot_rl.controllers.diff_ik",
    "DiffIKConfig": "robot_rl.controllers.configs",
    "make_controller": "robot_rl.controllers.factory",
    "ControllerConfig": "robot_rl.controllers.configs",
    "JointController": "robot_rl.controllers.joint",
    "JointImpedanceConfig": "robot_rl.controllers.configs",
    "JointPDConfig": "robot_rl.controllers.configs",
    "MotionProfile": "robot_rl.controllers.motion",
    "MotionConfig": "robot_rl.controllers.configs",
    "OperationalSpace": "robot_rl.controllers.osc",
    "OSCConfig": "robot_rl.controllers.configs",
    "cartesian_impedance": "robot_rl.controllers.configs",
    "pd_torque": "robot_rl.controllers.pd",
    "realize_pd_in_model": "robot_rl.controllers.pd",
    "LAYERS": "robot_rl.controllers.shield",
    "MOTION_LAYERS": "robot_rl.controllers.shield",
    "SafetyShield": "robot_rl.controllers.shield",
    "motion_acted": "robot_rl.controllers.shield",
    "ShieldConfig": "robot_rl.controllers.configs",
    "EStop": "robot_rl.controllers.watchdog",
    "Watchdog": "robot_rl.controllers.watchdog",
}
"""Where each exported name lives; imported on first use (``robot_rl.lazy``)."""

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "LAYERS", "MOTION_LAYERS", "ActionConfig", "ActionSpace", "ArmState", "Controller",
    "ControllerConfig", "DiffIK", "DiffIKConfig", "DirectTorque", "EEDelta", "EEDeltaConfig",
    "EEPose", "EEPoseConfig",
    "EStop", "JointController", "JointDelta", "JointDeltaConfig",
    "JointImpedanceConfig", "JointPDConfig", "JointTorque", "JointTorqueConfig",
    "JointVelocity", "JointVelocityConfig", "MotionConfig", "MotionProfile", "OSCConfig",
    "OperationalSpace", "SafetyShield",
    "ShieldConfig", "Targets", "Watchdog", "cartesian_impedance", "make_action_space",
    "make_controller", "motion_acted", "pd_torque", "realize_pd_in_model",
]
