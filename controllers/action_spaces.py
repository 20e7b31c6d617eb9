"""Action spaces: map policy actions in [-1, 1] to actuator controls.

An action space is chosen in the task config (``action=JointDeltaConfig(...)``). It may
re-express the robot's actuators when the scene is built (``configure``), then maps batched
actions (E, dim) to controls (E, len(actuator_ids)) at every control step (``__call__``).
The same objects serve one sample at deploy time (E = 1).

    joint_delta   a[:n] -> q_target = q + scale * a, clamped to the joint limits, through
                  the joint PD law evaluated at every physics step (see controllers.pd)
    joint_torque  a[:n] -> torque, a = +-1 at the actuator's control range
    gripper       optional last action: -1 open .. +1 closed (a position target)
"""

from __future__ import annotations

import abc
import dataclasses
from typing import TYPE_CHECKING, Literal

import mujoco
import torch

from robot_rl.controllers.pd import realize_pd_in_model
from robot_rl.errors import ConfigError

if TYPE_CHECKING:  # controllers are shared by sim and hardware; no import of the sim package
    from robot_rl.sim.robots import RobotSpec


@dataclasses.dataclass(kw_only=True)
class JointDeltaConfig:
    """Joint position deltas from the measured position, through the joint PD law."""

    type: Literal["joint_delta"] = "joint_delta"
    scale: float = 0.1
    """Target offset from the measured joint position at |a| = 1 [rad]."""
    gripper: bool = True
    """Append a gripper action (-1 open, +1 closed) if the robot has a gripper."""


@dataclasses.dataclass(kw_only=True)
class JointTorqueConfig:
    """Direct joint torques, a = +-1 at the ends of each actuator's control range."""

    type: Literal["joint_torque"] = "joint_torque"
    gripper: bool = False
    """Append a gripper action (-1 open, +1 closed) if the robot has a gripper."""


ActionConfig = JointDeltaConfig | JointTorqueConfig


class ActionSpace(abc.ABC):
    """Maps (E, dim) actions in [-1, 1] to (E, len(actuator_ids)) actuator controls."""

    def __init__(self, robot: RobotSpec, gripper: bool):
        self.robot = robot
        self.has_gripper = gripper and robot.gripper is not None
        self.dim = robot.num_joints + int(self.has_gripper)
        self.actuator_ids: list[int] = []

    def configure(self, spec: mujoco.MjSpec) -> None:  # noqa: B027 (optional hook)
        """Re-express the robot's actuators in the scene spec before it is compiled.

        The default keeps the MJCF's actuators (torque motors) as they are.
        """

    def bind(self, model: mujoco.MjModel, device: torch.device, dtype: torch.dtype) -> None:
        """Look up actuator ids and ranges in the compiled model."""
        names = list(self.robot.actuator_names)
        if self.has_gripper:
            assert self.robot.gripper is not None
            names.append(self.robot.gripper.actuator)
        self.actuator_ids = [model.actuator(n).id for n in names]
        lo, hi = torch.tensor(model.actuator_ctrlrange[self.actuator_ids].T, dtype=dtype,
                              device=device)
        n = self.robot.num_joints
        self._q_lo = torch.tensor(self.robot.q_min, dtype=dtype, device=device)
        self._q_hi = torch.tensor(self.robot.q_max, dtype=dtype, device=device)
        # a in [-1, 1] -> mid + a * half, for the arm's control ranges.
        self._arm_mid, self._arm_half = (hi[:n] + lo[:n]) / 2, (hi[:n] - lo[:n]) / 2

    def __call__(self, action: torch.Tensor, joint_pos: torch.Tensor) -> torch.Tensor:
        """Controls (E, len(actuator_ids)) for actions (E, dim) at joint positions (E, n)."""
        n = self.robot.num_joints
        arm = self._arm(action[:, :n], joint_pos)
        if not self.has_gripper:
            return arm
        # -1 -> open, +1 -> closed, linearly between the two controls.
        g = self.robot.gripper
        assert g is not None
        a = action[:, n:].to(arm.dtype)
        grip = g.open_ctrl + (a + 1.0) * (0.5 * (g.closed_ctrl - g.open_ctrl))
        return torch.cat([arm, grip], dim=1)

    @abc.abstractmethod
    def _arm(self, action: torch.Tensor, joint_pos: torch.Tensor) -> torch.Tensor:
        """Arm controls (E, n) for arm actions (E, n)."""


class JointDelta(ActionSpace):
    """q_target = clamp(q + scale * a, q_min, q_max), tracked by the PD law in the physics."""

    def __init__(self, cfg: JointDeltaConfig, robot: RobotSpec):
        super().__init__(robot, cfg.gripper)
        if cfg.scale <= 0:
            raise ConfigError(f"joint_delta scale must be positive, got {cfg.scale}")
        self.scale = cfg.scale

    def configure(self, spec: mujoco.MjSpec) -> None:
        r = self.robot
        realize_pd_in_model(spec, r.actuator_names, r.kp, r.kd, r.q_min, r.q_max, r.tau_max)

    def _arm(self, action: torch.Tensor, joint_pos: torch.Tensor) -> torch.Tensor:
        target = torch.add(joint_pos, action.to(joint_pos.dtype), alpha=self.scale)
        return torch.clamp(target, self._q_lo, self._q_hi)


class JointTorque(ActionSpace):
    """Torque = the actuator's control range, scaled linearly from [-1, 1]."""

    def __init__(self, cfg: JointTorqueConfig, robot: RobotSpec):
        super().__init__(robot, cfg.gripper)

    def _arm(self, action: torch.Tensor, joint_pos: torch.Tensor) -> torch.Tensor:
        return torch.addcmul(self._arm_mid, action.to(joint_pos.dtype), self._arm_half)


def make_action_space(cfg: ActionConfig, robot: RobotSpec) -> ActionSpace:
    if isinstance(cfg, JointDeltaConfig):
        return JointDelta(cfg, robot)
    if isinstance(cfg, JointTorqueConfig):
        return JointTorque(cfg, robot)
    raise ConfigError(f"unknown action space config {type(cfg).__name__}")
