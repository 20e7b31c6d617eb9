"""Recording demonstrations on a robot: the deploy runtime acts, a teleop device drives it,
and every policy step goes into the same ``DatasetWriter`` as ``robot-rl record`` in sim.

    recorder = RobotRecorder(runtime, DatasetWriter(out, robot_dataset_spec(runtime)),
                             KeyboardTeleop(), episodes=20)
    runtime.run(on_tick=recorder.tick)        # or a ROS node calls recorder.tick per tick

The runtime's observation terms, shield, action space and controller are the ones a policy
runs with, so a recorded action is exactly what a policy trained on the dataset would have
to output. Each step the person's device is mapped into the task's action space by
``TeleopMapper``; with an exported policy (HIL-SERL) the policy acts while the device is
still and a moving device takes over, the step flagged ``intervention``.

Episodes, from the device's events:

    Enter (next)   waiting: start an episode (the runtime starts acting);
                   recording: save it, hold, draw the next goal (unless one is fixed)
    x (rerecord)   drop the open episode, hold, draw the next goal
    y / n          label the open episode a success / a failure (else the task's own test)
    q (quit)       drop the open episode and stop (``done`` becomes True)

An episode is paced for the person (``recording.pacing``): it also ends when the task's
success test holds (``success_ends="auto"``, saved; ``"confirm"``: the person is told, and
Enter saves), or at the time limit (``Pacing.episode_time``, or ``episode_length`` policy
steps where given), where it is saved only if it succeeded, the person labelled it, or
``keep_failures`` is set. It is dropped when the runtime stops acting (watchdog, e-stop,
stop service), since its end was not the person's choice.

Frames are (obs_k, action_k, reward/cost/success at obs_{k+1}, next_obs = obs_{k+1}); the
last action of an episode has no next observation and is not recorded.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from robot_rl.data.format import DatasetSpec
from robot_rl.data.writer import DatasetWriter
from robot_rl.hardware.runtime import DeployRuntime
from robot_rl.hardware.runtime_hooks import PolicyStep
from robot_rl.hardware.teleop.base import TeleopCommand
from robot_rl.hardware.teleop.mapping import TeleopMapper
from robot_rl.recording.pacing import Pacing


class NoPolicy:
    """Stands in for an exported policy when the person drives every step: the task's half
    of policy.json (robot, observation layout, action space, control, shield; no network, no
    cost critic), and a zero action (stay where you are in the delta and velocity action
    spaces teleoperation drives), which the runtime only computes in its warm-up."""

    has_cost_critic = False
    images: list = []  # it sees no cameras
    cameras: list[str] = []

    def __init__(self, task: str, robot: str | None = None):
        """``robot``: the arm (default: the task's own, arm7)."""
        from robot_rl.export.artifact import task_meta
        from robot_rl.sim import make_env

        env = make_env(task, 1, dr="off", robot=robot)
        self.meta = task_meta(env)
        self.obs_dim, self.act_dim = env.obs_dim, env.act_dim
        self.path = f"task {task!r} (no policy: teleoperation)"

    @property
    def joint_names(self) -> list[str]:
        return list(self.meta["robot"]["joint_names"])

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        return np.zeros(self.act_dim, dtype=np.float32)

    def gate(self, obs: np.ndarray, a: np.ndarray) -> tuple[np.ndarray, bool, bool]:
        return a, False, False


def robot_dataset_spec(runtime: DeployRuntime) -> DatasetSpec:
    """The dataset a recording through ``runtime`` writes: the task's spec (the same names,
    action space and rate as a sim recording), with no env to replay in."""
    from robot_rl.recording.record import dataset_spec

    return dataset_spec(runtime.observer.env)


class RobotRecorder:
    """See module docstring. ``source`` names the device in the episode rows."""

    def __init__(self, runtime: DeployRuntime, writer: DatasetWriter, device: Any,
                 episodes: int, episode_length: int | None = None,
                 with_policy: bool = False, log: Any = print, pacing: Pacing | None = None):
        env = runtime.observer.env
        self.runtime, self.writer, self.device = runtime, writer, device
        self.episodes = episodes
        self.pacing = pacing or Pacing()
        self.episode_length = self.pacing.steps(env.control_dt, episode_length)
        self.with_policy, self.log = with_policy, log
        self.mapper = TeleopMapper(env.cfg.action, env.act_dim,
                                   env.pipeline.action_space.has_gripper, env.robot,
                                   env.control_dt)
        self.source = ("policy+" if with_policy else "") + getattr(device, "name", "teleop")
        self.cmd = TeleopCommand()
        self.done = False
        self.saved = 0
        self.dropped = 0
        self.save_seconds: list[float] = []
        self._label: bool | None = None
        self._succeeded = False  # at any step: the "confirm" prompt
        self._success_now = False  # at a policy step since the last tick
        self._success_last = False  # at the latest policy step
        self._told = False
        self._prev: PolicyStep | None = None
        runtime.override = self._override
        runtime.on_step = self._on_step

    @property
    def recording(self) -> bool:
        return self.writer.recording

    # -- called by the loop ----------------------------------------------------------------

    def tick(self, _runtime: Any = None) -> None:
        """Read the device and act on its events; call once per runtime tick."""
        if self.done:
            return
        self.cmd = self.device.read()
        ev = self.cmd.events
        if self.recording and self.runtime.mode != "running":
            self._end(save=False, why=f"the runtime stopped acting ({self.runtime.mode})")
        if "quit" in ev:
            if self.recording:
                self._end(save=False, why="quit")
            self.done = True
            return
        if "rerecord" in ev and self.recording:
            self._end(save=False, why="re-record")
        if "success" in ev:
            self._label = True
        if "failure" in ev:
            self._label = False
        if "next" in ev and not self.recording:
            self._begin()
            return
        if not self.recording:
            return
        ended = self.writer.frames_in_episode >= self.episode_length
        got = self.pacing.outcome("next" in ev, ended, self._success_now, self._label)
        self._success_now = False
        if got is not None:
            kind, _ = got
            why = "saved" if "next" in ev else "success" if not ended else \
                f"time limit ({self.episode_length} steps)"
            if kind == "fail":
                why += ": no success (y/n labels an episode to keep it)"
            self._end(save=kind == "save", why=why)
        elif self._succeeded and self.pacing.success_ends == "confirm" and not self._told:
            self._told = True
            self.log("success: Enter saves the episode")

    def close(self) -> None:
        """Drop an open episode and close the dataset."""
        if self.recording:
            self._end(save=False, why="shutting down")
        self.writer.close()

    # -- episodes --------------------------------------------------------------------------

    def _begin(self) -> None:
        if self.writer.num_episodes >= self.episodes:
            self.log(f"{self.writer.num_episodes} episodes recorded (the target); q quits")
            return
        started, why = self.runtime.start()
        if not started:
            self.log(f"cannot start an episode: {why}")
            return
        self.mapper.reset()
        self.writer.begin_episode(seed=None, source=self.source)
        self._label, self._succeeded, self._prev = None, False, None
        self._success_now = self._success_last = self._told = False
        self.log(f"episode {self.writer.num_episodes + 1}/{self.episodes}: recording "
                 f"(Enter saves, x re-records, y/n label, q quits)")

    def _end(self, save: bool, why: str) -> None:
        rt = self.runtime
        rt.stop(f"episode ended ({why})")  # hold where the arm is (an e-stop stays latched)
        if rt.cfg.goal is None:  # the next episode's goal, from the task's reset distribution
            rt.observer.sample_goal()
        frames = self.writer.frames_in_episode
        if save and frames > 0:
            success = self._success_last if self._label is None else self._label
            dt = self.writer.save_episode(success=success)
            self.saved += 1
            self.save_seconds.append(dt)
            self.log(f"episode {self.writer.num_episodes} saved: {frames} frames, "
                     f"{'success' if success else 'failure'}, {dt * 1e3:.0f} ms; Enter "
                     f"starts the next")
        else:
            self.writer.discard_episode()
            self.dropped += 1
            self.log(f"episode dropped ({why}); Enter starts it again")
        self._prev = None
        if self.writer.num_episodes >= self.episodes:
            self.done = True

    # -- the runtime's hooks ---------------------------------------------------------------

    def _override(self, _obs: np.ndarray, _reading: Any, arm: Any) -> np.ndarray | None:
        if self.with_policy and not self.cmd.moving:
            return None  # the policy acts
        return self.mapper(self.cmd, arm)

    def _on_step(self, step: PolicyStep) -> None:
        if not self.recording:
            return
        prev, self._prev = self._prev, step
        self._succeeded = self._succeeded or step.success
        self._success_now = self._success_now or step.success
        self._success_last = step.success  # the episode's success if it ends here
        if prev is None:
            return
        add_step_frame(self.writer, prev, step, terminated=False,
                       truncated=self.writer.frames_in_episode + 1 >= self.episode_length,
                       intervention=prev.intervention and self.with_policy)


def add_step_frame(writer: DatasetWriter, prev: PolicyStep, step: PolicyStep, *,
                   terminated: bool, truncated: bool, intervention: bool) -> None:
    """Write the frame of two consecutive policy steps: ``prev``'s observation and action,
    and the outcome ``step`` observed (reward, cost, success, next observation)."""
    writer.add_frame(obs=prev.obs, joint_pos=prev.reading.q, joint_vel=prev.reading.qd,
                     action=prev.action, applied_action=prev.applied, next_obs=step.obs,
                     reward=step.reward, cost=step.cost, terminated=terminated,
                     truncated=truncated, success=step.success, intervention=intervention)
