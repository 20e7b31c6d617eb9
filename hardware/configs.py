"""The configs of the deploy side: the runtime's loop, the simulated arm and camera, the
move home. Plain dataclasses, importable without MuJoCo or torch (``robot-rl deploy
--help`` reads them); the modules that act on them import them from here."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Literal

from robot_rl.errors import ConfigError

if TYPE_CHECKING:
    import numpy as np

    from robot_rl.robots import RobotSpec


Interface = Literal["position", "velocity", "effort"]
INTERFACES: tuple[Interface, ...] = ("position", "velocity", "effort")


@dataclasses.dataclass(kw_only=True)
class SimRobotConfig:
    """The simulated arm and the imperfections it has."""

    robot: str = "arm7"
    """Registry name of the robot (the built-in arm by default)."""
    interface: Interface = "position"
    """Command interface: position, velocity or effort."""
    physics_dt: float = 0.002
    """Physics step, run in real time [s]."""
    kp: tuple[float, ...] | None = None
    """Position servo stiffness per joint (default: the robot's) [Nm/rad]."""
    kd: tuple[float, ...] | None = None
    """Servo damping per joint (default: the robot's) [Nm s/rad]."""
    sensing_latency: float = 0.0
    """Age of the newest measurement ``observe`` can return [s]."""
    q_noise_std: float = 0.0
    """Std of Gaussian noise on measured joint positions [rad]."""
    qd_noise_std: float = 0.0
    """Std of Gaussian noise on measured joint velocities [rad/s]."""
    actuation_delay: float = 0.0
    """Time from ``send_action`` until the command acts [s]."""
    mass_scale: float = 1.0
    """Scale of every arm link's mass and inertia (held-out dynamics)."""
    damping_scale: float = 1.0
    """Scale of the arm joints' damping."""
    frictionloss: float | tuple[float, ...] = 0.0
    """Dry friction added to the arm joints: one value for every joint, or one per joint
    [Nm]."""
    init_q: tuple[float, ...] | None = None
    """Initial joint positions (default: the robot's home pose) [rad]."""
    seed: int = 0
    """Seed of the measurement noise."""

    def servo_gains(self, robot: RobotSpec) -> tuple[np.ndarray, np.ndarray]:
        """(kp, kd) per joint: this arm's servo stiffness and damping, the robot's own
        where not set."""
        import numpy as np

        kp = self.kp if self.kp is not None else robot.kp
        kd = self.kd if self.kd is not None else robot.kd
        return np.asarray(kp, dtype=np.float64), np.asarray(kd, dtype=np.float64)

    def joint_friction(self, robot: RobotSpec) -> np.ndarray:
        """The dry friction added to each joint [Nm]."""
        import numpy as np

        return np.broadcast_to(np.asarray(self.frictionloss, dtype=np.float64),
                               (robot.num_joints,)).copy()

    def _min_friction(self) -> float:
        f = self.frictionloss
        return float(min(f)) if isinstance(f, (tuple, list)) else float(f)

    def validate(self, robot: RobotSpec) -> None:
        n = robot.num_joints
        if self.interface not in ("position", "velocity", "effort"):
            raise ConfigError(f"interface must be position, velocity or effort, got "
                              f"{self.interface!r}")
        if self.physics_dt <= 0:
            raise ConfigError("physics_dt must be positive")
        friction = None if isinstance(self.frictionloss, (int, float)) else self.frictionloss
        for name, v in (("kp", self.kp), ("kd", self.kd), ("init_q", self.init_q),
                        ("frictionloss", friction)):
            if v is not None and len(v) != n:
                raise ConfigError(f"{name} has {len(v)} entries; robot {robot.name!r} has {n} "
                                  f"joints")
        if min(self.sensing_latency, self.actuation_delay, self.q_noise_std,
               self.qd_noise_std, self._min_friction()) < 0:
            raise ConfigError("latency, delay, noise and frictionloss must be >= 0")
        if self.mass_scale <= 0 or self.damping_scale < 0:
            raise ConfigError("mass_scale must be > 0 and damping_scale >= 0")


@dataclasses.dataclass(kw_only=True)
class SimCameraConfig:
    """How the simulated cameras deliver frames."""

    fps: float = 30.0
    """Captures per second (a RealSense streams at 6, 15, 30, 60 or 90)."""
    latency: float = 0.0
    """Capture to delivery [s] (exposure, readout, USB, driver)."""
    drop_prob: float = 0.0
    """Probability that a capture is lost."""
    seed: int = 0
    """Seed of the drops."""

    def validate(self) -> None:
        if not self.fps > 0:
            raise ConfigError(f"camera fps must be positive, got {self.fps}")
        if self.latency < 0 or not 0 <= self.drop_prob < 1:
            raise ConfigError("camera latency must be >= 0 and drop_prob in [0, 1)")


@dataclasses.dataclass(kw_only=True)
class HomeMoveConfig:
    """Speeds and tolerances of the move home."""

    joint_speed: float = 0.5
    """Joint action spaces: the fastest joint's speed [rad/s]."""
    joint_tolerance: float = 0.03
    """Joint action spaces: arrived with every joint within this of home [rad] (the simulator
    starts episodes within ``init_joint_noise``, 0.05 rad, of home)."""
    lin_speed: float = 0.6
    """ee_delta: the hand's speed as a fraction of the action space's full offset per step."""
    pos_tolerance: float = 0.02
    """ee_delta: arrived with the hand within this of its home position [m]..."""
    rot_tolerance: float = 0.05
    """...and its orientation within this of home [rad]. An OSC arm with dry joint friction
    creeps over its last tenths of a radian (the wrist's share of the OSC torque shrinks with
    the error); there 0.15 ends the move in 2-6 s instead of its time-out."""
    still: float = 0.2
    """Arrived only with every joint slower than this [rad/s]."""

    def validate(self) -> None:
        for name in ("joint_speed", "joint_tolerance", "lin_speed", "pos_tolerance",
                     "rot_tolerance", "still"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"the move home's {name} must be > 0, got "
                                  f"{getattr(self, name)}")


@dataclasses.dataclass(kw_only=True)
class DeployConfig:
    """How the policy is run on the robot."""

    rate_hz: float = 500.0
    """Inner loop rate: commands, torque controllers and the shield's torque layers [Hz];
    a whole multiple of the policy's control rate (which is in the artifact)."""
    gate: bool | None = None
    """Screen actions with the safety critic (default: when the artifact has one)."""
    watchdog_periods: int = 3
    """Hold when no fresh reading arrived for this many ticks."""
    max_frame_age: float = 0.1
    """Hold when a camera's newest frame is older than this [s] (policies that see cameras;
    a 30 fps camera delivers every 33 ms)."""
    goal: tuple[float, float, float] | None = None
    """Goal point of the task (world frame, metres); default: drawn from the task's resets."""
    autostart: bool = True
    """Start as soon as the first reading arrives (else wait for ``start``)."""
    seed: int = 0
    """Seed of the goal draw and the gate's candidate noise."""
    sliced_policy: bool = True
    """Run the policy step in the loop's idle time, stage by stage (observation; network and
    gate; shield, action space and targets; success test), so no tick waits for it; its targets
    apply from the first tick after they are ready. False: the whole step runs inside the tick
    it is due in (deterministic replay, tests)."""
    spin_us: float = 0.0
    """Busy-wait this long before each deadline instead of sleeping [µs]: a core kept busy
    wakes on time and keeps its caches and clock warm for the tick (costs that core)."""
    realtime_priority: int = 0
    """SCHED_FIFO priority (1-99) of the loop thread in ``run`` (Linux; needs root or an
    rtprio limit; a refusal is logged and the loop runs without). 0: leave the scheduler."""
