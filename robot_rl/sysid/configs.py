"""The configs of system identification: the excitation, its recording on the arm, the
replay that predicts it and the fit. Plain dataclasses, importable without MuJoCo or
torch (``robot-rl sysid ... --help`` reads them)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from robot_rl.controllers.configs import ShieldConfig
from robot_rl.errors import ConfigError
from robot_rl.sim.configs import PARAMS
from robot_rl.sim.tasks.safety_costs import SafetyCostConfig, Vec3

if TYPE_CHECKING:
    import numpy as np


def late_readings(js_t: np.ndarray, rate: float) -> int:
    """Readings stamped more than two command periods (at ``rate`` [Hz]) after the one
    before."""
    import numpy as np

    return int((np.diff(js_t) > 2.0 / rate).sum())


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


@dataclasses.dataclass(kw_only=True)
class ReplayConfig:
    """How a recording is replayed."""

    segment: float = 2.0
    """Length of each replayed segment [s]; each starts from the recorded state."""
    physics_dt: float = 0.002
    """Physics step of the replay [s] (the delay's unit)."""
    max_delay: int = 8
    """Largest command delay considered [physics steps]."""
    effort_weight: float = 1.0
    """Weight of the effort error against the position error (0: positions only)."""

    def validate(self) -> None:
        if self.segment <= 0 or self.physics_dt <= 0 or self.max_delay < 0 \
                or self.effort_weight < 0:
            raise ConfigError("segment and physics_dt must be > 0, max_delay and "
                              "effort_weight >= 0")


@dataclasses.dataclass(kw_only=True)
class FitConfig:
    """What is fitted and how hard the optimizer tries."""

    params: tuple[str, ...] = tuple(PARAMS)
    """Parameters to fit (``sim.configs.PARAMS``); the others stay nominal."""
    shared: tuple[str, ...] = ()
    """Of ``params``, those fitted as one value for every joint."""
    population: int = 16
    """Candidates per CMA-ES generation (one batch of replays)."""
    generations: int = 100
    """Most generations per restart."""
    survey: int = 30
    """Generations of the coarse search at each delay that picks the delay."""
    survey_segments: int = 4
    """Replayed segments of the coarse search (evenly spread over the recordings)."""
    restarts: int = 2
    """CMA-ES runs (the spread of their answers is one uncertainty estimate)."""
    patience: int = 15
    """A run stops when its best cost fell by less than 0.1% over this many generations."""
    sigma: float = 0.3
    """Initial step of CMA-ES (in log scale for the scales)."""
    scale_bounds: tuple[float, float] = (0.25, 4.0)
    """Range searched for every scale."""
    max_friction: float = 0.1
    """Largest dry friction searched, as a fraction of each joint's torque limit."""
    seed: int = 0

    def validate(self) -> None:
        unknown = set(self.params) - set(PARAMS)
        if unknown or not self.params:
            raise ConfigError(f"params must name some of {list(PARAMS)}; got "
                              f"{list(self.params)}")
        if not set(self.shared) <= set(self.params):
            raise ConfigError(f"shared {list(self.shared)} must be among params "
                              f"{list(self.params)}")
        lo, hi = self.scale_bounds
        if not 0 < lo < 1 < hi:
            raise ConfigError(f"scale_bounds must satisfy 0 < lo < 1 < hi, got {(lo, hi)}")
        if self.population < 4 or min(self.generations, self.survey, self.restarts,
                                      self.patience) < 1 \
                or self.sigma <= 0 or self.max_friction <= 0:
            raise ConfigError("population >= 4, generations and restarts >= 1, sigma and "
                              "max_friction > 0 needed")


@dataclasses.dataclass(kw_only=True)
class RecordConfig:
    """How an excitation is played and logged."""

    excitation: ExcitationConfig = dataclasses.field(default_factory=ExcitationConfig)
    """The trajectory (its rate is the command rate)."""
    shield: ShieldConfig = dataclasses.field(default_factory=ShieldConfig)
    """The shield the targets pass."""
    workspace_lo: Vec3 = SafetyCostConfig.workspace_lo
    """Lower corner of the hand's workspace box, world frame [m]."""
    workspace_hi: Vec3 = SafetyCostConfig.workspace_hi
    """Upper corner [m]."""
    home_speed: float = 0.25
    """Largest joint speed of the move to the home pose [rad/s]."""
    settle: float = 0.5
    """Hold at home before the excitation [s] (logged)."""
    stale_after: float = 0.2
    """No new joint reading for this long stops the recording (the arm holds) [s]."""
    max_gaps: float = 0.005
    """Largest share of the readings that may come more than two command periods after the
    one before; a recording with more (a host that stalled under it) is made again. On this
    2-core VM a recording of the simulated arm in its own process had 1-2 such gaps in 875
    readings alone and 15 in a full test run, whose fit's joint error was 1.3x below the
    nominal's instead of 3x."""
    tries: int = 3
    """Recordings of the excitation at most; the last is kept whatever its gaps (said)."""

    def validate(self) -> None:
        self.excitation.validate()
        if self.home_speed <= 0 or self.settle < 0 or self.stale_after <= 0:
            raise ConfigError("home_speed and stale_after must be > 0, settle >= 0")
        if not 0.0 <= self.max_gaps <= 1.0 or self.tries < 1:
            raise ConfigError("max_gaps must be in [0, 1] and tries >= 1")

    def steady(self, js_t: np.ndarray) -> bool:
        """Whether readings stamped ``js_t`` (T,) [s] have at most ``max_gaps`` of them late
        (``late_readings`` at the excitation's rate): a recording a fit can trust."""
        return late_readings(js_t, self.excitation.rate) <= self.max_gaps * max(len(js_t) - 1, 1)
