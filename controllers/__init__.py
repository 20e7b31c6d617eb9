"""Action spaces and controllers shared by simulation and hardware.

``make_action_space(cfg, robot)`` builds the mapping from policy actions to actuator controls;
``pd_torque`` is the joint PD law. The safety shield lands here too, behind the same interface.
"""

from __future__ import annotations

from robot_rl.controllers.action_spaces import (
    ActionConfig,
    ActionSpace,
    JointDelta,
    JointDeltaConfig,
    JointTorque,
    JointTorqueConfig,
    make_action_space,
)
from robot_rl.controllers.pd import pd_torque, realize_pd_in_model

__all__ = [
    "ActionConfig",
    "ActionSpace",
    "JointDelta",
    "JointDeltaConfig",
    "JointTorque",
    "JointTorqueConfig",
    "make_action_space",
    "pd_torque",
    "realize_pd_in_model",
]
