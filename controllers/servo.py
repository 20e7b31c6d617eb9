"""Joint-space laws that turn a position into a command for an arm's interface.

The interfaces are those of ros2_control (``CommandInterface``): ``position`` (the arm's own
servo loop tracks a joint position), ``velocity`` (it tracks a joint velocity) and ``effort``
(joint torques). Three laws serve every place that commands a joint interface (the batched
env, the deploy runtime and the simulated arm):

    pd_effort       a joint position target as the joint PD law's torque, on the host:
                    tau = clamp(kp (q_target - q) - kd qd, -tau_lim, tau_lim)
                    (the law the simulation's position actuators realize inside the model;
                    gravity is the arm's own to compensate, as a Franka's firmware does)
    hold_command    keep the arm where it is:   position -> q_hold,  velocity -> 0,
                    effort -> pd_effort towards q_hold
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

HOST_PD_DAMPING_STEP = 0.15
"""The largest period * kd / m (the PD law's damping over the joint's inertia at home, the
fastest joint's) at which ``pd_effort`` may run on the host: the simulation integrates the
law's damping implicitly at every physics step, the host samples it once a tick.
``benchmarks/effort_interface.py`` (arm7, reach's cloned expert, simulated time): 0.28
(250 Hz) and below reach as the position servo does (100%, 6.3 mm); 0.35 (200 Hz) 69%, 0.46
(150 Hz) 44%, 0.69 (100 Hz) 6%, oscillating. In real time on a loaded 2-core host the ticks
come late and the torque is held longer: 8/8 at 500 Hz (0.14), 7/8 at 250 Hz. Hence 0.15:
arm7 and so5 need about 500 Hz, and a Franka's 1 kHz has twice that margin."""


def hold_command(interface: CommandInterface, q_hold: Array, q: Array, qd: Array, kp: Array,
                 kd: Array, tau_limit: Array, fresh: bool = True) -> Array:
    """(E, n) command that holds the arm at ``q_hold`` through ``interface`` (module
    docstring); ``fresh`` False: the measurement (q, qd) is stale."""
    if interface == "position":
        return q_hold * 1.0  # a copy: the caller may keep q_hold
    if interface == "velocity" or not fresh:
        return q * 0.0
    return pd_effort(q_hold, q, qd, kp, kd, tau_limit)


def pd_effort(q_target: Array, q: Array, qd: Array, kp: Array, kd: Array,
              tau_limit: Array) -> Array:
    """(E, n) joint torques of the PD law towards ``q_target`` from the measured (q, qd),
    within ``tau_limit``."""
    return clip(kp * (q_target - q) - kd * qd, lo=-tau_limit, hi=tau_limit)


def host_pd_min_rate(kd: Array, inertia: Array) -> float:
    """The lowest tick rate [Hz] at which the host may evaluate the PD law of damping ``kd``
    (n,) on joints of ``inertia`` (n,) (``HOST_PD_DAMPING_STEP``)."""
    return float((kd / inertia).max()) / HOST_PD_DAMPING_STEP


def velocity_servo(q_target: Array, q: Array, kp: Array, kd: Array, qd_limit: Array) -> Array:
    """(E, n) joint velocity command: the PD law's speed towards ``q_target``, within
    ``qd_limit``."""
    return clip(kp / kd * (q_target - q), lo=-qd_limit, hi=qd_limit)
