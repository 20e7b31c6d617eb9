"""The fine-tuning loop on the robot (HIL-SERL): the live policy acts, a person may take over,
every episode is committed to the dataset and handed to the learner.

    loop = OnlineRobotLoop(runtime, DatasetWriter(out, robot_dataset_spec(runtime)), device,
                           on_episode=queue.put)
    runtime.run(on_tick=loop.tick)          # until loop.done (or the caller's stop)

Per episode, driven by the runtime's ticks:

    home      a scripted move back to the pose the simulator starts episodes from (``HomeMove``:
              the joints to home, through the action space, controller and shield like any
              action), then the task's next goal (``observer.sample_goal``, or the fixed goal
              of the runtime's config) and ``scene_reset`` (the simulated arm puts its
              objects back; on a robot, a person does)
    confirm   (``confirm_episodes``) wait for the device's "next" event
    start     the runtime starts acting; where it cannot yet (no fresh joint states or
              camera frames), the loop tries again at every tick for ``start_timeout``
              seconds, then holds
    episode   the policy acts; while the device moves, the person acts instead (the step is
              an intervention: the gate is skipped, the shield is not). With ``evaluation``
              set, episodes begun are evaluations: the policy's mean action, no person.
              It ends at the task's success (terminal where the task terminates on
              success), after
              ``episode_length`` policy steps (a time-out: the last step bootstraps), or when
              the runtime stops acting (watchdog, e-stop): then it is kept, since everything in
              it happened, and the loop waits for a restart (``runtime.start``).

Frames are written as ``robot-rl record`` writes them (``add_step_frame``); an episode is
committed (crash-safe: a crash loses at most the open one) before ``on_episode`` receives it,
so the learner never holds a transition the dataset lacks. Commits run on a thread of their
own while the arm moves home, so the control loop never waits for the disk. Device events:
"quit" ends (the open episode dropped), "rerecord" drops the open episode, "next" confirms.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import time
from collections.abc import Callable
from typing import Any, Literal

import numpy as np

from robot_rl.data.writer import DatasetWriter
from robot_rl.errors import ConfigError
from robot_rl.finetune.robot.configs import OnlineLoopConfig
from robot_rl.hardware.home_move import HomeMove
from robot_rl.hardware.runtime import DeployRuntime
from robot_rl.hardware.runtime_hooks import PolicyStep
from robot_rl.hardware.teleop.base import TeleopCommand
from robot_rl.hardware.teleop.mapping import TeleopMapper
from robot_rl.recording.robot_recorder import add_step_frame

Phase = Literal["home", "confirm", "start", "episode", "held", "done"]


@dataclasses.dataclass
class RobotEpisode:
    """A committed episode, as the learner receives it. N transitions, O and A the widths."""

    index: int
    """The episode's index in the dataset."""
    obs: np.ndarray  # (N, O) float32
    action: np.ndarray  # (N, A) float32: what was executed (policy, gate or person)
    reward: np.ndarray  # (N,) float32
    cost: np.ndarray  # (N,) float32
    next_obs: np.ndarray  # (N, O) float32
    terminated: np.ndarray  # (N,) float32
    intervention: np.ndarray  # (N,) bool: the person acted
    success: bool
    policy_version: int
    """The weights' version when the episode began (-1: unknown)."""
    seconds: float
    """From its first policy step to its end [s]."""
    evaluation: bool = False
    """An evaluation episode: the policy's mean action, no person acting."""
    ended: float = 0.0
    """When it ended (time.monotonic() on the robot's machine)."""

    def __len__(self) -> int:
        return int(self.obs.shape[0])


class OnlineRobotLoop:
    """See the module docstring. ``version``: returns the policy's weights version (for the
    episode rows); ``scene_reset``: called after the move home with the runtime."""

    def __init__(self, runtime: DeployRuntime, writer: DatasetWriter, device: Any,
                 on_episode: Callable[[RobotEpisode], None],
                 cfg: OnlineLoopConfig | None = None, *,
                 scene_reset: Callable[[DeployRuntime], None] | None = None,
                 version: Callable[[], int] = lambda: -1, log: Callable[[str], None] = print):
        self.cfg = cfg = cfg or OnlineLoopConfig()
        env = runtime.observer.env
        self.runtime, self.writer, self.device = runtime, writer, device
        self.on_episode, self.scene_reset, self.version = on_episode, scene_reset, version
        self.log = log
        self.episode_length = cfg.episode_length or env.cfg.episode_length
        if self.episode_length < 1:
            raise ConfigError(f"episode_length must be >= 1, got {self.episode_length}")
        self.terminate_on_success = bool(env.cfg.terminate_on_success)
        self.mapper = TeleopMapper(env.cfg.action, env.act_dim,
                                   env.pipeline.action_space.has_gripper, env.robot,
                                   env.control_dt)
        home = np.asarray(env.robot.home, dtype=np.float64)
        self.home = HomeMove(self.mapper, runtime.arm.state(home, np.zeros_like(home)),
                             cfg.home)
        self.source = "policy+" + getattr(device, "name", "teleop")
        self.phase: Phase = "home"
        self.evaluation = False
        """Episodes begun from now on are evaluations: the policy's mean, the device ignored."""
        self._eval = False
        self.cmd = TeleopCommand()
        self.episodes = 0
        self.interventions: list[int] = []
        """Intervention steps of each committed episode."""
        self._frames: list[tuple[PolicyStep, PolicyStep, bool]] = []
        self._prev: PolicyStep | None = None
        self._ended: str | None = None
        self._phase_t = time.monotonic()
        self._begun_t = 0.0
        self._ep_version = -1
        self._near_home = False
        self._home_arm: Any = None
        """The arm state the move home last acted on."""
        self.home_timed_out = False
        """The last move home ended by its time-out, not at home (``scene_reset`` may put
        the arm back as a person would; otherwise the episode starts where the arm is)."""
        self._homing = False
        """The move home is under way (the runtime started for it)."""
        self._saver = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="commit")
        self._saving: concurrent.futures.Future[None] | None = None
        runtime.override = self._override
        runtime.on_step = self._on_step

    @property
    def done(self) -> bool:
        return self.phase == "done"

    # -- called by the loop, once per tick ---------------------------------------------------

    def tick(self, _runtime: Any = None) -> None:
        if self.done:
            return
        rt = self.runtime
        self.cmd = self.device.read()
        ev = self.cmd.events
        if "quit" in ev:
            self._wait_saved()
            if self.writer.recording:
                self.writer.discard_episode()
            rt.stop("quit")
            self.phase = "done"
            return
        if self.phase == "episode":
            if "rerecord" in ev:
                self._end(save=False, why="dropped by the person")
            elif self._ended is not None:
                self._end(save=True, why=self._ended)
            elif rt.mode != "running":
                self._end(save=True, why=f"the runtime stopped acting ({rt.mode})",
                          then="held")
        elif self.phase == "held":  # after a watchdog hold or e-stop: a person restarts
            if rt.mode == "running":
                self._go("home")
            elif rt.mode == "idle" and self.cfg.restart_after_hold is not None and \
                    time.monotonic() - self._phase_t >= self.cfg.restart_after_hold:
                if rt.start()[0]:
                    self.log("restarted after a hold")
                    self._go("home")
        elif self.phase == "home":
            if not self._homing:  # the move home begins (the first one: on fresh data)
                if rt.mode == "estop":
                    self._go("held")
                elif rt.mode == "idle" and rt.start()[0]:
                    self._homing, self._phase_t = True, time.monotonic()
            elif rt.mode != "running":  # a hold on the way home: as after any hold
                self._go("held")
            elif self._near_home:
                self.home_timed_out = False
                self._after_home()
            elif time.monotonic() - self._phase_t > self.cfg.home_timeout:
                self.home_timed_out = True
                self.log(f"the move home timed out{self._home_distance()}")
                self._after_home()
        elif self.phase == "confirm" and "next" in ev:
            self._begin()
        elif self.phase == "start":
            self._begin()

    def close(self) -> None:
        """Finish a save in progress, drop an open episode and close the dataset."""
        self._wait_saved()
        self._saver.shutdown()
        if self.writer.recording:
            self.writer.discard_episode()
        self.writer.close()

    # -- the cycle ---------------------------------------------------------------------------

    def _go(self, phase: Phase) -> None:
        self.phase, self._phase_t = phase, time.monotonic()
        self._near_home = False
        self._home_arm = None
        self._homing = phase == "home" and self.runtime.mode == "running"

    def _home_distance(self) -> str:
        """' X rad (or m) from home' where the move home last acted, or '' before it did."""
        if self._home_arm is None:
            return ""
        unit = "rad" if self.home.joint_space else "m"
        return f" {self.home.error(self._home_arm):.3f} {unit} from home"

    def _after_home(self) -> None:
        rt = self.runtime
        rt.stop("at home")
        if rt.cfg.goal is None:
            rt.observer.sample_goal()
        if self.scene_reset is not None:
            self.scene_reset(rt)
        if self.cfg.confirm_episodes:
            self._go("confirm")
            self.log("at home: the device's next starts the episode")
        else:
            self._begin()

    def _commit(self, ep: RobotEpisode) -> None:
        self.writer.save_episode(success=ep.success)
        self.on_episode(ep)

    def _wait_saved(self) -> None:
        if self._saving is not None:
            self._saving.result()  # re-raises a failed save
            self._saving = None

    def _begin(self) -> None:
        self._wait_saved()
        started, why = self.runtime.start()
        if not started:
            waited = self.phase == "start" and \
                time.monotonic() - self._phase_t >= self.cfg.start_timeout
            if waited or self.runtime.mode == "estop":
                self.log(f"cannot start an episode: {why}")
                self._go("held")
            elif self.phase != "start":  # try again at the next ticks
                self._go("start")
            return
        self.mapper.reset()
        self._eval = self.evaluation
        if hasattr(self.runtime.policy, "stochastic"):  # the live policy: explore or not
            self.runtime.policy.stochastic = not self._eval  # type: ignore[union-attr]
        self.writer.begin_episode(seed=None, source="policy-eval" if self._eval
                                  else self.source)
        self._frames, self._prev, self._ended = [], None, None
        self._ep_version = self.version()
        self._begun_t = time.monotonic()
        self._go("episode")

    def _end(self, save: bool, why: str, then: Phase = "home") -> None:
        frames = self._frames
        n = self.writer.frames_in_episode
        self._frames, self._prev, self._ended = [], None, None
        if not save or n == 0:
            self.writer.discard_episode()
            self.log(f"episode dropped ({why})")
        else:
            success = bool(frames[-1][1].success)  # at the episode's end (one definition)
            ep = _episode(self.writer.num_episodes, frames, success, self._ep_version,
                          time.monotonic() - self._begun_t)
            ep.evaluation, ep.ended = self._eval, time.monotonic()
            self.episodes += 1
            self.interventions.append(int(ep.intervention.sum()))
            self.log(f"episode {ep.index}: {n} steps, {'success' if success else 'failure'} "
                     f"({why}), {self.interventions[-1]} intervention steps, policy "
                     f"v{self._ep_version}")
            # committed off the loop's thread (a save takes tens of ms, more on a busy
            # host); the next episode begins only after it (``_begin`` waits)
            self._saving = self._saver.submit(self._commit, ep)
        if then == "home" and self.runtime.mode == "running":
            self.mapper.reset()
        self._go(then)

    # -- the runtime's hooks -------------------------------------------------------------------

    def _override(self, _obs: np.ndarray, _reading: Any, arm: Any) -> np.ndarray | None:
        if self.phase == "home":
            return self._home_action(arm)
        if self.phase == "episode" and self.cmd.moving and not self._eval:
            return self.mapper(self.cmd, arm)
        return None

    def _home_action(self, arm: Any) -> np.ndarray:
        self._near_home, self._home_arm = self.home.arrived(arm), arm
        return self.home.action(arm)

    def _on_step(self, step: PolicyStep) -> None:
        if self.phase != "episode" or self._ended is not None:
            return
        prev, self._prev = self._prev, step
        if prev is None:
            return
        n = self.writer.frames_in_episode + 1
        terminal = step.success and self.terminate_on_success
        truncated = not terminal and n >= self.episode_length
        add_step_frame(self.writer, prev, step, terminated=terminal, truncated=truncated,
                       intervention=prev.intervention)
        self._frames.append((prev, step, terminal))
        if step.success and self.cfg.end_on_success:
            self._ended = "success"
        elif truncated:
            self._ended = f"{self.episode_length} steps"


def _episode(index: int, frames: list[tuple[PolicyStep, PolicyStep, bool]], success: bool,
             version: int, seconds: float) -> RobotEpisode:
    def stack(values: list, dtype: Any) -> np.ndarray:
        return np.asarray(values, dtype=dtype)

    return RobotEpisode(
        index=index, obs=stack([p.obs for p, _, _ in frames], np.float32),
        action=stack([p.action for p, _, _ in frames], np.float32),
        reward=stack([s.reward for _, s, _ in frames], np.float32),
        cost=stack([s.cost for _, s, _ in frames], np.float32),
        next_obs=stack([s.obs for _, s, _ in frames], np.float32),
        terminated=stack([t for _, _, t in frames], np.float32),
        intervention=stack([p.intervention for p, _, _ in frames], bool),
        success=success, policy_version=version, seconds=seconds)
