"""Recording an excitation on an arm (``robot-rl sysid record``).

    with SimRobotProcess(cfg) as robot:                  # or a ROS 2 arm, or the thread arm
        rec = record_excitation(robot, RecordConfig(), log=print)

The arm first moves to its home pose (a straight line in joint space at ``home_speed``),
settles there, then plays the excitation (``sysid.excitation``) at the excitation's rate.
Every target passes the safety shield's joint-target layers (workspace, joint limits, speed
and acceleration, torque, table floor; the same layers a policy's targets pass) and the
robot's own hard-limit clip; what was really sent is logged with its send time. Every new
joint reading (position, velocity, effort where the arm reports it) is logged with its own
stamp and the time it arrived. The arm holds where it is at the end, and on any error.

Position interface only: the excitation is a position trajectory, and the replay models the
arm's position servo. Send times and reading stamps must be on one clock (the simulated
arms stamp with ``time.monotonic``, as this loop does; ``nodes.sysid_node`` maps a JointState's
header stamp onto it).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable

import numpy as np

from robot_rl.controllers import Targets
from robot_rl.controllers.arm_model import ArmModel
from robot_rl.controllers.shield import JointTrack, SafetyShield
from robot_rl.errors import ConfigError
from robot_rl.hardware.configs import SimRobotConfig
from robot_rl.hardware.robot import JointCommand, JointReading, Robot, RobotError
from robot_rl.hardware.sim_robot import build_model
from robot_rl.hardware.timing import Rate
from robot_rl.recording.arm_import import ArmStreams
from robot_rl.robots import RobotSpec, get_robot
from robot_rl.sysid.configs import RecordConfig, late_readings
from robot_rl.sysid.excitation import excitation

Vec3 = tuple[float, float, float]


@dataclasses.dataclass
class Recording:
    """An excitation as recorded: the streams (times in seconds from the first reading)
    and how the recording went."""

    robot: str
    joint_names: tuple[str, ...]
    rate: float
    """Command rate [Hz]."""
    streams: ArmStreams
    reading_age: np.ndarray
    """(M,) each reading's age when it arrived [s]: the sensing latency, where the arm's
    stamps are its sampling times."""
    shield_moved: int
    """Commands the shield changed."""
    late_ticks: int
    """Ticks that woke more than a period late."""
    seconds: float
    """Wall-clock length of the logged part [s]."""

    @property
    def sensing_latency(self) -> float:
        """Median age of a reading on arrival [s]."""
        return float(np.median(self.reading_age)) if len(self.reading_age) else 0.0

    @property
    def gaps(self) -> int:
        """Readings stamped more than two command periods after the one before."""
        return late_readings(self.streams.js_t, self.rate)


def record_steady(robot: Robot, cfg: RecordConfig | None = None,
                  log: Callable[[str], None] | None = None,
                  stop: threading.Event | None = None) -> Recording:
    """``record_excitation``, made again (up to ``cfg.tries`` times in all) while more than
    ``cfg.max_gaps`` of its readings came late: the recording a fit can trust."""
    cfg = cfg or RecordConfig()
    cfg.validate()
    say = log or (lambda _: None)
    for attempt in range(1, cfg.tries + 1):
        rec = record_excitation(robot, cfg, log=say, stop=stop)
        if cfg.steady(rec.streams.js_t):
            return rec
        n = max(len(rec.streams.js_t) - 1, 1)
        what = (f"{rec.gaps} of {n} readings came more than {2e3 / rec.rate:.0f} ms (two "
                f"periods) after the one before ({rec.gaps / n:.1%}; --record.max-gaps "
                f"{cfg.max_gaps:.1%}): the host stalled the arm or this process")
        if attempt < cfg.tries:
            say(f"{what}; recording again ({attempt + 1} of {cfg.tries})")
        else:
            say(f"{what}; kept after {cfg.tries} tries: fit it with care, or record on a "
                f"quieter machine")
    return rec


def record_excitation(robot: Robot, cfg: RecordConfig | None = None,
                      log: Callable[[str], None] | None = None,
                      stop: threading.Event | None = None) -> Recording:
    """Play and log the excitation on a connected ``robot`` (module docstring). Setting
    ``stop`` (from another thread) ends it early: the arm holds and ``RobotError`` is
    raised, as for a stale arm."""
    cfg = cfg or RecordConfig()
    cfg.validate()
    say = log or (lambda _: None)
    if robot.interface != "position":
        raise ConfigError(f"sysid record plays position targets; this arm's interface is "
                          f"{robot.interface!r}")
    spec = _spec_of(robot)
    model = build_model(SimRobotConfig(robot=spec.name), spec)
    arm = ArmModel(model, spec)
    shield = SafetyShield(cfg.shield, spec, cfg.workspace_lo, cfg.workspace_hi,
                          np.asarray(spec.kp, dtype=np.float64),
                          np.asarray(spec.kd, dtype=np.float64),
                          control_dt=1.0 / cfg.excitation.rate)
    shield.bind(model)
    first = _first_reading(robot, cfg.stale_after * 10)
    rate_hz = cfg.excitation.rate
    _, traj = excitation(spec, cfg.excitation)
    home = np.asarray(spec.home, dtype=np.float64)
    move = max(1, int(np.ceil(np.abs(home - first.q).max() / cfg.home_speed * rate_hz)))
    ramp = first.q + (home - first.q) * (np.arange(1, move + 1) / move)[:, None]
    settle = np.tile(home, (max(1, round(cfg.settle * rate_hz)), 1))
    plan = np.concatenate([ramp, settle, traj])
    logged_from = move
    say(f"moving home ({move / rate_hz:.1f} s), then {len(plan) - move} ticks at "
        f"{rate_hz:g} Hz ({(len(plan) - move) / rate_hz:.1f} s)")
    js: list[tuple[float, np.ndarray, np.ndarray, np.ndarray | None, float]] = []
    cmds: list[tuple[float, np.ndarray]] = []
    track = JointTrack(v=np.zeros((1, spec.num_joints)))
    rate = Rate(rate_hz)
    late = moved = 0
    last_stamp, last_new = first.stamp, time.monotonic()
    reading = first
    t_start = 0.0
    try:
        for i, target in enumerate(plan):
            if rate.sleep() > rate.period:
                late += 1
            if stop is not None and stop.is_set():
                raise RobotError(f"recording stopped after {max(0, i - logged_from) / rate_hz:.1f}"
                                 f" s of {(len(plan) - logged_from) / rate_hz:.1f} s")
            r = robot.observe()
            now = time.monotonic()
            if r is not None and r.stamp != last_stamp:
                reading, last_stamp, last_new = r, r.stamp, now
                if i >= logged_from:
                    js.append((r.stamp, r.q.copy(), r.qd.copy(),
                               None if r.effort is None else r.effort.copy(), now))
            elif now - last_new > cfg.stale_after:
                raise RobotError(f"no new joint reading for {now - last_new:.3f} s "
                                 f"(stale_after {cfg.stale_after} s): recording stopped")
            safe, _ = shield.filter_targets(Targets("joint", joint=target[None]),
                                            arm.state(reading.q, reading.qd), track)
            assert safe.joint is not None
            sent_at = time.monotonic()
            sent = robot.send_action(JointCommand.position(safe.joint[0]))
            if i >= logged_from:
                if i == logged_from:
                    t_start = sent_at
                cmds.append((sent_at, sent.values.copy()))
                moved += int(not np.allclose(sent.values, target, atol=1e-9, rtol=0.0))
            if (i - logged_from + 1) % round(5 * rate_hz) == 0 and i >= logged_from:
                say(f"  {(i - logged_from + 1) / rate_hz:5.1f} s recorded, "
                    f"{len(js)} readings")
    finally:
        _hold(robot, reading)
    if len(js) < 2:
        raise RobotError("the arm sent fewer than two joint readings while recording")
    return _recording(spec, rate_hz, js, cmds, moved, late, time.monotonic() - t_start)


def _spec_of(robot: Robot) -> RobotSpec:
    """The registered robot whose joints ``robot`` has (the built-in arm's, by default): the
    registered ones before those ``robot-rl robot import`` wrote."""
    from robot_rl.robots import list_robots, registered_robots

    registered = registered_robots()
    for name in registered + [n for n in list_robots() if n not in registered]:
        spec = get_robot(name)
        if tuple(spec.joint_names) == tuple(robot.joint_names):
            return spec
    raise ConfigError(f"no registered robot has the joints {list(robot.joint_names)}")


def _first_reading(robot: Robot, timeout: float) -> JointReading:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = robot.observe()
        if r is not None:
            return r
        time.sleep(0.002)
    raise RobotError(f"no joint reading from the arm within {timeout:.1f} s")


def _hold(robot: Robot, reading: JointReading) -> None:
    """Hold at the newest measured pose (on the way out, whatever happened)."""
    try:
        robot.send_action(JointCommand.position(reading.q, hold=True))
    except RobotError:
        pass


def _recording(spec: RobotSpec, rate: float,
               js: list[tuple[float, np.ndarray, np.ndarray, np.ndarray | None, float]],
               cmds: list[tuple[float, np.ndarray]], moved: int, late: int,
               seconds: float) -> Recording:
    t0 = js[0][0]
    stamps = np.array([s for s, *_ in js])
    effort = None if any(e is None for *_, e, _ in js) else \
        np.stack([e for *_, e, _ in js])  # type: ignore[misc]
    streams = ArmStreams(
        js_t=stamps - t0, q=np.stack([q for _, q, *_ in js]),
        qd=np.stack([qd for _, _, qd, *_ in js]),
        cmd_t=np.array([t for t, _ in cmds]) - t0, cmd=np.stack([c for _, c in cmds]),
        effort=effort)
    ages = np.array([arrived - s for s, *_, arrived in js])
    return Recording(robot=spec.name, joint_names=tuple(spec.joint_names), rate=rate,
                     streams=streams, reading_age=ages, shield_moved=moved, late_ticks=late,
                     seconds=seconds)
