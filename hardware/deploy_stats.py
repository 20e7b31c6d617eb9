"""DeployStats: what the deploy runtime measures, and its summary as plain numbers."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from robot_rl.controllers import LAYERS
from robot_rl.hardware.timing import Samples, percentiles


@dataclasses.dataclass
class DeployStats:
    """What the runtime measured; ``summary`` reduces it to numbers."""

    period: Samples = dataclasses.field(default_factory=Samples)
    """Tick start to tick start [s] (``run`` only)."""
    lateness: Samples = dataclasses.field(default_factory=Samples)
    """Wake-up after the deadline [s] (``run`` only)."""
    compute: Samples = dataclasses.field(default_factory=Samples)
    """Time inside ``tick`` [s]."""
    inference: Samples = dataclasses.field(default_factory=Samples)
    """Policy network call [s]."""
    gate: Samples = dataclasses.field(default_factory=Samples)
    """Safety-critic gate over the candidates [s]."""
    watchdog_hold: Samples = dataclasses.field(default_factory=Samples)
    """The newest fresh reading to the hold a watchdog trip began [s]."""
    frame_age: Samples = dataclasses.field(default_factory=Samples)
    """Age of the oldest camera's frame at each policy step [s] (policies that see cameras)."""
    sense_to_act: Samples = dataclasses.field(default_factory=Samples)
    """From a policy step's joint reading (its ``stamp``) to its targets going out [s]: the
    delay the runtime adds before the arm's own actuation delay (which it cannot see)."""
    ticks: int = 0
    policy_steps: int = 0
    policy_waits: int = 0
    """Ticks on which a policy step was due but the previous one was still running."""
    overruns: int = 0
    """Ticks whose work took longer than a period."""
    hold_ticks: int = 0
    bad_readings: int = 0
    gate_rejections: int = 0
    gate_holds: int = 0
    camera_holds: int = 0
    """Holds begun because a camera's frames were too old."""
    shield: dict[str, int] = dataclasses.field(
        default_factory=lambda: {name: 0 for name in LAYERS})
    """Policy steps in which each shield layer intervened."""

    def summary(self, nominal_period: float | None = None) -> dict[str, Any]:
        us = 1e6
        out: dict[str, Any] = {
            "ticks": self.ticks, "policy_steps": self.policy_steps,
            "policy_waits": self.policy_waits,
            "overruns": self.overruns, "hold_ticks": self.hold_ticks,
            "bad_readings": self.bad_readings, "gate_rejections": self.gate_rejections,
            "gate_holds": self.gate_holds,
            "compute_us": self.compute.percentiles(us),
            "inference_us": self.inference.percentiles(us),
            "gate_us": self.gate.percentiles(us),
            "watchdog_hold_ms": self.watchdog_hold.percentiles(1e3),
            "camera_holds": self.camera_holds,
            "frame_age_ms": self.frame_age.percentiles(1e3),
            "sense_to_act_ms": self.sense_to_act.percentiles(1e3),
            "shield": dict(self.shield),
        }
        if nominal_period is not None and self.period.n:
            out["period_error_us"] = percentiles(np.abs(self.period.values - nominal_period),
                                                 us)
            out["lateness_us"] = self.lateness.percentiles(us)
        return out
