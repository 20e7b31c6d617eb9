"""The deploy runtime: an exported policy driving a Robot at a fixed rate, failing safe.

One tick (``DeployRuntime.tick``), at ``rate_hz``:

    robot reading -> checks (shape, finite, fresh) -> watchdog
    camera frames (a policy that sees cameras) -> age check
      every ``decimation`` ticks (the policy's control rate):
        task observation builder (the env's own terms) + newest images -> policy
        -> safety-critic gate
        -> shield.filter_action -> action space -> shield.filter_targets
      every tick: controller (joint targets pass through to a position servo, become a
        velocity for a velocity interface; torque controllers and the shield's torque layers
        run on the fresh state; a ramped command, ``MotionConfig.ramp``, moves along its
        ramp tick by tick) -> Robot.send_action (hard limits) -> the wire

A due policy step is begun by the tick and run by ``idle`` in the time before the next one, a
stage at a time (``DeployConfig.sliced_policy``; off, the tick runs it whole); its targets
apply from the tick after it completes.

The runtime acts through the training env's own ``ActionPipeline`` (action space, controller
and shield, built from the artifact's ``policy.json``), the one held by its ``TaskObserver``:
``act`` at policy steps, ``command`` every tick, ``hold_command`` while held. ``run`` adds the
deadline-scheduled loop and timing statistics, and the ROS 2 policy node calls ``tick`` on
each JointState instead.

Two hooks serve recording on the robot (``recording/robot_recorder.py``): ``override``
(obs, reading, arm state) -> action or None lets a person act instead of the policy for a
step (a teleoperated step; with a policy running, an intervention: the gate is skipped, the
shield is not), and ``on_step(PolicyStep)`` receives every policy step with the task's
reward, cost and success at the state it observed.

A policy that sees cameras (a pixel student) takes ``cameras`` ({name: Camera}: a
RealSense, an image topic, the simulated arm's ``SimArmCameras``); ``hardware.camera_feed``
turns their newest frames into the artifact's image inputs.

Fail-safe rules: until ``start`` the runtime holds (sends a hold command: the position where
holding began, zero velocity, or a PD torque towards it). No fresh reading for
``watchdog_periods`` ticks: hold, logged; it stays held after data returns until an explicit
``start``. A camera whose newest frame is older than ``max_frame_age`` holds alike (and
``start`` waits for fresh frames). ``estop`` latches a hold until ``reset``. NaN/ill-shaped
readings are dropped, logged (rate-limited) and never reach the policy. ``close`` (and
SIGINT/SIGTERM in ``run``) sends a final hold.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

import numpy as np

from robot_rl.controllers import EStop, Targets, Watchdog, motion_acted
from robot_rl.controllers.arm_model import ArmModel
from robot_rl.controllers.joint import home_joint_inertia
from robot_rl.controllers.servo import host_pd_min_rate
from robot_rl.errors import ConfigError
from robot_rl.export.policy import GraphInput
from robot_rl.hardware.camera_feed import CameraFeed
from robot_rl.hardware.cameras.base import Camera
from robot_rl.hardware.configs import DeployConfig
from robot_rl.hardware.deploy_stats import DeployStats
from robot_rl.hardware.observation import TaskObserver, task_config_from_meta
from robot_rl.hardware.robot import JointCommand, JointReading, Robot, RobotError
from robot_rl.hardware.runtime_hooks import Override, PolicyStep
from robot_rl.hardware.telemetry import Telemetry
from robot_rl.hardware.timing import (
    Rate,
    Throttle,
    loop_thread_settings,
)

if TYPE_CHECKING:
    from robot_rl.controllers.pipeline import ActionPipeline
    from robot_rl.robots import RobotSpec

Mode = Literal["idle", "running", "estop"]
_log = logging.getLogger("robot_rl.deploy")


class RuntimePolicy(Protocol):
    """What the runtime runs: an exported ``robot_rl.export.Policy``, or another object with
    its members (the fine-tuning loop's ``LivePolicy``). An optional ``reset()`` starts a new
    episode (a chunked policy)."""

    @property
    def path(self) -> str | Path: ...

    @property
    def meta(self) -> dict[str, Any]: ...

    @property
    def obs_dim(self) -> int: ...

    @property
    def act_dim(self) -> int: ...

    @property
    def joint_names(self) -> list[str]: ...

    @property
    def images(self) -> list[GraphInput]: ...

    @property
    def cameras(self) -> list[str]: ...

    @property
    def has_cost_critic(self) -> bool: ...

    def __call__(self, obs: np.ndarray, images: dict[str, np.ndarray] | None = None
                 ) -> np.ndarray: ...

    def gate(self, obs: np.ndarray, a: np.ndarray) -> tuple[np.ndarray, bool, bool]: ...


class DeployRuntime:
    """Runs an exported policy on a robot (see module docstring)."""

    def __init__(self, policy: RuntimePolicy, robot: Robot, cfg: DeployConfig | None = None,
                 log: Callable[[str], object] = _log.warning, *,
                 cameras: Mapping[str, Camera] | None = None):
        self.cfg = cfg = cfg or DeployConfig()
        self.policy, self.robot, self.log = policy, robot, log
        self.feed: CameraFeed | None = None
        """The policy's camera inputs (None for a policy that sees no camera)."""
        if policy.images:
            if cameras is None:
                raise ConfigError(f"the artifact {policy.path} sees cameras "
                                  f"({', '.join(policy.cameras)}): give the runtime those "
                                  f"cameras (robot-rl deploy --robot sim renders them from "
                                  f"the simulated arm)")
            self.feed = CameraFeed(policy.images, cameras, cfg.max_frame_age)
        if list(robot.joint_names) != policy.joint_names:
            raise RobotError(
                f"the artifact {policy.path} is for a robot with joints {policy.joint_names}; "
                f"this robot has {list(robot.joint_names)}: refusing to start")
        meta = policy.meta
        task_cfg = task_config_from_meta(meta)
        layout = [(t["name"], int(t["width"])) for t in meta["observation"]["layout"]]
        self.observer = obs = TaskObserver(task_cfg, layout, seed=cfg.seed)
        self.pipeline = pipe = obs.pipeline
        """The env's action pipeline: the runtime acts exactly as the training env does."""
        self.arm = ArmModel(obs.model, obs.robot)
        self._mass = pipe.needs_mass
        if pipe.dim != policy.act_dim or obs.obs_dim != policy.obs_dim:
            raise ConfigError(f"artifact dims (obs {policy.obs_dim}, act {policy.act_dim}) do "
                              f"not match task {task_cfg.name!r} (obs {obs.obs_dim}, act "
                              f"{pipe.dim})")
        ratio = cfg.rate_hz * task_cfg.control_dt
        self.decimation = round(ratio)
        if self.decimation < 1 or abs(ratio - self.decimation) > 1e-6:
            raise ConfigError(f"rate_hz {cfg.rate_hz:g} must be a whole multiple of the "
                              f"policy's control rate {1 / task_cfg.control_dt:g} Hz")
        lag = float(np.max(np.asarray(pipe.controller.kd) / np.asarray(pipe.controller.kp)))
        if pipe.shield.ramp > lag:
            raise ConfigError(
                f"the policy ramps its joint commands over {pipe.shield.ramp:g}-s control "
                f"steps, longer than the PD law's lag ({lag:.3g} s): there the shield's "
                f"bounds were measured to fail under attack (10 Hz on arm7: 1.5 mrad past a "
                f"hard limit, 1.05 of a speed limit; docs/control.md), so such a policy is "
                f"for simulation only; ramped policies deploy at control steps up to the lag")
        if pipe.shield.ramp > 0 and self.decimation < 2:
            raise ConfigError(f"the policy ramps its joint commands over each control step "
                              f"(motion.ramp); rate_hz {cfg.rate_hz:g} sends one command per "
                              f"step, so the arm would see a step, not the ramp its shield "
                              f"modelled: tick faster (the default 500 Hz)")
        if robot.interface not in pipe.interfaces:
            raise RobotError(f"the policy's controller ({type(pipe.controller).__name__}) "
                             f"needs the {' or '.join(pipe.interfaces)} interface; the robot "
                             f"takes {robot.interface}")
        if robot.interface == "effort" and pipe.in_model:
            self._check_host_pd_rate(pipe, obs.robot, task_cfg.control_dt)
        self.period = 1.0 / cfg.rate_hz
        if not 0 <= cfg.spin_us * 1e-6 < self.period:
            raise ConfigError(f"spin_us must be in [0, {self.period * 1e6:.0f}) (the period), "
                              f"got {cfg.spin_us:g}")
        self.use_gate = policy.has_cost_critic if cfg.gate is None else cfg.gate
        if self.use_gate and not policy.has_cost_critic:
            raise ConfigError(f"--gate needs a cost critic; {policy.path} has none")
        self.estop_latch = EStop()
        self.watchdog = Watchdog(self.period, cfg.watchdog_periods)
        self.stats = DeployStats()
        self._bad = Throttle(log)
        self._running = False
        self._autostart = cfg.autostart
        self._reading: JointReading | None = None
        self._now = 0.0
        """The current tick's time (on the clock of the readings' stamps)."""
        self._last_stamp = -float("inf")
        self._hold_q: np.ndarray | None = None
        self._targets: Targets | None = None
        self._target_ticks = 0
        """Ticks the current targets have been sent on (a ramped command's phase)."""
        self._k = 0
        self._step_due = False
        self._pending: Iterator[str] | None = None
        """The policy step in progress (a generator of its stages), if any."""
        self._pending_ticks = 0
        self._stage = ""
        """The last stage of the pending step that ran ("" before the first)."""
        self._idle_margin = min(100e-6, 0.05 * self.period)
        """Idle work stops this long before the next deadline (the wake-up's margin)."""
        self._stage_cost: dict[str, float] = {}
        """A decaying maximum of each stage's duration [s], to fit stages into idle time."""
        A = policy.act_dim
        self.action = np.zeros(A, dtype=np.float32)
        """(A,) the last applied action (after the shield's action layers); float32, as the
        env keeps it, so the shield's rate limit rounds alike on both sides."""
        self.prev_action = np.zeros(A, dtype=np.float32)
        self._no_flag = np.zeros(1, dtype=bool)
        self._shield_acted = False
        """Whether a layer of ``MOTION_LAYERS`` reshaped the last applied action, at its
        policy step or at a tick since (the torque stage): the ``shield`` reward term of the
        step after it, as the env charges it (the reward read at a policy step is that of
        the last action)."""
        self.succeeded = False
        """The task's success test at the last policy step."""
        self.override: Override | None = None
        """A person's action instead of the policy's (see module docstring)."""
        self.on_step: Callable[[PolicyStep], None] | None = None
        """Called with every policy step (see module docstring)."""
        self.last_sent: JointCommand | None = None
        self.telemetry: Telemetry | None = None
        """Where each tick, policy step and event goes for telemetry (``hardware.telemetry``;
        None: nowhere)."""
        self._held = False
        self._one = np.zeros(1, dtype=np.int64)
        """The index of the one robot, for the pipeline's batched resets."""
        self._new_goal()
        self._warm_up()

    def _warm_up(self) -> None:
        """Pay the first-call costs (onnxruntime's first run, lazy torch and MuJoCo set-up) of
        the observation, the policy and the gate now, not in the first policy step, where they
        took long enough to starve the tick that follows."""
        home = np.asarray(self.observer.robot.home, dtype=np.float64)
        obs = self.observer(home, np.zeros_like(home), self.action, self.prev_action)
        a = self._policy(obs, None if self.feed is None else self.feed.blank())
        if self.use_gate:
            self.policy.gate(obs, a)
        self._reset_policy()  # a chunked policy starts its first chunk at the first step

    def _reset_policy(self) -> None:
        """A new episode for the policy: a chunked one drops its history and queue (a
        policy object without ``reset`` is stateless)."""
        reset = getattr(self.policy, "reset", None)
        if reset is not None:
            reset()

    def _check_host_pd_rate(self, pipe: ActionPipeline, spec: RobotSpec,
                            control_dt: float) -> None:
        """Joint targets on an effort interface: the joint PD law runs here, once a tick
        (``controllers.servo.pd_effort``); refuse a rate too slow to sample its damping."""
        lowest = host_pd_min_rate(np.asarray(pipe.controller.kd), home_joint_inertia(spec))
        if self.cfg.rate_hz < lowest:
            step = 1.0 / control_dt
            need = step * np.ceil(lowest / step)
            raise ConfigError(
                f"on an effort interface this policy's joint PD law runs on the host, once a "
                f"tick; at rate_hz {self.cfg.rate_hz:g} it samples the law's damping too "
                f"coarsely for {spec.name} (the arm would oscillate): tick at {need:g} Hz or "
                f"faster, or command a position interface")

    # -- state machine ---------------------------------------------------------------------

    @property
    def mode(self) -> Mode:
        if self.estop_latch.active:
            return "estop"
        return "running" if self._running else "idle"

    def start(self, now: float | None = None) -> tuple[bool, str]:
        """Start acting (needs fresh data and no e-stop); returns (started, why)."""
        now = time.monotonic() if now is None else now
        if self.estop_latch.active:
            return False, f"e-stop active ({self.estop_latch.reason}); reset first"
        if self._reading is None or self.watchdog.stale(now):
            return False, "no fresh joint states"
        if self.feed is not None and (why := self.feed.stale(now)) is not None:
            return False, f"no fresh camera frames ({why})"
        if not self._running:
            self._k = 0
            self._targets = None
            self.action = np.zeros_like(self.action)
            self.prev_action = np.zeros_like(self.prev_action)
            self._shield_acted = False
            self.pipeline.reset(self._one, self._reading.q[None])
            self._reset_policy()  # a chunk begun before a hold is not resumed
            self._running = True
            self._event(now, "running")
        return True, "running"

    def stop(self, reason: str = "stop requested") -> None:
        """Hold where the arm is now."""
        self._enter_hold(reason)

    def estop(self, reason: str = "e-stop") -> None:
        """Latch a hold until ``reset``."""
        self.estop_latch.trigger(reason)
        self._event(time.monotonic(), f"e-stop: {reason}")
        self._enter_hold(f"e-stop: {reason}")

    def reset(self) -> None:
        """Release the e-stop and start a new episode (new goal); stays held until ``start``,
        at the position of the next reading (the arm may have been moved meanwhile)."""
        self.estop_latch.reset()
        self.moved()
        self._new_goal()
        self._event(time.monotonic(), "reset")

    def _event(self, t: float, text: str) -> None:
        if self.telemetry is not None:
            self.telemetry.event(t, text)

    def moved(self) -> None:
        """The arm was moved by other means while held (a person, the simulator's reset):
        hold at the position of the next reading, not the last one."""
        self._enter_hold("moved", quiet=True)
        self._hold_q = None

    def set_goal(self, pos: tuple[float, float, float] | np.ndarray) -> None:
        self.observer.set_goal(pos)
        self.succeeded = False

    @property
    def goal(self) -> np.ndarray | None:
        return self.observer.goal

    @property
    def reading(self) -> JointReading | None:
        """The newest valid joint reading (None before the first)."""
        return self._reading

    def _new_goal(self) -> None:
        self.observer.sample_goal(self.cfg.seed + self.estop_latch.count)
        if self.cfg.goal is not None:
            self.observer.set_goal(self.cfg.goal)
        self.succeeded = False

    def _enter_hold(self, reason: str, quiet: bool = False) -> None:
        if self._running and not quiet:
            self.log(f"holding: {reason}")
            self._event(time.monotonic(), f"holding: {reason}")
        self._running = False
        self._pending, self._stage = None, ""  # a step begun before the hold is dropped
        self._hold_q = None if self._reading is None else self._reading.q.copy()

    # -- one tick --------------------------------------------------------------------------

    def tick(self, reading: JointReading | None, now: float | None = None
             ) -> JointCommand | None:
        """Take a reading (None: none new), send one command; returns what was sent (None
        before the first reading, when there is nothing to hold at)."""
        t0 = time.monotonic()
        now = t0 if now is None else now
        self._now = now
        fresh = self._accept(reading, now)
        stale = self.watchdog.stale(now)
        if self._running and stale:
            n = self.cfg.watchdog_periods
            if self.watchdog.last is not None:
                self.stats.watchdog_hold.add(now - self.watchdog.last)
            self._enter_hold(f"no fresh joint states for {n} periods "
                             f"({n * self.period * 1e3:.1f} ms); waiting for data and start")
        blind = None
        if self.feed is not None:
            self.feed.poll()
            blind = self.feed.stale(now)
            if self._running and blind is not None:
                self.stats.camera_holds += 1
                self._enter_hold(f"{blind}; waiting for frames and start")
        if self._autostart and fresh and not stale and blind is None:
            self._autostart = False
            self.start(now)
        if self._running and self._reading is not None:
            cmd = self._act(self._reading)
        else:
            cmd = self._hold_command(fresh_state=not stale)
        sent = None if cmd is None else self.robot.send_action(cmd)
        self.last_sent = sent
        if self.telemetry is not None:
            self.telemetry.tick(now, self._reading, sent)
        st = self.stats
        st.ticks += 1
        st.hold_ticks += cmd is None or cmd.hold
        st.compute.add(time.monotonic() - t0)
        return sent

    def _accept(self, r: JointReading | None, now: float) -> bool:
        if r is None or r.stamp <= self._last_stamp:
            return False
        n = len(self.robot.joint_names)
        shaped = np.shape(r.q) == (n,) and np.shape(r.qd) == (n,)
        finite = shaped and bool(np.isfinite(r.q).all() and np.isfinite(r.qd).all())
        if not finite:
            self.stats.bad_readings += 1
            why = "NaN/inf values" if shaped else f"shape {np.shape(r.q)}, expected ({n},)"
            self._bad(f"dropped a joint reading: {why}")
            return False
        self._last_stamp = r.stamp
        self._reading = r
        self.watchdog.feed(now)
        return True

    def _act(self, r: JointReading) -> JointCommand | None:
        arm = self.arm.state(r.q, r.qd, mass=self._mass)
        if self._k % self.decimation == 0:
            self._step_due = True
        self._k += 1
        if self._pending is not None:
            self._pending_ticks += 1
        if self._step_due:
            if self._pending is None:
                self._step_due = False
                self._pending, self._stage = self._policy_stages(r, arm), ""
                self._pending_ticks = 0
                if not self.cfg.sliced_policy:
                    self.idle()
            else:
                self.stats.policy_waits += 1
        t = self._targets
        if t is None:  # the first policy step since start is still running
            return self._hold_command(fresh_state=True)
        self._target_ticks += 1
        values, flags = self.pipeline.command(t, arm, self.robot.interface,
                                              self._target_ticks / self.decimation)
        if flags:  # the torque stage's layers (a torque controller) count for the reward
            self._shield_acted |= bool(motion_acted(flags, self._no_flag)[0])
        gripper = None if t.gripper is None else float(t.gripper[0, 0])
        return JointCommand(self.robot.interface, values[0], gripper, hold=self._held)

    def idle(self, until: float | None = None) -> None:
        """Advance the policy step in progress by whole stages while each one's expected
        duration fits before ``until`` (``time.monotonic``); None: finish it. A step pending
        for half a policy period runs its next stage regardless, so it always completes."""
        while self._pending is not None:
            forced = self._pending_ticks >= max(1, self.decimation // 2)
            stage = _NEXT_STAGE[self._stage]
            if until is not None and not forced and \
                    time.monotonic() + self._stage_cost.get(stage, 0.0) > until:
                return
            t0 = time.monotonic()
            try:
                self._stage = next(self._pending)
            except StopIteration:
                self._pending, self._stage = None, ""
            spent = time.monotonic() - t0
            self._stage_cost[stage] = max(spent, 0.99 * self._stage_cost.get(stage, 0.0))
            if until is not None and forced:
                return  # one forced stage per call

    def _policy_stages(self, r: JointReading, arm: Any) -> Iterator[str]:
        """The policy step as stages (names yielded after each): observation -> policy ->
        gate -> shield -> action space -> target shield (the targets apply from here) ->
        success test. Updates the actions and the statistics."""
        st = self.stats
        obs = self.observer(r.q, r.qd, self.action, self.prev_action)
        images = None
        if self.feed is not None:
            images = self.feed.images()
            st.frame_age.add(self.feed.age(time.monotonic()))
        yield "observe"
        person = None if self.override is None else self.override(obs, r, arm)
        hold = False
        if person is not None:
            a = np.asarray(person, dtype=np.float32)
            self._reset_policy()  # after a person's step the policy starts a fresh chunk
            if a.shape != (self.policy.act_dim,):
                raise ConfigError(f"the override gave an action of shape {a.shape}, the "
                                  f"action space takes ({self.policy.act_dim},)")
        inference = gate = float("nan")
        if person is None:
            t0 = time.monotonic()
            a = self._policy(obs, images)
            t1 = time.monotonic()
            st.inference.add(inference := t1 - t0)
            if self.use_gate:  # the gate screens the policy's actions, not a person's
                a, hold, rejected = self.policy.gate(obs, a)
                st.gate.add(gate := time.monotonic() - t1)
                st.gate_rejections += rejected
                st.gate_holds += hold
        yield "policy"
        step = self.pipeline.act(np.asarray(a, dtype=np.float32)[None], self.action[None], arm,
                                 np.array([hold]))
        for name, flag in step.flags.items():
            st.shield[name] += bool(flag[0])
        last_acted = self._shield_acted
        self._shield_acted = bool(motion_acted(step.flags, self._no_flag)[0])
        self._targets, self._held = step.targets, bool(step.held[0])
        self._target_ticks = 0
        self.prev_action = self.action
        self.action = step.action[0].copy()
        st.policy_steps += 1
        st.sense_to_act.add(self._now - r.stamp)  # the targets go out at this tick
        if self.telemetry is not None:
            self.telemetry.step(time.monotonic(), np.asarray(a, dtype=np.float32), self.action,
                                step.flags, inference, gate)
        yield "targets"
        self.succeeded = self.observer.success()
        if self.on_step is not None:  # the observer still holds this step's state
            self.observer.note_shield(last_acted)  # the reward below is the last action's
            reward, cost = self.observer.reward_cost()
            self.on_step(PolicyStep(r, obs, np.asarray(a, dtype=np.float32).copy(),
                                    person is not None, self.action.astype(np.float32),
                                    reward, cost, self.succeeded))

    def _policy(self, obs: np.ndarray, images: dict[str, np.ndarray] | None) -> np.ndarray:
        return self.policy(obs) if images is None else self.policy(obs, images)

    def _hold_command(self, fresh_state: bool) -> JointCommand | None:
        r = self._reading
        if r is None:
            return None
        if self._hold_q is None:
            self._hold_q = r.q.copy()
        iface = self.robot.interface
        values = self.pipeline.hold_command(iface, self._hold_q, r.q, r.qd, fresh_state)
        return JointCommand(iface, np.array(values, dtype=np.float64), hold=True)

    def close(self) -> JointCommand | None:
        """Stop acting and send a final hold; returns it. The runtime can run again after."""
        self._enter_hold("shutting down", quiet=True)
        cmd = self._hold_command(fresh_state=not self.watchdog.stale())
        sent = None if cmd is None else self.robot.send_action(cmd)
        self.last_sent = sent
        return sent

    # -- the loop --------------------------------------------------------------------------

    def run(self, duration: float | None = None, stop: threading.Event | None = None,
            on_tick: Callable[[DeployRuntime], None] | None = None) -> dict[str, Any]:
        """Tick at ``rate_hz`` until ``duration`` seconds pass, ``stop`` is set, or SIGINT/
        SIGTERM; always ends with a final hold. Returns ``summary()`` plus ``interrupted``."""
        stop = stop or threading.Event()
        interrupted = False
        restore = _on_signals(stop) if threading.current_thread() is threading.main_thread() \
            else None
        st = self.stats
        rate = Rate(self.cfg.rate_hz, spin=self.cfg.spin_us * 1e-6)
        start = prev = time.monotonic()
        with loop_thread_settings(self.period, self.cfg.realtime_priority) as refused:
            if refused:
                self.log(refused)
            try:
                while not stop.is_set() and (duration is None or prev - start < duration):
                    late = rate.sleep()
                    t0 = time.monotonic()
                    if st.ticks:
                        st.period.add(t0 - prev)
                        st.lateness.add(late)
                    prev = t0
                    self.tick(self.robot.observe(), t0)
                    if time.monotonic() - t0 > self.period:
                        st.overruns += 1
                    self.idle(rate.next + self.period - self._idle_margin)
                    if on_tick is not None:
                        on_tick(self)
            except KeyboardInterrupt:
                interrupted = True
            finally:
                self.close()
                if restore is not None:
                    restore()
        out = self.summary()
        out["interrupted"] = interrupted or stop.is_set() and duration is None
        out["duration_s"] = time.monotonic() - start
        out["skipped_ticks"] = rate.skipped
        return out

    def summary(self) -> dict[str, Any]:
        out = self.stats.summary(self.period)
        out.update(mode=self.mode, watchdog_trips=self.watchdog.trips,
                   estops=self.estop_latch.count, success=self.succeeded,
                   rate_hz=self.cfg.rate_hz, policy_hz=self.cfg.rate_hz / self.decimation,
                   gate=self.use_gate)
        return out


_NEXT_STAGE = {"": "observe", "observe": "policy", "policy": "targets", "targets": "success"}
"""The stage after each one of ``DeployRuntime._policy_stages``."""


def _on_signals(stop: threading.Event) -> Callable[[], None]:
    """SIGTERM sets ``stop`` (SIGINT raises KeyboardInterrupt as usual); returns a restorer."""
    old = signal.signal(signal.SIGTERM, lambda *_: stop.set())

    def restore() -> None:
        signal.signal(signal.SIGTERM, old)

    return restore
