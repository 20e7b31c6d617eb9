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

from robot_rl.controllers.action_spaces import (
    ActionConfig,
    ActionSpace,
    EEDelta,
    EEDeltaConfig,
    EEPose,
    EEPoseConfig,
    JointDelta,
    JointDeltaConfig,
    JointTorque,
    JointTorqueConfig,
    JointVelocity,
    JointVelocityConfig,
    Targets,
    make_action_space,
)
from robot_rl.controllers.arm_state import ArmState
from robot_rl.controllers.base import Controller, DirectTorque
from robot_rl.controllers.diff_ik import DiffIK, DiffIKConfig
from robot_rl.controllers.factory import ControllerConfig, make_controller
from robot_rl.controllers.joint import JointController, JointImpedanceConfig, JointPDConfig
from robot_rl.controllers.motion import MotionConfig, MotionProfile
from robot_rl.controllers.osc import OperationalSpace, OSCConfig, cartesian_impedance
from robot_rl.controllers.pd import pd_torque, realize_pd_in_model
from robot_rl.controllers.shield import (
    LAYERS,
    MOTION_LAYERS,
    SafetyShield,
    ShieldConfig,
    motion_acted,
)
from robot_rl.controllers.watchdog import EStop, Watchdog

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
