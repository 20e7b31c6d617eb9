"""ActionPipeline: the one control path from policy actions to joint commands.

The batched env (training) and the deploy runtime (the robot) both act through one
``ActionPipeline``, built by ``make_action_pipeline`` from the task config, the robot spec and
the compiled model; nothing about acting is written twice. Its stages:

    act(action, prev, arm, hold)                                  once per control step
        action (E, A) -> shield.filter_action     NaN guard, bounds, rate limit
                      -> action space, or its hold where ``hold`` / NaN
                      -> differential IK (pose targets on a joint servo: joint targets)
                      -> motion profile (joint targets, where enabled: controllers.motion)
                      -> shield.filter_targets    workspace, joint limits, speed, torque, floor
        -> ControlStep(action, targets, invalid, held, flags)
    command(targets, arm, interface, phase)                       at the command rate
        joint targets (ramped over the period with ``MotionConfig.ramp``: ``Targets.at``):
            position -> the targets; velocity -> velocity_servo; effort -> pd_effort, the
            joint PD law on the host (controllers.servo)
        torque controllers: effort -> controller.torque -> shield.filter_torque
        -> ((E, n) joint command, flags)
    hold_command(interface, q_hold, arm)                          the hold law

Every stage returns the shield's per-layer intervention flags ``{layer: (E,) bool}``. Arrays
are torch (the env, batched) or numpy (the runtime, E = 1), one kind per call.

    pipeline = make_action_pipeline(task_cfg, robot)
    pipeline.configure(spec)            # in-model controllers rewrite the actuators
    model = spec.compile(); pipeline.bind(model)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import mujoco
import numpy as np

from robot_rl.controllers import fused_compiled
from robot_rl.controllers.action_spaces import ActionSpace, PoseTargets, Targets, make_action_space
from robot_rl.controllers.arm_state import ArmState
from robot_rl.controllers.base import Controller, DirectTorque
from robot_rl.controllers.compiled import arg, is_f64
from robot_rl.controllers.configs import ActionConfig, ControllerConfig, MotionConfig, ShieldConfig
from robot_rl.controllers.diff_ik import DiffIK
from robot_rl.controllers.factory import make_controller
from robot_rl.controllers.motion import MotionProfile
from robot_rl.controllers.servo import (
    COMMAND_INTERFACES,
    CommandInterface,
    hold_command,
    pd_effort,
    velocity_servo,
)
from robot_rl.controllers.shield import Flags, JointTrack, SafetyShield
from robot_rl.controllers.xp import Array, flatnonzero, namespace
from robot_rl.errors import ConfigError

if TYPE_CHECKING:
    from robot_rl.robots import RobotSpec


class _Workspace(Protocol):
    @property
    def workspace_lo(self) -> Sequence[float]: ...

    @property
    def workspace_hi(self) -> Sequence[float]: ...


class ControlSource(Protocol):
    """What the pipeline is built from: the fields of a task config that say how to act."""

    action: ActionConfig
    controller: ControllerConfig | None
    shield: ShieldConfig
    motion: MotionConfig
    decimation: int

    @property
    def control_dt(self) -> float: ...

    @property
    def safety(self) -> _Workspace: ...


@dataclasses.dataclass
class ControlStep:
    """What ``ActionPipeline.act`` returns for E robots."""

    action: Array
    """(E, A) the applied action: NaN-guarded (held rows keep ``prev``), bounded, rate-limited."""
    targets: Targets
    """Controller targets after the shield's target layers."""
    invalid: Array
    """(E,) bool: the action had NaN/inf entries."""
    held: Array
    """(E,) bool: the robot holds this step (invalid, or asked to)."""
    flags: Flags
    """{layer: (E,) bool} the shield layers that intervened (action and target layers)."""


class ActionPipeline:
    """Action space, controller and shield of one task on one robot (module docstring)."""

    def __init__(self, action_space: ActionSpace, controller: Controller, shield: SafetyShield,
                 motion: MotionProfile | None = None):
        self.action_space = action_space
        self.controller = controller
        self.shield = shield
        self.motion = motion
        """The joint targets' motion profile (None: targets go to the shield as made)."""
        self.robot = action_space.robot
        self.dim = action_space.dim
        """Action dimension A."""
        self._track: JointTrack | None = None
        """The joint command trajectory the shield continues (joint targets)."""
        self.fused = True
        """Pose targets on a torque controller, numpy, shield compiled: ``act`` and
        ``command`` each run as one compiled call (``fused_compiled``); False: the compiled
        layers one call at a time (the same results within 1e-9)."""

    # -- set-up ----------------------------------------------------------------------------

    def configure(self, spec: mujoco.MjSpec) -> None:
        """Let the controller re-express the robot's actuators before the scene compiles."""
        self.controller.configure(spec)

    def bind(self, model: mujoco.MjModel) -> None:
        """Read what the action space and the controller need from the compiled model."""
        self.action_space.bind(model)
        self.controller.bind(model)
        self.shield.bind(model)

    @property
    def in_model(self) -> bool:
        """The control law runs inside the physics model (joint targets are the command)."""
        return self.controller.in_model

    @property
    def needs_mass(self) -> bool:
        """``command`` reads ``ArmState.mass`` and ``drift`` (torque controllers)."""
        return not self.controller.in_model

    @property
    def torque_loop(self) -> bool:
        """Torques are recomputed every ``substeps`` physics steps (a torque controller, or
        direct torques the shield's torque layers filter); False: the command is constant
        over a control period."""
        return not self.controller.in_model and (
            self.shield.cfg.enabled or not isinstance(self.controller, DirectTorque))

    @property
    def substeps(self) -> int:
        """Physics steps between two evaluations of a torque controller."""
        return self.controller.substeps

    @property
    def interfaces(self) -> tuple[CommandInterface, ...]:
        """The command interfaces this pipeline can drive."""
        return COMMAND_INTERFACES if self.controller.in_model else ("effort",)

    # -- stages ----------------------------------------------------------------------------

    def reset(self, ids: Array, q: Array) -> None:
        """Start the robots ``ids`` afresh at joint positions ``q`` (E, n): stateful action
        spaces forget their memory, the joint commands' speed restarts at rest."""
        self.action_space.reset(ids, q)
        if self.action_space.kind == "joint" or isinstance(self.controller, DiffIK):
            # joint targets, or pose targets the differential IK makes joint targets
            self._track_at(q).v[ids] = 0.0

    def _track_at(self, q: Array) -> JointTrack:
        """The trajectory state, (re)made at rest at ``q`` when it is not of ``q``'s kind and
        shape (one pipeline may serve a batched env and the deploy loop in turn)."""
        t = self._track
        if t is None or type(t.v) is not type(q) or t.v.shape != q.shape:
            t = self._track = JointTrack(v=q * 0.0)
        return t

    def act(self, action: Array, prev: Array, arm: ArmState, hold: Array | None = None
            ) -> ControlStep:
        """Actions (E, A) to shielded targets at the measured state; ``prev`` (E, A) is the
        last applied action (the rate limit's reference); ``hold`` (E,) bool, optional: those
        robots hold still instead of acting."""
        if self.fused:
            step = self._act_fused(action, prev, arm, hold)
            if step is not None:
                return step
        applied, invalid, flags = self.shield.filter_action(action, prev)
        held = invalid if hold is None else invalid | hold
        targets = self.action_space(applied, arm)
        if bool(held.any()):
            targets = targets.where(held, self.action_space.hold(arm, applied))
            self.action_space.reset(flatnonzero(held), arm.q)
        if isinstance(self.controller, DiffIK):  # pose targets become joint targets here
            targets = self.controller.joint_targets(targets, arm)
            if bool(held.any()):
                targets = targets.where(held, Targets("joint", joint=arm.q * 1.0))
        track = self._track_at(arm.q) if targets.kind == "joint" else None
        profiled = None
        if track is not None and self.motion is not None:
            k = self.shield.limits(arm.q)
            targets, profiled = self.motion(targets, arm.q, track.v, k["lag"], k["qd_lim"],
                                            held)
        # the shield bounds the command against the speed of the last one (track.v), and
        # leaves track.v at this command's speed; a disabled shield leaves it to the profile
        targets, target_flags = self.shield.filter_targets(targets, arm, track)
        if profiled is not None and track is not None and not self.shield.cfg.enabled:
            track.v = profiled
        if track is not None and self.shield.ramp > 0:
            # the ramp starts at the PD law's steady lead for the command's speed:
            # q + v lag = q + (q* - q) lag / (lag + ramp) = q + (q* - q) kp_t / kp
            k = self.shield.limits(arm.q)
            assert targets.joint is not None
            targets.start = arm.q + (targets.joint - arm.q) * (k["kp_t"] / k["kp"])
        flags.update(target_flags)
        return ControlStep(applied, targets, invalid, held, flags)

    def _act_fused(self, action: Array, prev: Array, arm: ArmState, hold: Array | None
                   ) -> ControlStep | None:
        """``act`` in one compiled call (``fused_compiled.pose_act``): pose targets for a
        torque controller, numpy throughout, the shield compiled; None where that does not
        apply."""
        space, shield = self.action_space, self.shield
        if not isinstance(space, PoseTargets) or isinstance(self.controller, DiffIK) \
                or not shield.cfg.enabled or not is_f64(arm.q) or not is_f64(arm.ee_rot):
            return None
        layers = shield.action_kernel_args(action, prev)
        if layers is None:
            return None
        assert shield.pose_packed is not None  # compiled (layers): bound
        E = arm.q.shape[0]
        held_in = np.zeros(E, dtype=np.bool_) if hold is None else arg(np.asarray(hold),
                                                                        np.bool_)
        pos_base, pos_scale, rot_base, rot_scale, rotation, box = space.pose_map(arm)
        applied, fl, pos, rot = fused_compiled.pose_act(
            *layers, held_in, arg(pos_base), arg(pos_scale), arg(rot_base), rot_scale,
            rotation, box, arg(arm.ee_pos), arg(arm.ee_rot), arg(arm.jac), arg(arm.qd),
            *shield.pose_packed)
        invalid = fl[:, 0]
        flags = shield.action_flags(invalid, fl[:, 1], fl[:, 2])
        flags.update(workspace=fl[:, 3], table_floor=fl[:, 4])
        held = invalid | held_in
        if bool(held.any()):
            space.reset(flatnonzero(held), arm.q)
        targets = Targets("pose", pos=pos, rot=rot, gripper=space.gripper(applied, arm))
        return ControlStep(applied, targets, invalid, held, flags)

    def command(self, targets: Targets, arm: ArmState, interface: CommandInterface,
                phase: float = 1.0) -> tuple[Array, Flags]:
        """((E, n) joint command for ``interface``, the torque layers' flags) at ``phase``
        (0 .. 1] of the control period (a ramped joint command moves with it:
        ``Targets.at``; held targets do not)."""
        targets = targets.at(phase)
        if interface not in self.interfaces:
            raise ConfigError(f"controller {type(self.controller).__name__} drives "
                              f"{' or '.join(self.interfaces)} interfaces, not {interface!r}")
        if not self.controller.in_model:
            if self.fused:
                out, flags = self.controller.shielded_torque(targets, arm, self.shield)
            else:
                out, flags = self.shield.filter_torque(self.controller.torque(targets, arm),
                                                       arm)
        else:
            q_target = targets.joint
            assert q_target is not None
            flags = {}
            if interface == "position":
                out = q_target
            else:
                k = self.shield.limits(q_target)
                out = velocity_servo(q_target, arm.q, k["kp"], k["kd"], k["qd_lim"]) \
                    if interface == "velocity" else \
                    pd_effort(q_target, arm.q, arm.qd, k["kp"], k["kd"], k["tau_lim"])
        return self._finite(out, arm, interface, flags)

    def _finite(self, command: Array, arm: ArmState, interface: CommandInterface,
                flags: Flags) -> tuple[Array, Flags]:
        """The last guard of the command path: a robot whose command has a NaN or inf
        anywhere (a controller's singular solve, a NaN that got past the action layers) gets
        the hold command at its measured position instead, flagged ``nan_guard``. (A reading
        that is itself not finite is the runtime's to drop; here its speed counts as zero,
        and a torque or velocity command from it is zero.)"""
        xp = namespace(command)
        bad = ~xp.isfinite(command).all(-1)
        if not bool(bad.any()):
            return command, flags
        zero = xp.zeros_like(arm.qd)
        qd = xp.where(xp.isfinite(arm.qd), arm.qd, zero)
        read = xp.isfinite(arm.q).all(-1)  # (E,) robots whose reading is finite
        q = arm.q if interface == "position" else xp.where(read[:, None], arm.q, zero)
        hold = self.hold_command(interface, q, q, qd)
        if interface != "position":  # no reading: no torque, no speed
            hold = xp.where(read[:, None], hold, zero)
        flags = dict(flags)
        flags["nan_guard"] = bad if "nan_guard" not in flags else flags["nan_guard"] | bad
        return xp.where(bad[:, None], hold, command), flags

    def hold_command(self, interface: CommandInterface, q_hold: Array, q: Array, qd: Array,
                     fresh: bool = True) -> Array:
        """(E, n) command keeping the arm at ``q_hold`` from the measured (q, qd) (E, n)
        (``controllers.servo.hold_command`` with the controller's gains and the shield's
        torque limit)."""
        k = self.shield.limits(q)
        return hold_command(interface, q_hold, q, qd, k["kp"], k["kd"], k["tau_lim"], fresh)


def make_action_pipeline(cfg: ControlSource, robot: RobotSpec) -> ActionPipeline:
    """The pipeline of a task config for ``robot`` (``configure`` and ``bind`` it to the
    scene next)."""
    space = make_action_space(cfg.action, robot, cfg.control_dt)
    controller = make_controller(cfg.controller, space, robot)
    if cfg.decimation % controller.substeps:
        raise ConfigError(f"decimation {cfg.decimation} must be a multiple of the "
                          f"controller's substeps {controller.substeps}")
    joint_targets = space.kind == "joint" or isinstance(controller, DiffIK)
    if cfg.motion.ramp and not joint_targets:
        raise ConfigError("motion.ramp ramps joint commands; the action space and controller "
                          f"({type(space).__name__}, {type(controller).__name__}) make none")
    shield = SafetyShield(cfg.shield, robot, cfg.safety.workspace_lo, cfg.safety.workspace_hi,
                          controller.kp, controller.kd, control_dt=cfg.control_dt,
                          ramp=cfg.control_dt if cfg.motion.ramp else 0.0)
    motion = MotionProfile(cfg.motion, cfg.shield.max_joint_accel, cfg.control_dt) \
        if cfg.motion.enabled else None
    return ActionPipeline(space, controller, shield, motion)
