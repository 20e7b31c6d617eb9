"""SimRobot: the built-in MuJoCo arm as a stand-in for hardware, stepping in real time.

The physics runs in its own thread at ``physics_dt`` on the wall clock, behind the same
``Robot`` interface as a real arm, with what makes a real arm hard:

* sensing latency (``observe`` returns the newest sample at least ``sensing_latency`` old)
  and Gaussian joint position/velocity noise;
* actuation delay (a command takes effect ``actuation_delay`` after ``send_action``);
* held-out dynamics: link masses, joint damping and friction scaled or added, or a
  different robot (MJCF) with the same joints swapped in.

With a task's config as ``scene``, the arm stands in that task's scene (push's puck, lift's
cube, the goal markers), whose objects move under the arm's contacts: a policy that sees the
objects through cameras (``hardware.cameras.sim_camera``) can then run on it.
``scene_state`` is the whole scene's ground truth and ``reset(q, scene)`` places its objects
(``hardware.sim_task`` draws them as the task's resets do and judges success).

Interfaces are those of ros2_control: ``position`` (the joint PD servo runs inside the
physics step, as on the arm's own servo loop), ``velocity`` (a damping servo on the
commanded velocity) and ``effort`` (torques, with the model's gravity compensation).

    with SimRobot(SimRobotConfig(sensing_latency=0.002)) as robot:
        r = robot.observe(); robot.send_action(JointCommand.position(r.q))
"""

from __future__ import annotations

import collections
import dataclasses
import threading
import time
from collections.abc import Callable
from typing import NamedTuple

import mujoco
import numpy as np

from robot_rl.controllers.pd import realize_pd_in_model, realize_velocity_servo_in_model
from robot_rl.controllers.servo import hold_command
from robot_rl.errors import ConfigError
from robot_rl.hardware.configs import SimRobotConfig
from robot_rl.hardware.robot import HardLimits, JointCommand, JointReading, Robot
from robot_rl.hardware.timing import Rate
from robot_rl.robots import RobotSpec, get_robot
from robot_rl.sim.env import robot_bodies
from robot_rl.sim.scene import SceneBuilder
from robot_rl.sim.tasks import get_task
from robot_rl.sim.tasks.config import TaskConfig


class SceneState(NamedTuple):
    """The whole simulated scene's configuration (the model's layout)."""

    qpos: np.ndarray
    """(nq,) every joint's position: the arm's, the objects' free joints, fingers."""
    mocap_pos: np.ndarray
    """(nmocap, 3) the markers' positions (goals)."""


def build_model(cfg: SimRobotConfig, robot: RobotSpec,
                scene: TaskConfig | None = None) -> mujoco.MjModel:
    """The arm on its table (in ``scene``'s task scene, if given) with actuators for
    ``cfg.interface`` and the held-out dynamics."""
    if scene is None:
        spec = SceneBuilder(robot, cfg.physics_dt).spec
    else:
        if scene.robot != robot.name:
            raise ConfigError(f"the scene is task {scene.name!r} for robot {scene.robot!r}; "
                              f"the simulated arm is {robot.name!r}")
        scene = dataclasses.replace(scene, physics_dt=cfg.physics_dt)
        spec = get_task(scene.name).build_scene(robot, scene)
    kp, kd = cfg.servo_gains(robot)
    if cfg.interface == "position":
        realize_pd_in_model(spec, robot.actuator_names, kp, kd, robot.q_min, robot.q_max,
                            robot.tau_max)
    elif cfg.interface == "velocity":
        realize_velocity_servo_in_model(spec, robot.actuator_names, kd, robot.qd_max,
                                        robot.tau_max)
    model = spec.compile()
    robot.validate(model)
    for b in robot_bodies(model, robot):
        model.body_mass[b] *= cfg.mass_scale
        model.body_inertia[b] *= cfg.mass_scale
    for name, friction in zip(robot.joint_names, cfg.joint_friction(robot), strict=True):
        dof = int(model.joint(name).dofadr[0])
        model.dof_damping[dof] *= cfg.damping_scale
        model.dof_frictionloss[dof] += friction
    return model


def init_sim_arm(robot: Robot, cfg: SimRobotConfig | None
                 ) -> tuple[SimRobotConfig, RobotSpec]:
    """What both simulated arms (this thread's and the process's) set up alike: sets
    ``robot``'s joint names, interface and hard limits; returns the checked config and the
    robot's spec."""
    cfg = cfg or SimRobotConfig()
    spec = get_robot(cfg.robot)
    cfg.validate(spec)
    robot.joint_names = tuple(spec.joint_names)
    robot.interface = cfg.interface
    robot.limits = HardLimits.of(spec)
    return cfg, spec


class SimRobot(Robot):
    """The simulated arm (see module docstring). ``on_sample(reading)`` is called from the
    physics thread every ``sample_every`` physics steps (the ROS node publishes there)."""

    def __init__(self, cfg: SimRobotConfig | None = None, *,
                 on_sample: Callable[[JointReading], None] | None = None,
                 sample_every: int = 1, scene: TaskConfig | None = None):
        super().__init__()
        cfg, s = init_sim_arm(self, cfg)
        self.cfg, self.spec = cfg, s
        self.scene = scene
        """The task whose scene the arm stands in (None: the arm on its table)."""
        self.model = build_model(cfg, s, scene)
        self.data = mujoco.MjData(self.model)
        m = self.model
        self._qadr = np.array([m.joint(j).qposadr[0] for j in s.joint_names])
        self._dofs = np.array([m.joint(j).dofadr[0] for j in s.joint_names])
        self._act = np.array([m.actuator(a).id for a in s.actuator_names])
        self._grip = None if s.gripper is None else m.actuator(s.gripper.actuator).id
        self._site = m.site(s.ee_site).id
        self.on_sample = on_sample
        self.sample_every = max(1, int(sample_every))
        self.on_step: Callable[[], None] | None = None
        """Called from the physics thread after every step, measured or not."""
        self._rng = np.random.default_rng(cfg.seed)
        self._lock = threading.Lock()
        self._history: collections.deque[JointReading] = collections.deque()
        self._commands: collections.deque[tuple[float, JointCommand]] = collections.deque()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.sensing = True
        """False simulates a dead sensor: no new measurements (the physics goes on)."""
        self.steps = 0
        """Physics steps taken."""
        self.late_steps = 0
        """Physics steps that started more than one step late (the host could not keep up)."""
        self.applied: JointCommand | None = None
        """The command acting now."""
        self._stepped = False
        """``step`` drives the physics (simulated time), not the thread."""
        self._ran_real_time = False
        """The thread has stepped the physics since the last ``reset``."""
        self.reset(cfg.init_q)

    # -- Robot -----------------------------------------------------------------------------

    def connect(self) -> None:
        if self._thread is not None:
            return
        self._stepped, self._ran_real_time = False, True
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="sim-robot", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 5.0
        while self._read() is None and time.monotonic() < deadline:
            time.sleep(0.001)

    def close(self) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._thread = None

    def _read(self) -> JointReading | None:
        if self._stepped:  # simulated time: no latency, and the clock may run ahead
            with self._lock:
                return self._history[-1] if self._history else None
        newest_allowed = time.monotonic() - self.cfg.sensing_latency
        with self._lock:
            h = self._history
            while len(h) > 1 and h[1].stamp <= newest_allowed:
                h.popleft()
            if not h or h[0].stamp > newest_allowed:
                return None
            return h[0]

    def _write(self, cmd: JointCommand) -> None:
        with self._lock:
            self._commands.append((time.monotonic() + self.cfg.actuation_delay, cmd))

    # -- simulation ------------------------------------------------------------------------

    def reset(self, q: tuple[float, ...] | np.ndarray | None = None,
              scene: SceneState | None = None) -> None:
        """Put the arm at rest at ``q`` (default: home), holding there; with ``scene``, the
        scene's objects and markers where it says (its arm joints are overridden by ``q``)."""
        q = np.asarray(self.spec.home if q is None else q, dtype=np.float64)
        if scene is not None:
            m = self.model
            if np.shape(scene.qpos) != (m.nq,) or np.shape(scene.mocap_pos) != (m.nmocap, 3):
                raise ConfigError(f"a scene state of this model has qpos ({m.nq},) and "
                                  f"mocap_pos ({m.nmocap}, 3); got {np.shape(scene.qpos)} "
                                  f"and {np.shape(scene.mocap_pos)}")
        with self._lock:
            mujoco.mj_resetData(self.model, self.data)
            if scene is not None:
                self.data.qpos[:] = scene.qpos
                self.data.mocap_pos[:] = scene.mocap_pos
            self.data.qpos[self._qadr] = q
            s = self.spec  # at rest at q: the hold law's command towards q
            hold = hold_command(self.interface, q, q, np.zeros_like(q), np.asarray(s.kp),
                                np.asarray(s.kd), np.asarray(s.tau_max))
            self.data.ctrl[self._act] = hold
            if self._grip is not None:
                self.data.ctrl[self._grip] = self.spec.gripper.closed_ctrl  # type: ignore[union-attr]
            mujoco.mj_forward(self.model, self.data)
            self._commands.clear()
            self._history.clear()
            self.applied = JointCommand(self.interface, hold, hold=True)
            self._reset_stamp = time.monotonic()
            self._ran_real_time = self._thread is not None
            self._record(self._reset_stamp)

    def ee_pos(self) -> np.ndarray:
        """(3,) true end-effector position now (ground truth, for tests and benchmarks)."""
        with self._lock:
            return self.data.site_xpos[self._site].copy()

    def true_q(self) -> np.ndarray:
        """(n,) true joint positions now."""
        with self._lock:
            return self.data.qpos[self._qadr].copy()

    def scene_state(self) -> SceneState:
        """The whole scene now (ground truth: cameras render it, a judge scores it)."""
        with self._lock:
            return SceneState(self.data.qpos.copy(), self.data.mocap_pos.copy())

    def _record(self, stamp: float) -> JointReading | None:
        if not self.sensing:
            return None
        c, d = self.cfg, self.data
        q, qd = d.qpos[self._qadr].copy(), d.qvel[self._dofs].copy()
        if c.q_noise_std > 0:
            q += self._rng.normal(0.0, c.q_noise_std, q.shape)
        if c.qd_noise_std > 0:
            qd += self._rng.normal(0.0, c.qd_noise_std, qd.shape)
        reading = JointReading(q, qd, stamp, effort=d.actuator_force[self._act].copy())
        self._history.append(reading)
        # keep what the latency needs, plus a margin, and at least the newest sample
        horizon = stamp - c.sensing_latency - 0.1
        while len(self._history) > 2 and self._history[0].stamp < horizon:
            self._history.popleft()
        return reading

    def _apply_due(self, now: float) -> None:
        while self._commands and self._commands[0][0] <= now:
            _, cmd = self._commands.popleft()
            self.data.ctrl[self._act] = cmd.values
            if cmd.gripper is not None and self._grip is not None:
                self.data.ctrl[self._grip] = cmd.gripper
            self.applied = cmd

    def _run(self) -> None:
        rate = Rate(1.0 / self.cfg.physics_dt)
        while not self._stop.is_set():
            late = rate.sleep()
            if late > self.cfg.physics_dt:
                self.late_steps += 1
            self._step(time.monotonic())

    def _step(self, now: float, stamp: float | None = None) -> None:
        """One physics step at ``now``: the commands due apply, the physics steps, a
        reading is taken (stamped ``stamp``, default the clock after the step)."""
        with self._lock:
            self._apply_due(now)
            mujoco.mj_step(self.model, self.data)
            self.steps += 1
            reading = self._record(time.monotonic() if stamp is None else stamp)
        if reading is not None and self.on_sample is not None and \
                self.steps % self.sample_every == 0:
            self.on_sample(reading)
        if self.on_step is not None:
            self.on_step()

    def step(self, n: int = 1) -> None:
        """Advance the physics ``n`` steps on the caller's thread, in simulated time (the
        arm not connected: tests and benchmarks that must not depend on the host's timing).
        Commands sent apply at the next step (no actuation delay) and ``observe`` gives the
        newest reading (no sensing latency), stamped with the simulated time since the last
        ``reset`` added to that reset's reading's stamp."""
        if self._thread is not None or self._ran_real_time:
            raise RuntimeError("the simulated arm ran in real time: close() and reset() it "
                               "before step() (its clock restarts at the reset)")
        self._stepped = True
        for _ in range(n):
            self._step(float("inf"), stamp=self._reset_stamp + self.data.time
                       + self.model.opt.timestep)
