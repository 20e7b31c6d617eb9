"""MotionProfile: joint targets shaped into motion the shield passes, before the shield.

A policy (or an expert) names where a joint should go; the joint PD law treats a target as
the steady speed ``v = (q_target - q) / lag`` (``lag = kd / kp``). A target that jumps asks
for a speed that jumps, and one that is held while the joint closes in asks for a speed that
decays at ``v / lag`` per second: any approach faster than ``max_joint_accel * lag`` (0.4
rad/s at 8 rad/s^2 and lag 0.05 s) asks for more deceleration than the shield lets through.
Without a profile the shield's joint-velocity layer reshapes most commands of every policy
and expert (push's scripted expert: 70-88% of its steps), so the limiter, not the policy,
decides the motion, and the arm overshoots where it brakes late.

The profile is the motion generator a real arm's driver has (a trajectory interpolator in
front of the safety controller): per joint it moves the command's speed towards the target's
within ``accel_fraction`` of the shield's acceleration limit per second and
``speed_fraction`` of its speed limit, and no faster than the speed from which decelerating
at that acceleration stops at the target:

    e      = q_target - q                                   (E, n) distance to go [rad]
    v_stop = sqrt((a dt / 2)^2 + 2 a |e|) - a dt / 2        speed that still stops at e
    v      = clip(e / lag, +-v_stop)                        the PD law's speed, braking in time
    v      = clip(v, +-speed_fraction qd_lim)
    v      = clip(v, v_last - a dt, v_last + a dt)          a = accel_fraction max_joint_accel
    q_cmd  = q + v lag

``v_last`` is the speed of the last command the shield let through (``JointTrack.v``), so
with both fractions below 1 the shield's speed and acceleration bounds never bind on a
profiled command; the shield still bounds everything else (joint limits, workspace, torque,
floor) and whatever reaches it unprofiled: held robots' hold targets, attacks on the
pipeline below this stage. Arrays are numpy or torch (``controllers.xp``).
"""

from __future__ import annotations

from robot_rl.controllers.action_spaces import Targets
from robot_rl.controllers.configs import MotionConfig
from robot_rl.controllers.xp import Array, clip, namespace


class MotionProfile:
    """The profile of one robot model's joint targets (see module docstring)."""

    def __init__(self, cfg: MotionConfig, max_joint_accel: float, control_dt: float):
        self.cfg = cfg
        self.accel = cfg.accel_fraction * max_joint_accel
        """Joint acceleration of the profile [rad/s^2]."""
        self.dt = control_dt

    def speeds(self, q_target: Array, q: Array, v_last: Array, lag: Array, qd_lim: Array
               ) -> Array:
        """(E, n) the profiled command speed [rad/s] towards ``q_target`` (E, n) from ``q``
        (E, n), continuing the last command's speed ``v_last`` (E, n); ``lag`` and ``qd_lim``
        (n,) are the PD law's kd/kp and the shield's speed limit."""
        a, dt = self.accel, self.dt
        e = q_target - q
        half = 0.5 * a * dt
        stop = (half * half + 2.0 * a * namespace(e).abs(e)) ** 0.5 - half
        v = clip(e / lag, lo=-stop, hi=stop)
        vmax = self.cfg.speed_fraction * qd_lim
        v = clip(v, lo=-vmax, hi=vmax)
        return clip(v, lo=v_last - a * dt, hi=v_last + a * dt)

    def __call__(self, targets: Targets, q: Array, v_last: Array, lag: Array, qd_lim: Array,
                 held: Array) -> tuple[Targets, Array]:
        """(joint targets, (E, n) their speed) for joint ``targets`` at ``q``; ``held`` (E,)
        robots keep their (hold) target unshaped: a hold is the shield's to bring about."""
        assert targets.joint is not None
        v = self.speeds(targets.joint, q, v_last, lag, qd_lim)
        xp = namespace(q)
        joint = xp.where(held[:, None], targets.joint, q + v * lag)
        v = xp.where(held[:, None], (targets.joint - q) / lag, v)
        return Targets("joint", joint=joint, gripper=targets.gripper), v
