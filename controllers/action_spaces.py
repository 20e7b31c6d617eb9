"""Action spaces: map policy actions in [-1, 1] to controller targets.

An action space is chosen in the task config (``action=EEDeltaConfig(...)``). It turns batched
actions (E, dim) into ``Targets`` at every control step, given the measured ``ArmState``; a
controller (``robot_rl.controllers.joint`` / ``osc``) then tracks them, behind the shield. The
same objects serve one sample at deploy time (E = 1), with numpy or torch arrays.

    joint_delta     a[:n] -> q_target = q + scale * a                      (joint targets)
    joint_velocity  a[:n] -> q_ref += scale * a * dt, kept within ``max_lead`` of q
                                                                           (joint targets)
    ee_delta        a[:3] -> p_target = p + pos_scale * a, clipped into a box if set,
                    a[3:6] -> R_target = exp(rot_scale * a) R               (pose targets)
    ee_pose         a[:3] -> p_target in the box [lo, hi] (a = -1 .. +1),
                    a[3:6] -> R_target = exp(max_angle * a) R_home          (pose targets)
    joint_torque    a[:n] -> torque, a = +-1 at the actuator's control range (torque targets)
    gripper         optional last action: -1 open .. +1 closed (a position target)

``hold(state)`` gives the targets that keep the arm where it is (current joint positions or
pose, zero velocity): the shield's fallback for invalid actions, the gate and the watchdog.
"""

from __future__ import annotations

import abc
import dataclasses
from typing import TYPE_CHECKING, Literal

import mujoco
import numpy as np

from robot_rl.controllers.arm_model import home_data
from robot_rl.controllers.arm_state import ArmState
from robot_rl.controllers.configs import (
    ActionConfig,
    EEDeltaConfig,
    EEPoseConfig,
    JointDeltaConfig,
    JointTorqueConfig,
    JointVelocityConfig,
    Vec3,
)
from robot_rl.controllers.ik import axis_angle_to_mat
from robot_rl.controllers.xp import Array, Constants, cast, clip, like, namespace, to_numpy
from robot_rl.errors import ConfigError

if TYPE_CHECKING:  # controllers are shared by sim and hardware; no import of the sim package
    from robot_rl.robots import RobotSpec

TargetKind = Literal["joint", "pose", "torque"]


@dataclasses.dataclass
class Targets:
    """Controller targets of E robots; which fields are set depends on ``kind``.

    joint: (E, n) joint position targets [rad] (kind "joint") or joint torques [Nm] ("torque")
    pos, rot: (E, 3) and (E, 3, 3) end-effector pose targets, world frame (kind "pose")
    gripper: (E, 1) gripper actuator control, or None without a gripper action
    start: (E, n) where a ramped joint command starts (``MotionConfig.ramp``): over the
        control period the command moves from ``start`` to ``joint`` (``at``); None: held
    """

    kind: TargetKind
    joint: Array | None = None
    pos: Array | None = None
    rot: Array | None = None
    gripper: Array | None = None
    start: Array | None = None

    def numpy(self) -> Targets:
        """The same targets as numpy arrays (zero-copy views of CPU tensors)."""
        conv = to_numpy
        return Targets(self.kind, conv(self.joint), conv(self.pos), conv(self.rot),
                       conv(self.gripper), conv(self.start))

    def at(self, phase: float) -> Targets:
        """The targets at ``phase`` (0 .. 1] of the control period: a ramped joint command
        start + phase (joint - start), reaching ``joint`` at 1; held targets as they are."""
        if self.start is None or self.joint is None:
            return self
        joint = self.start + (self.joint - self.start) * min(max(phase, 0.0), 1.0)
        return Targets(self.kind, joint, self.pos, self.rot, self.gripper)

    def where(self, mask: Array, other: Targets) -> Targets:
        """Rows of ``other`` where ``mask`` (E,) is true, else these rows."""
        xp = namespace(mask)

        def pick(a: Array | None, b: Array | None) -> Array | None:
            if a is None or b is None:
                return a
            m = mask.reshape(-1, *([1] * (a.ndim - 1)))
            return xp.where(m, b, a)

        return Targets(self.kind, pick(self.joint, other.joint), pick(self.pos, other.pos),
                       pick(self.rot, other.rot), pick(self.gripper, other.gripper),
                       pick(self.start, other.start))


class ActionSpace(abc.ABC):
    """Maps (E, dim) actions in [-1, 1] to ``Targets`` (see module docstring)."""

    kind: TargetKind

    def __init__(self, robot: RobotSpec, gripper: bool, arm_dim: int):
        self.robot = robot
        self.has_gripper = gripper and robot.gripper is not None
        self.arm_dim = arm_dim
        self.dim = arm_dim + int(self.has_gripper)
        self._home_rot = np.eye(3)
        self._consts: Constants | None = None

    def bind(self, model: mujoco.MjModel) -> None:
        """Read what the mapping needs from the compiled model (actuator ranges, home pose)."""
        data = home_data(model, self.robot)
        self._home_rot = data.site(self.robot.ee_site).xmat.reshape(3, 3).copy()
        self._consts = None

    def _k(self, x: Array) -> dict[str, Array]:
        """The mapping's constants as arrays like ``x`` (converted once per kind, cached)."""
        if self._consts is None:
            self._consts = Constants(**self._constants())
        return self._consts(x)

    def _constants(self) -> dict[str, np.ndarray]:
        r = self.robot
        return {"q_lo": np.asarray(r.q_min), "q_hi": np.asarray(r.q_max),
                "home_rot": self._home_rot, "kd": np.asarray(r.kd)}

    def reset(self, ids: Array, q: Array) -> None:  # noqa: B027 (optional hook)
        """Forget per-robot memory of the robots ``ids``, now at joint positions ``q`` (E, n)
        (stateful action spaces)."""

    def __call__(self, action: Array, state: ArmState) -> Targets:
        """Targets for actions (E, dim) at the measured state."""
        action = cast(action, state.q)
        t = self._arm(action[:, : self.arm_dim], state)
        t.gripper = self._gripper(action)
        return t

    def hold(self, state: ArmState, action: Array | None = None) -> Targets:
        """Targets that keep the arm still where it is; the gripper keeps ``action``'s command
        (or closes without one)."""
        t = self._hold(state)
        if self.has_gripper:
            t.gripper = self._gripper(cast(action, state.q)) if action is not None else \
                self._gripper_ctrl(like(state.q, np.ones((state.q.shape[0], 1))))
        return t

    def gripper(self, action: Array, state: ArmState) -> Array | None:
        """(E, 1) gripper targets of actions (E, dim) (None without a gripper action)."""
        return self._gripper(cast(action, state.q))

    def _gripper(self, action: Array) -> Array | None:
        if not self.has_gripper:
            return None
        return self._gripper_ctrl(action[:, self.arm_dim:])

    def _gripper_ctrl(self, a: Array) -> Array:
        # -1 -> open, +1 -> closed, linearly between the two controls.
        g = self.robot.gripper
        assert g is not None
        return g.open_ctrl + (a + 1.0) * (0.5 * (g.closed_ctrl - g.open_ctrl))

    @abc.abstractmethod
    def _arm(self, action: Array, state: ArmState) -> Targets:
        """Arm targets for arm actions (E, arm_dim)."""

    @abc.abstractmethod
    def _hold(self, state: ArmState) -> Targets:
        """Arm targets that hold the current state."""


class _JointTargets(ActionSpace):
    kind: TargetKind = "joint"

    def _hold(self, state: ArmState) -> Targets:
        return Targets("joint", joint=state.q * 1.0)  # a copy: the state may be a live view

    def _clamp(self, q: Array) -> Array:
        k = self._k(q)
        return clip(q, lo=k["q_lo"], hi=k["q_hi"])


class JointDelta(_JointTargets):
    """q_target = clamp(q + scale * a, q_min, q_max)."""

    def __init__(self, cfg: JointDeltaConfig, robot: RobotSpec):
        super().__init__(robot, cfg.gripper, robot.num_joints)
        if cfg.scale <= 0:
            raise ConfigError(f"joint_delta scale must be positive, got {cfg.scale}")
        self.scale = cfg.scale

    def _arm(self, action: Array, state: ArmState) -> Targets:
        return Targets("joint", joint=self._clamp(state.q + self.scale * action))


class JointVelocity(_JointTargets):
    """q_ref <- clamp(q_ref + scale * a * dt, q - max_lead, q + max_lead); q_target = q_ref."""

    def __init__(self, cfg: JointVelocityConfig, robot: RobotSpec, control_dt: float):
        super().__init__(robot, cfg.gripper, robot.num_joints)
        if cfg.scale <= 0 or cfg.max_lead <= 0:
            raise ConfigError("joint_velocity scale and max_lead must be positive, got "
                              f"{cfg.scale} and {cfg.max_lead}")
        self.step = cfg.scale * control_dt
        self.max_lead = cfg.max_lead
        self._ref: Array | None = None

    def _fits(self, q: Array) -> bool:
        """The reference is of ``q``'s kind (numpy or torch) and shape; one action space may
        serve a batched env (torch) and the deploy loop (numpy) in turn."""
        return self._ref is not None and type(self._ref) is type(q) and \
            self._ref.shape == q.shape

    def reset(self, ids: Array, q: Array) -> None:
        if not self._fits(q):
            self._ref = q * 1.0
        assert self._ref is not None
        self._ref[ids] = q[ids]

    def _arm(self, action: Array, state: ArmState) -> Targets:
        if not self._fits(state.q):
            self._ref = state.q * 1.0
        ref = self._ref + self.step * action
        ref = clip(ref, lo=state.q - self.max_lead, hi=state.q + self.max_lead)
        self._ref = self._clamp(ref)
        return Targets("joint", joint=self._ref)


_NO_BOX = np.array([[-np.inf] * 3, [np.inf] * 3])
"""(2, 3) a target box that clips nothing."""


def target_box(lo: Vec3 | None, hi: Vec3 | None) -> np.ndarray:
    """(2, 3) [lo; hi] of a target box config (no box: -inf .. inf); ConfigError when only
    one corner is given or a side is empty."""
    if lo is None and hi is None:
        return _NO_BOX.copy()
    if lo is None or hi is None:
        raise ConfigError("the target box needs both box_lo and box_hi (or neither)")
    box = np.array([lo, hi], dtype=np.float64)
    if box.shape != (2, 3) or np.any(box[0] >= box[1]):
        raise ConfigError(f"the target box needs box_lo < box_hi on x, y and z, got {lo} and "
                          f"{hi}")
    return box


class PoseTargets(ActionSpace):
    """An action space of end-effector pose targets (``EEDelta``, ``EEPose``)."""

    kind: TargetKind = "pose"

    def __init__(self, robot: RobotSpec, gripper: bool, rotation: bool):
        super().__init__(robot, gripper, 6 if rotation else 3)
        self.rotation = rotation

    def _hold(self, state: ArmState) -> Targets:
        return Targets("pose", pos=state.ee_pos * 1.0, rot=state.ee_rot * 1.0)

    @abc.abstractmethod
    def pose_map(self, state: ArmState) -> tuple[np.ndarray, np.ndarray, np.ndarray, float,
                                                 bool, np.ndarray]:
        """The mapping as the compiled path takes it (``fused_compiled.pose_act``), numpy
        float64: (pos_base (B, 3), pos_scale (3,), rot_base (B', 3, 3), rot_scale, rotation,
        box (2, 3)) with p = clip(pos_base + pos_scale * a[:3], box[0], box[1]) and
        R = exp(rot_scale a[3:6]) rot_base (B and B' each 1 or E; an axis without a box is
        -inf .. inf)."""


class EEDelta(PoseTargets):
    """p_target = clip(p + pos_scale * a[:3], box_lo, box_hi);
    R_target = exp(rot_scale * a[3:6]) R."""

    def __init__(self, cfg: EEDeltaConfig, robot: RobotSpec):
        super().__init__(robot, cfg.gripper, cfg.rotation)
        if cfg.pos_scale <= 0 or cfg.rot_scale <= 0:
            raise ConfigError("ee_delta pos_scale and rot_scale must be positive")
        self.pos_scale, self.rot_scale = cfg.pos_scale, cfg.rot_scale
        self._pos_scale3 = np.full(3, float(cfg.pos_scale))
        self.box = target_box(cfg.box_lo, cfg.box_hi)
        self._boxed = bool(np.isfinite(self.box).any())

    def _constants(self) -> dict[str, np.ndarray]:
        return {**super()._constants(), "box_lo": self.box[0], "box_hi": self.box[1]}

    def _arm(self, action: Array, state: ArmState) -> Targets:
        pos = state.ee_pos + self.pos_scale * action[:, :3]
        if self._boxed:
            k = self._k(pos)
            pos = clip(pos, lo=k["box_lo"], hi=k["box_hi"])
        if self.rotation:
            rot = axis_angle_to_mat(self.rot_scale * action[:, 3:6]) @ state.ee_rot
        else:
            rot = namespace(pos).broadcast_to(self._k(pos)["home_rot"], state.ee_rot.shape)
        return Targets("pose", pos=pos, rot=rot)

    def pose_map(self, state: ArmState) -> tuple[np.ndarray, np.ndarray, np.ndarray, float,
                                                 bool, np.ndarray]:
        rot = state.ee_rot if self.rotation else self._home_rot[None]
        return (state.ee_pos, self._pos_scale3, rot, float(self.rot_scale), self.rotation,
                self.box)


class EEPose(PoseTargets):
    """p_target = lo + (a + 1) / 2 (hi - lo); R_target = exp(max_angle * a[3:6]) R_home."""

    def __init__(self, cfg: EEPoseConfig, robot: RobotSpec):
        super().__init__(robot, cfg.gripper, cfg.rotation)
        lo, hi = np.asarray(cfg.lo, dtype=np.float64), np.asarray(cfg.hi, dtype=np.float64)
        if np.any(lo >= hi) or cfg.max_angle <= 0:
            raise ConfigError("ee_pose needs lo < hi on every axis and a positive max_angle")
        self._mid, self._half = (hi + lo) / 2, (hi - lo) / 2
        self.max_angle = cfg.max_angle

    def _constants(self) -> dict[str, np.ndarray]:
        return {**super()._constants(), "mid": self._mid, "half": self._half}

    def _arm(self, action: Array, state: ArmState) -> Targets:
        k = self._k(action)
        pos = k["mid"] + k["half"] * action[:, :3]
        home = k["home_rot"]
        if self.rotation:
            rot = axis_angle_to_mat(self.max_angle * action[:, 3:6]) @ home
        else:
            rot = namespace(pos).broadcast_to(home, (pos.shape[0], 3, 3))
        return Targets("pose", pos=pos, rot=rot)

    def pose_map(self, state: ArmState) -> tuple[np.ndarray, np.ndarray, np.ndarray, float,
                                                 bool, np.ndarray]:
        return (self._mid[None], self._half, self._home_rot[None], float(self.max_angle),
                self.rotation, _NO_BOX)


class JointTorque(ActionSpace):
    """Torque = the actuator's control range, scaled linearly from [-1, 1]."""

    kind: TargetKind = "torque"

    def __init__(self, cfg: JointTorqueConfig, robot: RobotSpec):
        super().__init__(robot, cfg.gripper, robot.num_joints)
        self._mid = np.zeros(robot.num_joints)
        self._half = np.asarray(robot.tau_max, dtype=np.float64)

    def bind(self, model: mujoco.MjModel) -> None:
        super().bind(model)
        ids = [model.actuator(n).id for n in self.robot.actuator_names]
        lo, hi = model.actuator_ctrlrange[ids].T
        self._mid, self._half = (hi + lo) / 2, (hi - lo) / 2

    def _constants(self) -> dict[str, np.ndarray]:
        return {**super()._constants(), "mid": self._mid, "half": self._half}

    def _arm(self, action: Array, state: ArmState) -> Targets:
        k = self._k(action)
        return Targets("torque", joint=k["mid"] + k["half"] * action)

    def _hold(self, state: ArmState) -> Targets:
        # The arm's own joint damping brings it to rest (gravity is compensated in the model).
        return Targets("torque", joint=-self._k(state.qd)["kd"] * state.qd)


def make_action_space(cfg: ActionConfig, robot: RobotSpec, control_dt: float) -> ActionSpace:
    """The action space of a config, for a robot controlled every ``control_dt`` seconds."""
    if isinstance(cfg, JointDeltaConfig):
        return JointDelta(cfg, robot)
    if isinstance(cfg, JointVelocityConfig):
        return JointVelocity(cfg, robot, control_dt)
    if isinstance(cfg, EEDeltaConfig):
        return EEDelta(cfg, robot)
    if isinstance(cfg, EEPoseConfig):
        return EEPose(cfg, robot)
    if isinstance(cfg, JointTorqueConfig):
        return JointTorque(cfg, robot)
    raise ConfigError(f"unknown action space config {type(cfg).__name__}")
