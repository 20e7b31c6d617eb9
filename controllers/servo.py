"""Joint-space laws that turn a position into a command for an arm's interface.

The interfaces are those of ros2_control (``CommandInterface``): ``position`` (the arm's own
servo loop tracks a joint position), ``velocity`` (it tracks a joint velocity) and ``effort``
(joint torques). Two laws serve every place that commands a joint interface (the batched env,
the deploy runtime and the simulated arm):

    hold_command    keep the arm where it is:   position -> q_hold,  velocity -> 0,
                    effort -> clamp(kp (q_hold - q) - kd qd, -tau_lim, tau_lim)
                    (a stale measurement gives no torque to trust: zero effort)
    velocity_servo  a joint position target as the speed of the joint PD law towards it:
                    qd_cmd = clamp(kp / kd (q_target - q), -qd_lim, qd_lim)

Both are array-agnostic (numpy or torch, batch first: (E, n)).
"""

from __future__ import annotations

from typing import Literal

from robot_rl.controllers.xp import Array, clip

CommandInterface = Literal["position", "velocity", "effort"]
COMMAND_INTERFACES: tuple[CommandInterface, ...] = ("position", "velocity", "effort")


def hold_command(interface: CommandInterface, q_hold: Array, q: Array, qd: Array, kp: Array,
                 kd: Array, tau_limit: Array, fresh: bool = True) -> Array:
    """(E, n) command that holds the arm at ``q_hold`` through ``interface`` (module
    docstring); ``fresh`` False: the measurement (q, qd) is stale."""
    if interface == "position":
        return q_hold * 1.0  # a copy: the caller may keep q_hold
    if interface == "velocity" or not fresh:
        return q * 0.0
    return clip(kp * (q_hold - q) - kd * qd, lo=-tau_limit, hi=tau_limit)


def velocity_servo(q_target: Array, q: Array, kp: Array, kd: Array, qd_limit: Array) -> Array:
    """(E, n) joint velocity command: the PD law's speed towards ``q_target``, within
    ``qd_limit``."""
    return clip(kp / kd * (q_target - q), lo=-qd_limit, hi=qd_limit)
