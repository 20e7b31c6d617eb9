"""The controller interface: targets in, actuator commands out.

Two kinds of controller, which differ in where (and so at which rate) they run:

* **in-model** controllers (``JointPD``, ``JointImpedance``) re-express the robot's torque
  actuators as MuJoCo actuators implementing their law, so the law is evaluated inside every
  physics step, in C, for all envs at once; the control is the joint position target, held
  over the control period. A real arm runs the same law in its own servo loop (ros2_control
  position interface, Franka's joint impedance), fed the same targets at the same rate.
* **torque** controllers (``OperationalSpace``, ``DirectTorque``) compute joint torques from
  the measured state; the env evaluates them every ``substeps`` physics steps (default: every
  physics step), and the deploy loop at the same period, so the closed loop matches.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING

import mujoco
import numpy as np

from robot_rl.controllers.action_spaces import TargetKind, Targets
from robot_rl.controllers.arm_state import ArmState
from robot_rl.controllers.xp import Array
from robot_rl.errors import RobotRLError

if TYPE_CHECKING:
    from robot_rl.controllers.shield import SafetyShield
    from robot_rl.robots import RobotSpec


class Controller(abc.ABC):
    """Tracks ``Targets`` of one kind (see module docstring)."""

    target_kind: TargetKind
    in_model: bool
    """True: MuJoCo evaluates the law at every physics step and ``ctrl`` is the target."""
    substeps: int = 1
    """Torque controllers: physics steps between two evaluations."""
    needs_mass: bool = False
    """Torque controllers that read ``ArmState.mass``."""

    def __init__(self, robot: RobotSpec):
        self.robot = robot
        n = robot.num_joints
        self.kp = np.asarray(robot.kp, dtype=np.float64)
        """(n,) joint stiffness of the law the shield predicts with [Nm/rad]."""
        self.kd = np.asarray(robot.kd, dtype=np.float64)
        """(n,) joint damping of that law [Nm s/rad]."""
        assert self.kp.shape == (n,)

    def configure(self, spec: mujoco.MjSpec) -> None:  # noqa: B027 (optional hook)
        """Re-express the robot's actuators in the scene spec before it is compiled
        (default: keep the MJCF's torque motors)."""

    def bind(self, model: mujoco.MjModel) -> None:  # noqa: B027 (optional hook)
        """Read what the law needs from the compiled model."""

    def torque(self, targets: Targets, state: ArmState) -> Array:
        """(E, n) joint torques for the targets at the measured state (torque controllers)."""
        raise RobotRLError(f"{type(self).__name__} runs inside the physics model (ctrl is the "
                           f"joint target); it computes no torques")

    def shielded_torque(self, targets: Targets, state: ArmState, shield: SafetyShield
                        ) -> tuple[Array, dict[str, Array]]:
        """(``shield.filter_torque(self.torque(targets, state), state)``: the torques after
        the shield's torque layers, their flags); a controller may fuse the two."""
        return shield.filter_torque(self.torque(targets, state), state)


class DirectTorque(Controller):
    """Torque targets pass through to the torque actuators (the shield still filters them)."""

    target_kind: TargetKind = "torque"
    in_model = False
    needs_mass = True  # the shield's torque layers predict accelerations through M

    def __init__(self, robot: RobotSpec, substeps: int = 1):
        super().__init__(robot)
        self.substeps = substeps

    def torque(self, targets: Targets, state: ArmState) -> Array:
        assert targets.joint is not None
        return targets.joint
