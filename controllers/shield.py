"""SafetyShield: the last layer before the actuators, in simulation and on hardware alike.

Layers, always applied in this order (``LAYERS``):

    1 nan_guard       actions with NaN/inf -> that robot holds (see ``ActionSpace.hold``)
    2 action_bounds   actions clipped to [-1, 1]
    3 rate_limit      each action component changes by at most ``max_action_delta`` per tick
    4 workspace       the end effector is kept inside the workspace box shrunk by a margin
    5 joint_limits    joints are kept inside soft limits, with a braking margin growing with
                      the speed towards the limit
    6 joint_velocity  joint speeds are kept below ``velocity_fraction`` of the velocity limits
    7 torque          joint torques are kept below ``torque_fraction`` of the torque limits
    8 table_floor     the end effector is kept above ``floor_height``

Layers 1-3 act on actions (``filter_action``, once per control tick). Layers 4-8 act on what
the controller tracks, in the form the controller takes:

* joint position targets (``filter_targets``, once per tick): the target is moved so that the
  joint PD law, which runs at every physics step, settles inside the limits. The end-effector
  layers predict the target's end-effector position to first order (p + J dq) and project it
  back inside with damped least squares; the velocity layer bounds the PD law's steady speed
  kp/kd |q_target - q|; the torque layer bounds kp (q_target - q) - kd qd.
* pose targets (``filter_targets``): the position target is clipped into the shrunk box and
  above the floor.
* joint torques (``filter_torque``, at the torque controller's rate): the acceleration that
  the torque would cause (M^-1 tau, or J M^-1 tau for the end effector) is bounded so that
  the velocity towards any limit decays within ``brake_time`` to the speed from which
  ``brake_accel`` still stops before it, and the torque is corrected by exactly that
  acceleration change (M dqdd, or J^T Lambda dxdd). Then torques are clipped.

Every method returns per-robot flags ``{layer: (E,) bool}``: whether the layer changed
anything. Limits come from the RobotSpec and the task's workspace, with the margins of
``ShieldConfig``; inconsistent settings fail at construction, naming the joint.
The math is array-agnostic: batched torch while training, one numpy sample on the robot.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from robot_rl.controllers.action_spaces import Targets
from robot_rl.controllers.arm_state import ArmState
from robot_rl.controllers.ik import dls_joint_delta
from robot_rl.controllers.xp import Array, Constants, amax, clip, matvec, mT, namespace, solve
from robot_rl.errors import ConfigError

if TYPE_CHECKING:
    from robot_rl.robots import RobotSpec

LAYERS = ("nan_guard", "action_bounds", "rate_limit", "workspace", "joint_limits",
          "joint_velocity", "torque", "table_floor")
"""Shield layers in the order they are applied."""

Flags = dict[str, Array]


@dataclasses.dataclass(kw_only=True)
class ShieldConfig:
    """Margins and rates of the safety shield (limits themselves come from the RobotSpec)."""

    enabled: bool = True
    """False: actions still pass the NaN guard and bounds, nothing else is limited."""
    max_action_delta: float | None = 1.0
    """Largest change of an action component per control tick (None: no rate limit)."""
    joint_margin: float = 0.05
    """Soft joint limits sit this far inside the hard limits [rad] (when not given below)."""
    q_soft_min: tuple[float, ...] | None = None
    """Soft lower joint limits, one per joint [rad]; default q_min + joint_margin."""
    q_soft_max: tuple[float, ...] | None = None
    """Soft upper joint limits, one per joint [rad]; default q_max - joint_margin."""
    velocity_fraction: float = 0.85
    """Joint speed limit as a fraction of the robot's velocity limits."""
    torque_fraction: float = 0.95
    """Joint torque limit as a fraction of the robot's torque limits."""
    workspace_margin: float = 0.03
    """The end effector is kept this far inside the workspace box [m]."""
    floor_height: float = 0.005
    """Lowest end-effector height above the table top (z = 0) [m]."""
    brake_accel: float = 8.0
    """Joint deceleration [rad/s^2] the braking margins assume."""
    brake_accel_ee: float = 4.0
    """End-effector deceleration [m/s^2] the braking margins assume."""
    brake_time: float = 0.01
    """Torque layers: time constant with which an excess speed is removed [s]."""


class SafetyShield:
    """The layered shield of one robot model (see module docstring)."""

    def __init__(self, cfg: ShieldConfig, robot: RobotSpec, workspace_lo: Sequence[float],
                 workspace_hi: Sequence[float], kp: np.ndarray, kd: np.ndarray):
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
        if min(cfg.brake_accel, cfg.brake_accel_ee, cfg.brake_time) <= 0:
            raise ConfigError("shield brake_accel, brake_accel_ee and brake_time must be > 0")
        if cfg.max_action_delta is not None and cfg.max_action_delta <= 0:
            raise ConfigError("shield max_action_delta must be positive (or None)")
        lo = np.asarray(workspace_lo, dtype=np.float64) + cfg.workspace_margin
        hi = np.asarray(workspace_hi, dtype=np.float64) - cfg.workspace_margin
        if np.any(lo >= hi):
            raise ConfigError("shield: the workspace box minus workspace_margin is empty")
        if cfg.floor_height >= hi[2]:
            raise ConfigError("shield floor_height is above the workspace box")
        self._c = Constants(
            soft_lo=soft_lo, soft_hi=soft_hi,
            qd_lim=cfg.velocity_fraction * np.asarray(robot.qd_max, dtype=np.float64),
            tau_lim=cfg.torque_fraction * np.asarray(robot.tau_max, dtype=np.float64),
            ws_lo=lo, ws_hi=hi, kp=kp, kd=kd,
            lag=np.asarray(kd, dtype=np.float64) / np.asarray(kp, dtype=np.float64),
        )
        """The shield's limits as arrays of the caller's kind (``self._c(x)["qd_lim"]``)."""
        self.qd_limit = self._c.numpy("qd_lim")
        """(n,) joint speed limit of the velocity layer [rad/s]."""
        self.tau_limit = self._c.numpy("tau_lim")
        """(n,) joint torque limit of the torque layer [Nm]."""
        self._lag = float(self._c.numpy("lag").max())
        """The slowest joint's PD time constant kd/kp, for end-effector stopping distances."""

    def limits(self, x: Array) -> dict[str, Array]:
        """The shield's limits and the law's gains as arrays like ``x`` (cached per kind):
        ``soft_lo``, ``soft_hi``, ``qd_lim``, ``tau_lim``, ``ws_lo``, ``ws_hi``, ``kp``,
        ``kd``, ``lag``."""
        return self._c(x)

    # -- layers 1-3: actions ---------------------------------------------------------------

    def filter_action(self, action: Array, prev: Array) -> tuple[Array, Array, Flags]:
        """(action, hold, flags): finite, bounded, rate-limited actions (E, A); ``hold`` (E,)
        marks robots whose action had NaN/inf (their returned row is ``prev``)."""
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

    def filter_targets(self, t: Targets, s: ArmState) -> tuple[Targets, Flags]:
        """Targets moved inside the limits (joint or pose targets; torques pass through)."""
        if not self.cfg.enabled or t.kind == "torque":
            return t, {}
        if t.kind == "pose":
            return self._pose_targets(t, s)
        return self._joint_targets(t, s)

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

    def _floor(self, s: ArmState, lag: float) -> Array:
        """(E,) lowest end-effector height, raised by its stopping distance when going down."""
        down = clip((-s.ee_vel[:, 2]), lo=0.0)
        return self.cfg.floor_height + down * lag + down * down / (2.0 * self.cfg.brake_accel_ee)

    def _joint_targets(self, t: Targets, s: ArmState) -> tuple[Targets, Flags]:
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
        # 6: the PD law's steady speed kp/kd |q_target - q| below the velocity limit.
        lead = c["qd_lim"] * c["lag"]
        qt, flags["joint_velocity"] = _clip(qt, q - lead, q + lead)
        # 7: the PD torque at this state within the torque limit.
        tau = c["kp"] * (qt - q) - c["kd"] * qd
        tau_c, flags["torque"] = _clip(tau, -c["tau_lim"], c["tau_lim"])
        qt = xp.where(flags["torque"][:, None], q + (tau_c + c["kd"] * qd) / c["kp"], qt)
        # 8: predicted end-effector height above the floor.
        dz = self._floor(s, lag) - (s.ee_pos[:, 2] + matvec(jp[:, 2:3], qt - q)[:, 0])
        low = dz > 0
        if bool(low.any()):
            fix = dls_joint_delta(jp[:, 2:3], clip(dz, lo=0.0)[:, None])
            qt = xp.where(low[:, None], qt + fix, qt)
        flags["table_floor"] = low
        return Targets("joint", joint=qt, gripper=t.gripper), flags

    def _pose_targets(self, t: Targets, s: ArmState) -> tuple[Targets, Flags]:
        xp = namespace(s.q)
        assert t.pos is not None
        lo, hi = self._ee_box(s, self._c(s.q), 0.0)
        pos, ws = _clip(t.pos, lo, hi)
        floor = self._floor(s, 0.0)
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
        xp = namespace(tau)
        c, cfg, mass = self._c(s.q), self.cfg, s.mass
        x, v, jp = s.ee_pos, s.ee_vel, s.jac[:, :3]
        t = cfg.brake_time
        # End-effector bands: faces of the shrunk box (workspace), the floor (table_floor).
        a2 = 2.0 * cfg.brake_accel_ee
        ws_hi = (a2 * clip((c["ws_hi"] - x), lo=0.0)) ** 0.5
        ws_lo = -((a2 * clip((x - c["ws_lo"]), lo=0.0)) ** 0.5)
        floor = -((a2 * clip((x[:, 2] - cfg.floor_height), lo=0.0)) ** 0.5)
        ws_lo = xp.concatenate([ws_lo[:, :2], floor[:, None]], axis=-1)
        ee_lo, ee_hi = (ws_lo - v) / t, (ws_hi - v) / t
        # Joint bands: soft limits (joint_limits), then speed limits (joint_velocity).
        a2 = 2.0 * cfg.brake_accel
        lim_hi = (a2 * clip((c["soft_hi"] - s.q), lo=0.0)) ** 0.5
        lim_lo = -((a2 * clip((s.q - c["soft_lo"]), lo=0.0)) ** 0.5)
        q_lo = (clip(lim_lo, lo=-c["qd_lim"]) - s.qd) / t
        q_hi = (clip(lim_hi, hi=c["qd_lim"]) - s.qd) / t

        # Commands beyond the torque limits are scaled down first (keeping their direction),
        # so the corrections below are not clipped away afterwards.
        peak = amax(abs(tau) / c["tau_lim"], -1)[:, None]
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
                               | (qdd0 > (c["qd_lim"] - s.qd) / t)).any(-1),
            "table_floor": xdd0[:, 2] < ee_lo[:, 2],
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
                qdd, hit_q = _clip(qdd, q_lo, q_hi)
                if not bool(hit_q.any()):
                    break
            tau = tau + matvec(mass, qdd - qdd0)
        tau, clipped = _clip(tau, -c["tau_lim"], c["tau_lim"])
        flags["torque"] = over | clipped
        return tau, flags

    PASSES = 4
    """Alternating projections between the end-effector and joint bounds per evaluation."""


def _clip(x: Array, lo: Array, hi: Array) -> tuple[Array, Array]:
    """(clipped x, (E,) whether any entry of the row was clipped)."""
    y = clip(x, lo=lo, hi=hi)
    return y, (y != x).any(-1)
