"""Excitation trajectories: joint position targets that make an arm's dynamics show.

    t, q = excitation(robot, ExcitationConfig(duration=20.0))     # (T,), (T, n) [s], [rad]

Each joint follows a sum of sines around the home pose (a multisine: ``harmonics``
frequencies per joint, log-spaced over the band and interleaved between joints so no two
joints share one, with Schroeder phases for a low peak), faded in and out over
``ramp`` seconds so the arm starts and ends at rest at home. The amplitudes are scaled so each
joint stays within ``amplitude`` of home (and its soft limits), below ``speed`` of its
velocity limit and below ``accel``. Then come position steps, one joint at a time (up,
back, down, back), each held ``step_hold`` seconds: their edges show the command delay and the
servo's rise.

Everything the trajectory asks passes the safety shield on its way to the arm
(``sysid.record``); what the shield changes is what gets recorded and replayed.
"""

from __future__ import annotations

import numpy as np

from robot_rl.errors import ConfigError
from robot_rl.robots import RobotSpec
from robot_rl.sysid.configs import ExcitationConfig


def excitation(robot: RobotSpec, cfg: ExcitationConfig) -> tuple[np.ndarray, np.ndarray]:
    """(t (T,) [s] from 0, q (T, n) [rad]) the trajectory at ``cfg.rate`` (module
    docstring)."""
    cfg.validate()
    n = robot.num_joints
    home = np.asarray(robot.home, dtype=np.float64)
    lo = np.asarray(robot.q_min) + cfg.limit_margin
    hi = np.asarray(robot.q_max) - cfg.limit_margin
    if np.any(home < lo) or np.any(home > hi):
        raise ConfigError(f"robot {robot.name!r}'s home pose is within limit_margin "
                          f"({cfg.limit_margin} rad) of a joint limit")
    dt = 1.0 / cfg.rate
    t = np.arange(0.0, cfg.duration, dt)
    # frequencies: n * harmonics log-spaced over the band, dealt out to the joints in turn
    rng = np.random.default_rng(cfg.seed)
    m = n * cfg.harmonics
    f = np.geomspace(*cfg.band, m) * (1 + 0.02 * rng.uniform(-1, 1, m))
    f = f.reshape(cfg.harmonics, n).T  # (n, H): joint j gets f[j], f[j + n], ...
    k = np.arange(1, cfg.harmonics + 1)
    phase = -np.pi * k * (k - 1) / cfg.harmonics  # Schroeder
    arg = 2 * np.pi * f[:, :, None] * t + phase[None, :, None]  # (n, H, T)
    shape = np.sin(arg).sum(axis=1) / np.sqrt(cfg.harmonics)  # (n, T)
    fade = np.clip(np.minimum(t, cfg.duration - dt - t) / max(cfg.ramp, dt), 0.0, 1.0)
    fade = 0.5 - 0.5 * np.cos(np.pi * fade)  # smooth: starts and ends at rest
    shape = shape * fade
    # amplitude per joint: within reach of home, the limits, and the speed limit
    room = np.minimum(np.minimum(home - lo, hi - home), cfg.amplitude)
    peak = np.abs(shape).max(axis=1)
    speed = np.abs(np.gradient(shape, dt, axis=1)).max(axis=1)
    accel = np.abs(np.gradient(np.gradient(shape, dt, axis=1), dt, axis=1)).max(axis=1)
    qd_max = cfg.speed * np.asarray(robot.qd_max)
    amp = np.minimum(room / np.maximum(peak, 1e-9), qd_max / np.maximum(speed, 1e-9))
    amp = np.minimum(amp, cfg.accel / np.maximum(accel, 1e-9))
    q = home + (amp[:, None] * shape).T  # (T, n)
    if cfg.step_size > 0:
        hold = max(1, round(cfg.step_hold * cfg.rate))
        steps = [np.tile(home, (hold, 1))]
        for j in range(n):
            size = min(cfg.step_size, float(room[j]))
            for s in (size, 0.0, -size, 0.0):
                target = home.copy()
                target[j] += s
                steps.append(np.tile(target, (hold, 1)))
        q = np.concatenate([q, *steps])
        t = np.arange(len(q)) * dt
    return t, q
