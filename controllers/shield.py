"""SafetyShield: the last layer before the actuators, in simulation and on hardware alike.

Layers (``LAYERS``, the names of the flags):

    1 nan_guard       actions with NaN/inf -> that robot holds (see ``ActionSpace.hold``)
    2 action_bounds   actions clipped to [-1, 1]
    3 rate_limit      each action component changes by at most ``max_action_delta`` per tick
    4 workspace       the end effector is kept inside the workspace box shrunk by a margin
    5 joint_limits    joints are kept inside soft limits, with a braking margin growing with
                      the speed towards the limit
    6 joint_velocity  joint speeds are kept below ``velocity_fraction`` of the velocity limits,
                      and the speed asked of a joint changes by at most ``max_joint_accel``
    7 torque          joint torques (the actuators' gravity compensation included) are kept
                      below ``torque_fraction`` of the torque limits
    8 table_floor     every corner of the arm's collision geometry (``bind``; unbound: the end
                      effector) is kept above ``floor_height``

Layers 1-3 act on actions (``filter_action``, once per control tick). Layers 4-8 act on what
the controller tracks, in the form the controller takes:

* joint position targets (``filter_targets``, once per tick; differential IK turns pose
  targets into these too). Applied in the order 4, 5, 6, 7, 8, with 4 once more where 6
  would carry the end effector out. The target is moved so that the joint PD law, which
  runs at every physics step, settles inside the limits: the end-effector layer predicts the
  target's end-effector position to first order (p + J dq) and projects it back inside with
  damped least squares; the velocity layer treats the target as the PD law's steady speed
  v = kp/kd (q_target - q) and keeps v within the speed limit, the speed that still stops
  before the soft limits, and ``max_joint_accel`` of the last command's speed (a
  ``JointTrack`` per robot; it bounds how hard one joint's motion pulls on the others: a
  shoulder swung at full torque flings a wrist past what its own motor can hold); the torque
  layer bounds kp (q_target - q) - kd qd; the floor layer predicts every guard point's height
  the same way and lifts the one short by most with the joints still free to move, a few
  passes, inside the soft limits.
* pose targets for a torque controller (``filter_targets``): the position target is clipped
  into the shrunk box, and raised so the hand's lowest corner clears the floor.
* joint torques (``filter_torque``, at the torque controller's rate): the acceleration that
  the torque would cause (M^-1 tau, or J M^-1 tau for the end effector) is bounded so that
  the velocity towards any limit decays within ``brake_time`` to the speed from which
  ``brake_accel`` still stops before it, within ``max_joint_accel``, and the torque is
  corrected by that acceleration change (M dqdd, or J^T Lambda dxdd), alternating with the
  torque limits a few passes. Then torques are clipped. (This path does not yet hold the
  hard joint limits against every attack of ``robot_rl.bench.shield_attacks``; see
  docs/control.md.)

Every method returns per-robot flags ``{layer: (E,) bool}``: whether the layer changed
anything. Limits come from the RobotSpec and the task's workspace, with the margins of
``ShieldConfig``; inconsistent settings fail at construction, naming the joint.
The math is array-agnostic: batched torch while training, one numpy sample on the robot.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

import mujoco
import numpy as np

from robot_rl.controllers import (
    actions_compiled,
    joint_targets_compiled,
    shield_compiled,
    targets_compiled,
)
from robot_rl.controllers.action_spaces import Targets
from robot_rl.controllers.arm_model import guard_points, home_data
from robot_rl.controllers.arm_state import ArmState
from robot_rl.controllers.compiled import arg, is_f64
from robot_rl.controllers.configs import ShieldConfig
from robot_rl.controllers.ik import dls_joint_delta
from robot_rl.controllers.xp import (
    Array,
    Constants,
    amax,
    amin,
    clip,
    cumsum,
    index_like,
    matvec,
    mT,
    namespace,
    row_index,
    solve,
)
from robot_rl.errors import ConfigError

if TYPE_CHECKING:
    from robot_rl.robots import RobotSpec

@dataclasses.dataclass
class JointTrack:
    """What the shield's joint-target layers remember of E robots from one control step to
    the next: the speed the last command asked the joint PD law for."""

    v: Array
    """(E, n) kp/kd (q_target - q) of the last command [rad/s]."""


LAYERS = ("nan_guard", "action_bounds", "rate_limit", "workspace", "joint_limits",
          "joint_velocity", "torque", "table_floor")
"""Shield layers in the order they are applied."""
MOTION_LAYERS = LAYERS[3:]
"""The layers that reshape the arm's motion (the first three check the action itself: a
stochastic policy's exploration noise sets off the rate limit on its own)."""

Flags = dict[str, Array]

_A = np.ndarray
KernelConstants = tuple[_A, _A, _A, _A, _A]
"""A shield kernel's constants after the state: (guard_link (K,), guard_pts (K, 3, 1),
guard_mask (K, n), limits, scalars)."""
PoseConstants = tuple[_A, _A, _A]
"""The pose-target layer's constants after the state: (box (2, 3), hand (H, 3), scalars)."""
TorqueKernelArgs = tuple[_A, _A, _A, _A, _A, _A, _A, _A, _A, _A, _A, _A, _A, _A, int, float]
"""The torque layer's inputs after tau and without M^-1 (``SafetyShield.torque_kernel_args``)."""


def motion_acted(flags: Flags, none: Array) -> Array:
    """(E,) whether a layer of ``MOTION_LAYERS`` acted, from a step's flags (layers absent
    from ``flags`` did not run); ``none`` (E,) is the all-False flag to start from. The
    ``shield`` reward term's flag, in the env and in the deploy runtime alike."""
    acted = none
    for name in MOTION_LAYERS:
        if name in flags:
            acted = acted | flags[name]
    return acted

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
"""The dtypes the compiled action layers take (numpy; their own precision)."""


@dataclasses.dataclass
class _Guard:
    """The guard points of E arms at one state: K corners of the collision geometry.

    A point at r from the end effector on link k moves at v + w x r through the joints up to
    k, so its height's Jacobian row is (J_z + r_y J_wx - r_x J_wy) with the columns of the
    joints after k zeroed. ``dot`` applies all K rows at once through running sums over the
    joints, O(E (n + K)) instead of building the (E, K, n) rows."""

    z: Array
    """(E, K) heights [m]."""
    rx: Array
    """(E, K) x offsets from the end effector [m]."""
    ry: Array
    """(E, K) y offsets from the end effector [m]."""
    link: Array
    """(K,) the link (arm joint index) each point is on."""
    jac: Array
    """(E, 6, n) the end-effector Jacobian."""
    mask: Array
    """(K, n) 1 for the joints that move each point."""

    def dot(self, v: Array) -> Array:
        """(E, K) each point's vertical speed for joint rates ``v`` (E, n)."""
        # rows z, wx, wy of the Jacobian summed over the joints up to each point's link
        s = cumsum(self.jac[:, 2:5] * v[:, None], -1)[:, :, self.link]  # (E, 3, K)
        return s[:, 0] + self.ry * s[:, 1] - self.rx * s[:, 2]

    def row(self, k: Array) -> Array:
        """(E, n) the Jacobian row of point ``k[e]`` of each arm e."""
        rows = row_index(self.z)
        jac = self.jac
        ry, rx = self.ry[rows, k][:, None], self.rx[rows, k][:, None]
        return (jac[:, 2] + ry * jac[:, 3] - rx * jac[:, 4]) * self.mask[k]


class SafetyShield:
    """The layered shield of one robot model (see module docstring)."""

    def __init__(self, cfg: ShieldConfig, robot: RobotSpec, workspace_lo: Sequence[float],
                 workspace_hi: Sequence[float], kp: np.ndarray, kd: np.ndarray,
                 control_dt: float = 0.02, ramp: float = 0.0):
        self.cfg = cfg
        self.robot = robot
        n = robot.num_joints
        q_min, q_max = np.asarray(robot.q_min), np.asarray(robot.q_max)
        soft_lo = q_min + cfg.joint_margin if cfg.q_soft_min is None else np.asarray(
            cfg.q_soft_min, dtype=np.float64)
        soft_hi = q_max - cfg.joint_margin if cfg.q_soft_max is None else np.asarray(
            cfg.q_soft_max, dtype=np.float64)
        for name, arr in (("q_soft_min", soft_lo), ("q_soft_max", soft_hi)):
            if arr.shape != (n,):
                raise ConfigError(f"shield {name} has {arr.size} entries, expected {n} "
                                  f"(one per joint of robot {robot.name!r})")
        for j, name in enumerate(robot.joint_names):
            if not q_min[j] <= soft_lo[j] < soft_hi[j] <= q_max[j]:
                raise ConfigError(
                    f"shield: soft limits [{soft_lo[j]:.4g}, {soft_hi[j]:.4g}] of joint "
                    f"{name!r} must lie inside its hard limits [{q_min[j]:.4g}, {q_max[j]:.4g}] "
                    f"and be ordered")
        if not 0 < cfg.velocity_fraction <= 1 or not 0 < cfg.torque_fraction <= 1:
            raise ConfigError("shield velocity_fraction and torque_fraction must be in (0, 1]")
        if min(cfg.brake_accel, cfg.brake_accel_ee, cfg.brake_time, cfg.max_joint_accel) <= 0:
            raise ConfigError("shield brake_accel, brake_accel_ee, brake_time and "
                              "max_joint_accel must be > 0")
        if control_dt <= 0:
            raise ConfigError(f"shield control_dt must be > 0, got {control_dt}")
        if ramp < 0:
            raise ConfigError(f"shield ramp must be >= 0, got {ramp}")
        self.ramp = float(ramp)
        """Seconds over which each joint command is ramped in from the PD law's steady lead
        (``MotionConfig.ramp``: the control period; 0: held). A PD law (kp, kd) tracking a
        ramp that ends at q* after ``ramp`` seconds acts at the step's start as the law
        (kp_t, kd) with kp_t = kd / (kd / kp + ramp) holding q*, and moves the joint at its
        steady speed (q* - q) / (kd / kp + ramp); the joint-target layers model the command
        that way (``kp_t``, ``lag`` = kd / kp_t)."""
        self.dt = float(control_dt)
        """Seconds between two target updates (the control period)."""
        if cfg.max_action_delta is not None and cfg.max_action_delta <= 0:
            raise ConfigError("shield max_action_delta must be positive (or None)")
        lo = np.asarray(workspace_lo, dtype=np.float64) + cfg.workspace_margin
        hi = np.asarray(workspace_hi, dtype=np.float64) - cfg.workspace_margin
        if np.any(lo >= hi):
            raise ConfigError("shield: the workspace box minus workspace_margin is empty")
        if cfg.floor_height >= hi[2]:
            raise ConfigError("shield floor_height is above the workspace box")
        kp_t = np.asarray(kp, dtype=np.float64)
        if self.ramp > 0:
            kd64 = np.asarray(kd, dtype=np.float64)
            kp_t = kd64 / (kd64 / kp_t + self.ramp)
        self._limits = dict(
            soft_lo=soft_lo, soft_hi=soft_hi,
            qd_lim=cfg.velocity_fraction * np.asarray(robot.qd_max, dtype=np.float64),
            tau_lim=cfg.torque_fraction * np.asarray(robot.tau_max, dtype=np.float64),
            ws_lo=lo, ws_hi=hi, kp=kp, kd=kd, kp_t=kp_t,
            lag=np.asarray(kd, dtype=np.float64) / kp_t,
            hand=np.zeros((1, 3)),
            guard_mask=np.ones((1, n)),
        )
        self._guard_link: np.ndarray | None = None
        """(K,) the arm link each guard point is on (``bind``); None: only the end effector."""
        self._c = Constants(**self._limits)
        """The shield's limits as arrays of the caller's kind (``self._c(x)["qd_lim"]``)."""
        self.qd_limit = self._c.numpy("qd_lim")
        """(n,) joint speed limit of the velocity layer [rad/s]."""
        self.tau_limit = self._c.numpy("tau_lim")
        """(n,) joint torque limit of the torque layer [Nm]."""
        self._lag = float(self._c.numpy("lag").max())
        """The slowest joint's PD time constant kd/kp, for end-effector stopping distances."""
        self.compiled = False
        """The action, joint-target, pose-target and torque layers run compiled
        (``actions_compiled``, ``joint_targets_compiled``, ``targets_compiled``,
        ``shield_compiled``) for numpy inputs (float64; the action layers also float32), from
        ``bind`` on (False: always the array versions, the reference)."""
        self._packed: KernelConstants | None = None
        """The torque layer's constants as ``shield_compiled`` takes them (``bind``)."""
        self._no_rows = np.zeros((0, robot.num_joints))
        """(0, n): what the torque layer takes for a state without drift or gravity."""
        self.pose_packed: PoseConstants | None = None
        """The pose-target layer's constants, as ``targets_compiled.pose_targets`` takes
        them after the state: (box (2, 3), hand (H, 3), scalars) (``bind``)."""
        self._joint_packed: KernelConstants | None = None
        """The joint-target layers', as ``joint_targets_compiled.joint_targets`` takes them
        (``bind``)."""

    def bind(self, model: mujoco.MjModel) -> None:
        """Read the arm's collision geometry from the compiled model: the floor layer keeps
        its lowest point (not only the end-effector site) above the table
        (``arm_model.guard_points``)."""
        r = self.robot
        pts, link = guard_points(model, r, self.cfg.floor_height)
        n = r.num_joints
        self._guard_link = link
        self._limits["guard_pts"] = pts[:, :, None]  # (K, 3, 1), each in its link's frame
        self._limits["guard_mask"] = (np.arange(n)[None, :] <= link[:, None]).astype(float)
        # the last link's points in the end-effector frame, for pose targets
        data = home_data(model, r)
        b, site = int(model.joint(r.joint_names[-1]).bodyid[0]), model.site(r.ee_site).id
        rot_b, rot_s = data.xmat[b].reshape(3, 3), data.site_xmat[site].reshape(3, 3)
        world = data.xpos[b] + pts[link == n - 1] @ rot_b.T
        hand = (world - data.site_xpos[site]) @ rot_s
        self._limits["hand"] = hand if len(hand) else np.zeros((1, 3))
        self._c = Constants(**self._limits)
        lim = self._limits
        pad = np.zeros((2, n))
        pad[0, :3], pad[1, :3] = lim["ws_lo"], lim["ws_hi"]
        joints = [lim[k] for k in ("soft_lo", "soft_hi", "qd_lim", "tau_lim")]
        gains = [np.broadcast_to(lim[k], (n,)) for k in ("kp_t", "kd")]
        guard = (np.ascontiguousarray(link, dtype=np.int64),
                 np.ascontiguousarray(pts, dtype=np.float64),
                 np.ascontiguousarray(lim["guard_mask"], dtype=np.float64))
        self._packed = (
            *guard, np.concatenate([np.stack(joints), pad]).astype(np.float64),
            np.array([self.cfg.floor_height, self.cfg.brake_accel_ee, self.cfg.brake_accel,
                      self.cfg.brake_time, self.cfg.max_joint_accel], dtype=np.float64))
        self.pose_packed = (np.stack([lim["ws_lo"], lim["ws_hi"]]), arg(lim["hand"]),
                             np.array([self.cfg.floor_height, self.cfg.brake_accel_ee]))
        self._joint_packed = (
            *guard, np.concatenate([np.stack(joints + gains), pad]).astype(np.float64),
            np.array([self.cfg.floor_height, self.cfg.brake_accel_ee, self.cfg.brake_accel,
                      self.cfg.max_joint_accel, self.dt, self._lag], dtype=np.float64))
        self.compiled = True
        links = int(link.max()) + 1 if len(link) else 1
        shield_compiled.warm_up(n, len(link), links)
        joint_targets_compiled.warm_up(n, len(link), links)
        targets_compiled.warm_up()
        actions_compiled.warm_up()

    def limits(self, x: Array) -> dict[str, Array]:
        """The shield's limits and the law's gains as arrays like ``x`` (cached per kind):
        ``soft_lo``, ``soft_hi``, ``qd_lim``, ``tau_lim``, ``ws_lo``, ``ws_hi``, ``kp``,
        ``kd`` (the law's), ``kp_t`` and ``lag`` = kd / kp_t (the law as the joint-target
        layers and the motion profile model a command: kp without a ramp)."""
        return self._c(x)

    # -- layers 1-3: actions ---------------------------------------------------------------

    def filter_action(self, action: Array, prev: Array) -> tuple[Array, Array, Flags]:
        """(action, hold, flags): finite, bounded, rate-limited actions (E, A); ``hold`` (E,)
        marks robots whose action had NaN/inf (their returned row is ``prev``)."""
        args = self.action_kernel_args(action, prev)
        if args is None:
            return self.filter_action_reference(action, prev)
        out, hold, bounds, limited = actions_compiled.filter_action(*args)
        return out, hold, self.action_flags(hold, bounds, limited)

    def action_kernel_args(self, action: Array, prev: Array
                           ) -> tuple[np.ndarray, np.ndarray, float] | None:
        """(action, prev, max_delta) as ``actions_compiled.filter_action`` takes them, or None
        where the compiled path does not apply (not compiled, torch, another dtype)."""
        dtype = getattr(action, "dtype", None)
        if not (self.compiled and dtype in _FLOATS and isinstance(action, np.ndarray)
                and isinstance(prev, np.ndarray) and prev.dtype == dtype):
            return None
        t = dtype.type
        delta = t(self.cfg.max_action_delta) if self.rate_limited else t(-1.0)
        return arg(action, t), arg(prev, t), delta

    @property
    def rate_limited(self) -> bool:
        """Layer 3 runs: the shield is on and has a rate limit."""
        return self.cfg.enabled and self.cfg.max_action_delta is not None

    def action_flags(self, hold: Array, bounds: Array, limited: Array) -> Flags:
        """The action layers' flags from the compiled layers' outputs."""
        flags = {"nan_guard": hold, "action_bounds": bounds}
        if self.rate_limited:
            flags["rate_limit"] = limited
        return flags

    def filter_action_reference(self, action: Array, prev: Array
                                ) -> tuple[Array, Array, Flags]:
        """``filter_action`` as array operations (the reference; the torch path)."""
        xp = namespace(action)
        finite = xp.isfinite(action)
        if bool(finite.all()):
            hold = finite[:, 0] & False
        else:
            hold = ~finite.all(-1)
            action = xp.where(hold[:, None], prev, action)
        bounded = clip(action, lo=-1.0, hi=1.0)
        flags = {"nan_guard": hold, "action_bounds": (bounded != action).any(-1)}
        action = bounded
        d = self.cfg.max_action_delta
        if self.cfg.enabled and d is not None:
            limited = clip(action, lo=prev - d, hi=prev + d)
            flags["rate_limit"] = (limited != action).any(-1)
            action = limited
        return action, hold, flags

    # -- layers 4-8: targets ---------------------------------------------------------------

    def filter_targets(self, t: Targets, s: ArmState, track: JointTrack | None = None
                       ) -> tuple[Targets, Flags]:
        """Targets moved inside the limits (joint or pose targets; torques pass through).

        ``track``: the joint command trajectory of these robots (joint targets), continued
        from its last command within the speed, acceleration and braking limits and updated
        in place to the command returned; None: no trajectory (a single, memoryless call).
        """
        if not self.cfg.enabled or t.kind == "torque":
            return t, {}
        if t.kind == "pose":
            return self._pose_targets(t, s)
        return self._joint_targets(t, s, track)

    def _ee_box(self, s: ArmState, c: dict[str, Array], lag: float) -> tuple[Array, Array]:
        """(E, 3) bounds for the end effector, shrunk by its stopping distance: ``lag``
        seconds at the current speed plus braking at ``brake_accel_ee``. The lower z face is
        the floor layer's (``_floor``)."""
        v = s.ee_vel
        up, down = clip(v, lo=0.0), clip((-v), lo=0.0)
        a2 = 2.0 * self.cfg.brake_accel_ee
        hi = c["ws_hi"] - up * lag - up * up / a2
        lo = c["ws_lo"] + down * lag + down * down / a2
        hi = clip(hi, lo=c["ws_lo"])
        lo = clip(lo, hi=hi)
        lo[:, 2] = -1e6
        return lo, hi

    def _floor(self, vz: Array, lag: float) -> Array:
        """(E,) lowest height of the hand, raised by its stopping distance when going down at
        ``vz`` (E,)."""
        down = clip(-vz, lo=0.0)
        return self.cfg.floor_height + down * lag + down * down / (2.0 * self.cfg.brake_accel_ee)

    @staticmethod
    def _torque_band(s: ArmState, c: dict[str, Array]) -> tuple[Array, Array]:
        """(E, n) bounds of the command torque: the torque limit less the actuator-side
        gravity compensation, which the actuators add and which counts against their
        limits (a command that ignores it is clipped by the actuator and the arm sags)."""
        if s.gravity is None:
            return -c["tau_lim"], c["tau_lim"]
        return -c["tau_lim"] - s.gravity, c["tau_lim"] - s.gravity

    def _guard(self, s: ArmState, c: dict[str, Array]) -> _Guard:
        """The arm's guard points (``bind``) at state ``s``; unbound, or without link poses:
        the end effector alone."""
        jac = s.jac
        if self._guard_link is None or s.link_pos is None or s.link_rot is None:
            zero = s.ee_pos[:, 2:3] * 0.0
            return _Guard(s.ee_pos[:, 2:3], zero, zero, index_like(s.q, np.array([0])), jac,
                          c["guard_mask"][:1] * 0.0 + 1.0)
        link = index_like(s.q, self._guard_link)
        world = s.link_pos[:, link] + (s.link_rot[:, link] @ c["guard_pts"])[..., 0]  # (E, K, 3)
        r = world - s.ee_pos[:, None, :]
        return _Guard(world[..., 2], r[..., 0], r[..., 1], link, jac, c["guard_mask"])

    def _joint_targets(self, t: Targets, s: ArmState, track: JointTrack | None
                       ) -> tuple[Targets, Flags]:
        if self.compiled and is_f64(t.joint) and is_f64(s.q) and s.link_pos is not None \
                and s.link_rot is not None and (track is None or is_f64(track.v)):
            return self._joint_targets_compiled(t, s, track)
        return self._joint_targets_reference(t, s, track)

    def _joint_targets_compiled(self, t: Targets, s: ArmState, track: JointTrack | None
                                ) -> tuple[Targets, Flags]:
        """``_joint_targets`` in one compiled call (``joint_targets_compiled``)."""
        c = arg
        assert t.joint is not None and s.link_pos is not None and s.link_rot is not None
        assert self._joint_packed is not None  # compiled: bound
        n = s.q.shape[-1]
        none = np.zeros((0, n))
        qt, v, fl = joint_targets_compiled.joint_targets(
            c(t.joint), c(s.q), c(s.qd), c(s.ee_pos), c(s.jac),
            none if s.gravity is None else c(s.gravity), c(s.link_pos), c(s.link_rot),
            none if track is None else c(track.v), *self._joint_packed, self.FLOOR_PASSES)
        if track is not None:
            track.v = v
        flags = {name: fl[:, i] for i, name in enumerate(joint_targets_compiled.FLAG_NAMES)}
        return Targets("joint", joint=qt, gripper=t.gripper), flags

    def _joint_targets_reference(self, t: Targets, s: ArmState, track: JointTrack | None
                                 ) -> tuple[Targets, Flags]:
        """``_joint_targets`` as array operations (numpy or torch): the reference the
        compiled version is tested against, and the path for torch tensors."""
        xp = namespace(s.q)
        c = self._c(s.q)
        q, qd, qt = s.q, s.qd, t.joint
        assert qt is not None
        lag = self._lag
        jp = s.jac[:, :3]
        flags: Flags = {}
        # 4: end-effector position the target leads to, projected back into the box.
        pred = s.ee_pos + matvec(jp, qt - q)
        inside, out = _clip(pred, *self._ee_box(s, c, lag))
        if bool(out.any()):
            qt = xp.where(out[:, None], qt + dls_joint_delta(jp, inside - pred), qt)
        flags["workspace"] = out
        # 5: soft limits, moved in by the distance the joint needs to stop.
        up, down = clip(qd, lo=0.0), clip((-qd), lo=0.0)
        a2 = 2.0 * self.cfg.brake_accel
        hi = clip((c["soft_hi"] - up * c["lag"] - up * up / a2), lo=c["soft_lo"])
        lo = clip((c["soft_lo"] + down * c["lag"] + down * down / a2), hi=hi)
        qt, flags["joint_limits"] = _clip(qt, lo, hi)
        # 6: the command continues its trajectory within the speed and acceleration limits,
        # stopping before the soft limits; the PD law's steady speed kp/kd |q_target - q|
        # stays below the velocity limit.
        moved = flags["joint_limits"] & False
        if track is not None:
            want = qt
            qt, moved, braked = self._trajectory(want, q, track, c)
            # Where the acceleration limit would carry the end effector out of the box (the
            # command overshooting the target layer 4 moved inside), the box wins.
            box = self._ee_box(s, c, lag)
            _, over = _clip(s.ee_pos + matvec(jp, qt - q), *box)
            if bool(over.any()):
                stop, _, _ = self._trajectory(want, q, track, c, accel=False)
                qt = xp.where(over[:, None], stop, qt)
            flags["joint_limits"] = flags["joint_limits"] | braked
        lead = c["qd_lim"] * c["lag"]
        qt, led = _clip(qt, q - lead, q + lead)
        flags["joint_velocity"] = moved | led
        # 7: the PD torque at this state within the torque limit.
        tau_lo, tau_hi = self._torque_band(s, c)
        tau = c["kp_t"] * (qt - q) - c["kd"] * qd
        tau_c, flags["torque"] = _clip(tau, tau_lo, tau_hi)
        qt = xp.where(flags["torque"][:, None], q + (tau_c + c["kd"] * qd) / c["kp_t"], qt)
        # 8, and 4 again: the predicted height of every guard point of the arm above the
        # floor (moved up by its stopping distance) and the end effector inside the box, a
        # few passes: the point short by most is raised, the end effector moved back, by the
        # joints still free to move that way; each pass ends inside the soft limits and the
        # speed and torque limits (a joint a fix takes to its limit leaves the rest to the
        # others).
        g = self._guard(s, c)
        floor = self._floor(g.dot(qd), lag)  # (E, K)
        flags["table_floor"] = (floor - g.z - g.dot(qt - q) > 0).any(-1)
        box = self._ee_box(s, c, lag)
        # the targets layers 5-7 allow: soft limits, the speed's lead, the torque limit; first
        # also the acceleration limit, which gives way if the passes need more
        band_lo = clip(clip(q - lead, lo=c["soft_lo"]),
                       lo=q + (tau_lo + c["kd"] * qd) / c["kp_t"])
        band_hi = clip(clip(q + lead, hi=c["soft_hi"]),
                       hi=q + (tau_hi + c["kd"] * qd) / c["kp_t"])
        bands = [(band_lo, band_hi)]
        if track is not None:
            am_dt = self.cfg.max_joint_accel * self.dt * c["lag"]
            acc_lo = clip(clip(q + track.v * c["lag"] - am_dt, lo=band_lo), hi=band_hi)
            acc_hi = clip(clip(q + track.v * c["lag"] + am_dt, hi=band_hi), lo=acc_lo)
            bands.insert(0, (acc_lo, acc_hi))
        for lo_b, hi_b in bands:
            qt, done = self._ee_passes(qt, s, jp, g, floor, box, lo_b, hi_b, flags)
            if done:
                break
        if track is not None:
            track.v = (qt - q) / c["lag"]
        return Targets("joint", joint=qt, gripper=t.gripper), flags

    def _ee_passes(self, qt: Array, s: ArmState, jp: Array, g: _Guard, floor: Array,
                   box: tuple[Array, Array], lo_b: Array, hi_b: Array, flags: Flags
                   ) -> tuple[Array, bool]:
        """Layers 8 and 4 on the command (see ``_joint_targets``), within [lo_b, hi_b];
        returns (command, whether both hold)."""
        xp = namespace(qt)
        q = s.q
        rows = row_index(g.z)
        for _ in range(self.FLOOR_PASSES):
            short = floor - g.z - g.dot(qt - q)  # (E, K)
            k = short.argmax(-1)
            dz, row = short[rows, k], g.row(k)  # (E,), (E, n)
            need = dz > 1e-9
            pred = s.ee_pos + matvec(jp, qt - q)
            inside, out = _clip(pred, *box)
            if not bool(need.any() | out.any()):
                return qt, True
            at_hi, at_lo = qt >= hi_b, qt <= lo_b
            if bool(out.any()):
                # a joint at its band cannot move further out of it: its column is left out
                err = inside - pred  # (E, 3)
                push = matvec(mT(jp), err)  # (E, n) the gradient direction of each joint
                held = (at_hi & (push > 0)) | (at_lo & (push < 0))
                jw = xp.where(held[:, None, :], 0.0 * jp, jp)
                qt = xp.where(out[:, None], qt + dls_joint_delta(jw, err), qt)
                flags["workspace"] = flags["workspace"] | out
            if bool(need.any()):
                stuck = (at_hi & (row > 0)) | (at_lo & (row < 0))
                free = xp.where(stuck, 0.0 * row, row)
                fix = dls_joint_delta(free[:, None, :], clip(dz, lo=0.0)[:, None])
                qt = xp.where(need[:, None], qt + fix, qt)
            qt = clip(qt, lo=lo_b, hi=hi_b)
        short = floor - g.z - g.dot(qt - q)
        _, out = _clip(s.ee_pos + matvec(jp, qt - q), *box)
        return qt, not bool((short > 1e-9).any() | out.any())

    def _trajectory(self, qt: Array, q: Array, track: JointTrack, c: dict[str, Array],
                    accel: bool = True) -> tuple[Array, Array, Array]:
        """(command, (E,) limited, (E,) braked) for a joint target ``qt``: the PD law's
        steady speed towards it, v = (qt - q) / lag, within the speed limit and the speed
        from which braking at ``brake_accel`` stops before the soft limits (hard bounds),
        and within ``max_joint_accel`` of the last command's speed (given up where the hard
        bounds need it; ``accel`` False: not at all); the command is q + v lag."""
        dt, ab, am = self.dt, self.cfg.brake_accel, self.cfg.max_joint_accel
        lag = c["lag"]
        v_want = (qt - q) / lag
        # Discrete braking: from speed v, decelerating at ab every period, a joint stops
        # within the room d left iff v <= sqrt((ab dt / 2)^2 + 2 ab d) - ab dt / 2; the room
        # is what is left after the lag at the last command's speed.
        half = 0.5 * ab * dt
        room_hi = clip(c["soft_hi"] - q - clip(track.v, lo=0.0) * lag, lo=0.0)
        room_lo = clip(q - c["soft_lo"] + clip(track.v, hi=0.0) * lag, lo=0.0)
        brake_hi = (half * half + 2.0 * ab * room_hi) ** 0.5 - half
        brake_lo = half - (half * half + 2.0 * ab * room_lo) ** 0.5
        hard_hi = clip(brake_hi, hi=c["qd_lim"])
        hard_lo = clip(brake_lo, lo=-c["qd_lim"], hi=hard_hi)
        if accel:
            lo = clip(track.v - am * dt, lo=hard_lo, hi=hard_hi)
            hi = clip(track.v + am * dt, lo=lo, hi=hard_hi)
        else:  # the hard bounds only
            lo, hi = hard_lo, hard_hi
        v = clip(v_want, lo=lo, hi=hi)
        braked = (((v_want > hard_hi) & (brake_hi < c["qd_lim"]))
                  | ((v_want < hard_lo) & (brake_lo > -c["qd_lim"]))).any(-1)
        return q + v * lag, (v != v_want).any(-1), braked

    def _pose_targets(self, t: Targets, s: ArmState) -> tuple[Targets, Flags]:
        if self.compiled and is_f64(t.pos) and is_f64(t.rot) and is_f64(s.q):
            assert self.pose_packed is not None  # compiled: bound
            pos, ws, low = targets_compiled.pose_targets(
                arg(t.pos), arg(t.rot), arg(s.ee_pos), arg(s.ee_vel), *self.pose_packed)
            return (Targets("pose", pos=pos, rot=t.rot, gripper=t.gripper),
                    {"workspace": ws, "table_floor": low})
        return self._pose_targets_reference(t, s)

    def _pose_targets_reference(self, t: Targets, s: ArmState) -> tuple[Targets, Flags]:
        """``_pose_targets`` as array operations (the reference; the torch path)."""
        xp = namespace(s.q)
        assert t.pos is not None
        lo, hi = self._ee_box(s, self._c(s.q), 0.0)
        pos, ws = _clip(t.pos, lo, hi)
        # the target pose's lowest hand point above the floor: raise the target
        c = self._c(s.q)
        assert t.rot is not None
        drop = amin((t.rot @ mT(c["hand"]))[:, 2], -1)  # (E,) lowest point below the site
        floor = self._floor(s.ee_vel[:, 2], 0.0) - drop
        low = pos[:, 2] < floor
        pos = xp.concatenate([pos[:, :2], xp.where(low, floor, pos[:, 2])[:, None]], axis=-1)
        return (Targets("pose", pos=pos, rot=t.rot, gripper=t.gripper),
                {"workspace": ws, "table_floor": low})

    # -- layers 4-8: torques ---------------------------------------------------------------

    def filter_torque(self, tau: Array, s: ArmState) -> tuple[Array, Flags]:
        """Joint torques (E, n) corrected so the motion they cause stays inside the limits.

        Each limit bounds an acceleration: the speed towards a limit (a workspace face, the
        floor, a soft joint limit) may not exceed the speed from which the arm still stops
        before it, nor may a joint exceed its speed limit; an excess is removed within
        ``brake_time``. The joint acceleration qdd = M^-1 (tau + drift) is projected
        alternately onto the end-effector bounds (through J, in the metric of M) and the joint
        bounds, a few passes, until both hold; the torque changes by M dqdd. Torques are then
        clipped.
        """
        if not self.cfg.enabled:
            return tau, {}
        assert s.mass is not None, "the torque layers need ArmState.mass"
        args = self.torque_kernel_args(s) if is_f64(tau) else None
        if args is None:
            return self.filter_torque_reference(tau, s)
        # one tuple: mypy maps a second *tuple of mixed types onto the parameters wrongly
        inputs = (arg(tau), *args[:5], arg(s.mass_inv()), *args[5:])
        out, fl = shield_compiled.filter_torque(*inputs)
        return out, self.torque_flags(fl)

    def torque_kernel_args(self, s: ArmState) -> TorqueKernelArgs | None:
        """The torque layer's inputs after (tau) and without M^-1, as
        ``shield_compiled.filter_torque`` takes them: (q, qd, ee_pos, jac, mass, drift,
        gravity, link_pos, link_rot, guard_link, guard_pts, guard_mask, limits, scalars,
        passes, flag_tol); None where the compiled path does not apply (disabled, not
        compiled, torch or float32 state, no link poses)."""
        if not (self.cfg.enabled and self.compiled and is_f64(s.q) and is_f64(s.mass)
                and s.link_pos is not None and s.link_rot is not None):
            return None
        assert self._packed is not None  # compiled: bound
        c, none = arg, self._no_rows
        return (c(s.q), c(s.qd), c(s.ee_pos), c(s.jac), c(s.mass),
                none if s.drift is None else c(s.drift),
                none if s.gravity is None else c(s.gravity), c(s.link_pos), c(s.link_rot),
                *self._packed, self.PASSES, self.FLAG_TOL)

    @staticmethod
    def torque_flags(fl: np.ndarray) -> Flags:
        """{layer: (E,) bool} from the compiled torque layer's (E, 5) flags."""
        return dict(zip(shield_compiled.FLAG_NAMES, fl.T, strict=True))

    def filter_torque_reference(self, tau: Array, s: ArmState) -> tuple[Array, Flags]:
        """``filter_torque`` as array operations (numpy or torch): the reference the
        compiled version is tested against, and the path for torch tensors."""
        assert s.mass is not None, "the torque layers need ArmState.mass"
        xp = namespace(tau)
        c, cfg, mass = self._c(s.q), self.cfg, s.mass
        x, v, jp = s.ee_pos, s.ee_vel, s.jac[:, :3]
        t = cfg.brake_time
        # End-effector bands: faces of the shrunk box (workspace; its floor face is the hand's
        # lowest point's, below).
        a2 = 2.0 * cfg.brake_accel_ee
        ws_hi = _approach(c["ws_hi"] - x, a2)
        ws_lo = -_approach(x - c["ws_lo"], a2)
        ee_lo, ee_hi = (ws_lo - v) / t, (ws_hi - v) / t
        ee_lo[:, 2] = -1e9
        # The arm's guard points (table_floor): their heights' accelerations, (E, K).
        g = self._guard(s, c)
        floor_lo = (-_approach(g.z - cfg.floor_height, a2) - g.dot(s.qd)) / t
        rows = row_index(g.z)
        # Joint bands: soft limits (joint_limits), then speed limits (joint_velocity).
        a2 = 2.0 * cfg.brake_accel
        lim_hi = _approach(c["soft_hi"] - s.q, a2)
        lim_lo = -_approach(s.q - c["soft_lo"], a2)
        q_lo = (clip(lim_lo, lo=-c["qd_lim"]) - s.qd) / t
        q_hi = (clip(lim_hi, hi=c["qd_lim"]) - s.qd) / t
        # Accelerations within max_joint_accel, except where the bands above need more.
        am = cfg.max_joint_accel
        acc_lo = clip(clip(q_lo, lo=-am), hi=q_hi)
        acc_hi = clip(clip(q_hi, hi=am), lo=acc_lo)

        # Commands beyond the torque limits are scaled down first (keeping their direction),
        # so the corrections below are not clipped away afterwards.
        tau_lo, tau_hi = self._torque_band(s, c)
        ratio = xp.where(tau > 0, tau / clip(tau_hi, lo=1e-9), tau / clip(tau_lo, hi=-1e-9))
        peak = amax(ratio, -1)[:, None]
        over = peak[:, 0] > 1.0
        tau = tau / clip(peak, lo=1.0)
        drive = tau if s.drift is None else tau + s.drift
        minv = s.mass_inv()
        qdd0 = matvec(minv, drive)
        xdd0 = matvec(jp, qdd0)
        flags: Flags = {
            "workspace": ((xdd0 < ee_lo)[:, :2].any(-1) | (xdd0 > ee_hi).any(-1)),
            "joint_limits": ((qdd0 < (lim_lo - s.qd) / t) | (qdd0 > (lim_hi - s.qd) / t)).any(-1),
            "joint_velocity": ((qdd0 < (-c["qd_lim"] - s.qd) / t)
                               | (qdd0 > (c["qd_lim"] - s.qd) / t)
                               | (qdd0 < acc_lo) | (qdd0 > acc_hi)).any(-1),
            "table_floor": (g.dot(qdd0) < floor_lo).any(-1),
        }
        if bool((flags["workspace"] | flags["joint_limits"] | flags["joint_velocity"]
                 | flags["table_floor"]).any()):
            minv_jt = minv @ mT(jp)  # (E, n, 3)
            lam_inv = jp @ minv_jt  # (E, 3, 3) inverse task-space inertia
            qdd = qdd0
            for _ in range(self.PASSES):
                xdd = matvec(jp, qdd)
                xdd_c, hit = _clip(xdd, ee_lo, ee_hi)
                if bool(hit.any()):
                    fix = solve(lam_inv, (xdd_c - xdd)[..., None])  # Lambda dxdd
                    qdd = qdd + (minv_jt @ fix)[..., 0]
                # the guard point short by most: its row's least-inertia correction
                shorts = floor_lo - g.dot(qdd)  # (E, K)
                k = shorts.argmax(-1)
                short, row = clip(shorts[rows, k], lo=0.0), g.row(k)
                minv_row = matvec(minv, row)  # (E, n)
                gain = 1.0 / clip((row * minv_row).sum(-1), lo=1e-9)  # none if nothing lifts
                qdd = qdd + minv_row * (short * gain)[:, None]
                qdd, hit_q = _clip(qdd, acc_lo, acc_hi)
                # torques the actuators cannot give: the accelerations the clipped ones cause
                # (the coupling through M moves the other joints too), then project again
                want = tau + matvec(mass, qdd - qdd0)
                got, hit_t = _clip(want, tau_lo, tau_hi)
                if not bool(hit_q.any() | hit_t.any()):
                    break
                if bool(hit_t.any()):
                    qdd = qdd + matvec(minv, got - want)
            tau = tau + matvec(mass, qdd - qdd0)
        clipped = clip(tau, lo=tau_lo, hi=tau_hi)
        # flagged when a torque moves by more than rounding: the projection above ends its
        # corrections on the limits themselves, within an ulp on either side
        flags["torque"] = over | (abs(clipped - tau) > self.FLAG_TOL).any(-1)
        return clipped, flags

    FLAG_TOL = 1e-9
    """The torque layer's clip counts as an intervention beyond this [Nm]."""
    PASSES = 6
    """Alternating projections between the end-effector, joint and torque bounds per
    evaluation."""
    FLOOR_PASSES = 3
    """Joint-target floor corrections per evaluation (each within the soft limits)."""


def _approach(d: Array, a2: float) -> Array:
    """The fastest speed towards a limit ``d`` away that still stops before it braking at
    a2 / 2: sqrt(a2 d); 0 at or beyond the limit."""
    return (a2 * clip(d, lo=0.0)) ** 0.5


def _clip(x: Array, lo: Array, hi: Array) -> tuple[Array, Array]:
    """(clipped x, (E,) whether any entry of the row was clipped)."""
    y = clip(x, lo=lo, hi=hi)
    return y, (y != x).any(-1)
