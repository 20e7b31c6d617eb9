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

import dataclasses

import numpy as np

from robot_rl.errors import ConfigError
from robot_rl.robots import RobotSpec


@dataclasses.dataclass(kw_only=True)
class ExcitationConfig:
    """The excitation trajectory's shape."""

    duration: float = 20.0
    """Length of the multisine part [s]."""
    rate: float = 250.0
    """Command rate [Hz]."""
    band: tuple[float, float] = (0.2, 2.0)
    """Lowest and highest sine frequency [Hz]."""
    harmonics: int = 4
    """Sines per joint."""
    amplitude: float = 0.35
    """Largest excursion of each joint from home [rad] (less near a soft limit)."""
    speed: float = 0.5
    """Largest speed as a fraction of each joint's velocity limit."""
    accel: float = 6.0
    """Largest joint acceleration [rad/s^2] (below the shield's ``max_joint_accel``, which
    would otherwise smooth the multisine on its way to the arm)."""
    ramp: float = 1.0
    """Fade in and out of the multisine [s]."""
    step_size: float = 0.08
    """Height of the position steps [rad] (0: no steps)."""
    step_hold: float = 0.4
    """How long each step is held [s]."""
    limit_margin: float = 0.1
    """Distance kept from each joint's position limits [rad]."""
    seed: int = 0
    """Seed of the frequency assignment's jitter."""

    def validate(self) -> None:
        lo, hi = self.band
        if self.duration <= 2 * self.ramp or self.ramp < 0:
            raise ConfigError(f"duration ({self.duration} s) must exceed twice the ramp "
                              f"({self.ramp} s)")
        if self.rate <= 0 or not 0 < lo < hi or hi > self.rate / 4:
            raise ConfigError(f"need rate > 0 and 0 < band < rate / 4; got rate {self.rate}, "
                              f"band {self.band}")
        if self.harmonics < 1 or self.amplitude <= 0 or not 0 < self.speed <= 1 \
                or self.accel <= 0:
            raise ConfigError("harmonics >= 1, amplitude > 0, 0 < speed <= 1 and accel > 0 "
                              "needed")
        if self.step_size < 0 or self.step_hold <= 0 or self.limit_margin < 0:
            raise ConfigError("step_size >= 0, step_hold > 0 and limit_margin >= 0 needed")


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
