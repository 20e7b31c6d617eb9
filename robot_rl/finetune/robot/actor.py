"""The robot actor: the deploy runtime and the online loop on the robot's machine, fed weights
by the learner, feeding it committed episodes.

    actor = RobotActor(cfg, setup)                     # connects the arm
    rollout = actor.next_episode(0, acting_state(agent), timeout=5.0)  # first weights start
    rollout = actor.next_episode(version, None)        # the loop; then the oldest unsent episode
    actor.summary()                                                    # loop timing, swaps

The control loop runs on its own thread (``DeployRuntime.run``, deadline-scheduled) from the
first weights on; ``next_episode`` is called from another thread (Ray runs a threaded actor's
calls on its own threads): it swaps in newer weights there (``LivePolicy.swap``: the loop
picks them up at its next policy step and never waits) and hands back the oldest committed
episode not yet handed out. Episodes queue while the learner is busy or gone; they are in the
dataset anyway. Without a call for ``learner_timeout`` seconds, the arm keeps acting with the
weights it has (``on_learner_loss="act"``) or holds until the learner is back (``"hold"``).

``pool.RobotPool`` wraps a Ray handle of it for the learner; nothing here imports Ray.
"""

from __future__ import annotations

import queue
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from robot_rl.cluster.rollout import Rollout
from robot_rl.data.writer import DatasetWriter
from robot_rl.errors import ConfigError
from robot_rl.export.artifact import task_meta
from robot_rl.finetune.robot.configs import RobotSetup
from robot_rl.finetune.robot.live_policy import LivePolicy
from robot_rl.finetune.robot.loop import OnlineRobotLoop, RobotEpisode
from robot_rl.hardware.runtime import DeployRuntime
from robot_rl.hardware.teleop.base import Teleoperator
from robot_rl.recording.robot_recorder import robot_dataset_spec
from robot_rl.sim import make_env
from robot_rl.train_config import TrainConfig


class RobotActor:
    """See the module docstring."""

    def __init__(self, cfg: TrainConfig, setup: RobotSetup, log: Any = None):
        """Connects the arm; the loop starts with the first weights (``next_episode``)."""
        if setup.robot not in ("sim", "ros"):
            raise ConfigError(f"robot must be sim or ros, got {setup.robot!r}")
        if setup.teleop == "corrector" and setup.robot != "sim":
            raise ConfigError("the corrector watches the simulated arm's true hand: "
                              "--robot.teleop corrector needs --robot.robot sim")
        self.cfg, self.setup = cfg, setup
        self.log = log or _say
        self.meta = task_meta(make_env(cfg.env, 1, dr="off"))
        self.robot: Any = None
        self._spin: Any = None
        if setup.robot == "sim":
            from robot_rl.hardware.sim_robot_process import SimRobotProcess

            self.robot = SimRobotProcess(setup.sim)
            self.robot.connect()
        self.policy: LivePolicy | None = None
        self.episodes: queue.Queue[RobotEpisode] = queue.Queue()
        self._contact = time.monotonic()
        self._lost = False
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._trips = 0
        self.trip_times: list[float] = []
        """time.monotonic() of each watchdog trip."""
        self.log_rows: list[dict[str, Any]] = []
        """One row per committed episode: when it ended, success, interventions, evaluation."""
        self._t0 = time.monotonic()
        """When the loop started (robot time counts from here)."""
        self._evaluation = False
        self.arm_resets = 0
        """Times the simulated arm was put back at home (``reset_fallen_arm``)."""

    def _start(self, state: dict[str, torch.Tensor], version: int) -> None:
        """Build the policy, runtime and loop around the first weights; start the loop."""
        setup = self.setup
        self.policy = policy = LivePolicy(self.cfg, self.meta, state, version,
                                          stochastic=setup.stochastic, seed=setup.seed)
        try:
            node = None
            if setup.robot == "ros":
                from robot_rl.hardware.ros.launcher import default_params_file
                from robot_rl.nodes.finetune_node import start_finetune_node

                node, self._spin = start_finetune_node(
                    policy, setup.ros_params_file or default_params_file(
                        self.meta["robot"]["name"]),
                    dict(setup.ros_overrides), setup.ros_domain_id)
                self.runtime = node.runtime
            else:
                self.runtime = DeployRuntime(policy, self.robot, setup.deploy, log=self.log)
            dataset = Path(setup.dataset)
            resume = (dataset / "meta" / "info.json").is_file()
            writer = DatasetWriter(dataset, robot_dataset_spec(self.runtime), resume=resume)
            self.device = make_device(setup.teleop, self)
            reset = self._reset_fallen_arm if setup.reset_fallen_arm and \
                setup.robot == "sim" else None
            self.loop = OnlineRobotLoop(self.runtime, writer, self.device, self._committed,
                                        setup.loop, scene_reset=reset,
                                        version=lambda: policy.version, log=self.log)
        except BaseException:
            self._close_robot()
            raise
        if node is not None:
            node.on_tick = self._tick
        self.loop.evaluation = self._evaluation
        self._t0 = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="robot-loop", daemon=True)
        self._thread.start()

    # -- the control loop's thread -------------------------------------------------------------

    def _reset_fallen_arm(self, rt: DeployRuntime) -> None:
        """After a move home that timed out: the simulated arm back at home (a person's
        reset), the runtime holding at the new reading."""
        if not self.loop.home_timed_out:
            return
        self.robot.reset()
        rt.moved()
        self.arm_resets += 1
        self.log(f"the simulated arm put back at home (reset {self.arm_resets})")

    def _committed(self, ep: RobotEpisode) -> None:
        self.log_rows.append({"index": ep.index, "ended": ep.ended - self._t0,
                              "steps": len(ep), "success": ep.success,
                              "interventions": int(ep.intervention.sum()),
                              "evaluation": ep.evaluation, "version": ep.policy_version})
        self.episodes.put(ep)

    def _run(self) -> None:
        try:
            if self._spin is not None:  # ROS: JointStates drive the ticks (policy_node)
                self._spin(self._stop)
            else:
                self.runtime.run(stop=self._stop, on_tick=self._tick)
        except BaseException as e:  # reported by the next call
            self._error = e
        finally:
            self.loop.close()

    def _tick(self, rt: DeployRuntime) -> None:
        self.loop.tick(rt)
        if rt.watchdog.trips != self._trips:
            self._trips = rt.watchdog.trips
            self.trip_times.append(time.monotonic())
        silent = time.monotonic() - self._contact > self.setup.learner_timeout
        if silent and not self._lost:
            self._lost = True
            what = "holding" if self.setup.on_learner_loss == "hold" else \
                "acting with the weights it has"
            self.log(f"no learner for {self.setup.learner_timeout:g} s: {what}")
        if self._lost and self.setup.on_learner_loss == "hold" and rt.mode == "running":
            rt.stop("learner lost")
        if self.loop.done:
            self._stop.set()

    # -- the learner's calls (another thread) --------------------------------------------------

    def next_episode(self, version: int, state: dict[str, torch.Tensor] | None,
                     timeout: float = 5.0) -> Rollout | None:
        """Swap in ``state`` if ``version`` is newer than the policy's, then the oldest
        committed episode not handed out yet as a Rollout (None if none within
        ``timeout`` s)."""
        self._check()
        self._contact = time.monotonic()
        with self._lock:
            if self.policy is None:
                if state is None:
                    raise RuntimeError("the robot actor has no weights: send them first")
                self._start(state, version)
            elif state is not None and version > self.policy.version:
                self.policy.swap(state, version)
        if self._lost:
            self._lost = False
            self.log("learner back")
            if self.setup.on_learner_loss == "hold" and self.loop.phase == "held":
                self.runtime.start()
        try:
            ep = self.episodes.get(timeout=timeout)
        except queue.Empty:
            return None
        return episode_rollout(ep)

    def where(self) -> tuple[str, int]:
        """(Ray node id, process id) of the robot actor (inside a Ray actor)."""
        from robot_rl.cluster.placement import where

        return where()

    def set_evaluation(self, on: bool) -> None:
        """Episodes begun from now on are evaluations (the mean action, no person) or not."""
        self._evaluation = on
        if self.policy is not None:
            self.loop.evaluation = on

    def episode_log(self) -> list[dict[str, Any]]:
        """The committed episodes so far: ``ended`` in seconds of robot time."""
        return list(self.log_rows)

    def robot_time(self) -> float:
        """Seconds since the loop started (0 before the first weights)."""
        return 0.0 if self.policy is None else time.monotonic() - self._t0

    def swap_trips(self, window: float = 0.1) -> tuple[int, int, int]:
        """(swaps, watchdog trips, trips within ``window`` seconds after a swap)."""
        swaps = [] if self.policy is None else list(self.policy.swap_times)
        trips = list(self.trip_times)
        near = sum(any(0.0 <= t - s <= window for s in swaps) for t in trips)
        return len(swaps), len(trips), near

    def version(self) -> int:
        """The version of the weights acting (-1: none yet)."""
        return -1 if self.policy is None else self.policy.version

    def summary(self) -> dict[str, Any]:
        """The loop's timing and fail-safe counters, swaps, episodes, interventions."""
        if self.policy is None:
            return {"robot_episodes": 0, "swaps": 0, "policy_version": -1}
        out = self.runtime.summary()
        out.update(swaps=self.policy.swaps, policy_version=self.policy.version,
                   arm_resets=self.arm_resets,
                   phase=self.loop.phase,
                   robot_episodes=self.loop.episodes,
                   interventions=list(self.loop.interventions),
                   queued=self.episodes.qsize())
        return out

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10.0)
        self._close_robot()

    def _close_robot(self) -> None:
        if self.robot is not None:
            self.robot.close()

    def _check(self) -> None:
        if self._error is not None:
            raise RuntimeError(f"the robot's control loop failed: {self._error!r}")


def _say(message: str) -> None:
    """The robot actor's log: its stdout (Ray forwards it to the driver's)."""
    print(message, flush=True)


def episode_rollout(ep: RobotEpisode) -> Rollout:
    """A committed robot episode as a learner's rollout."""
    n = len(ep)
    return Rollout(ep.obs, ep.action, ep.reward, ep.cost, ep.next_obs, ep.terminated,
                   env_steps=n, steps=n,
                   sums={"hil/intervention_steps": float(ep.intervention.sum())},
                   rejected=0.0, episode_return=[float(ep.reward.sum())],
                   episode_cost=[float(ep.cost.sum())], episode_success=[float(ep.success)],
                   runner=0, version=ep.policy_version, seconds=ep.seconds,
                   intervention=ep.intervention.copy(), episode_index=ep.index)


def make_device(name: str, actor: RobotActor) -> Teleoperator:
    """The person's device of ``RobotSetup.teleop``."""
    from robot_rl.hardware.teleop.base import ScriptedTeleop, TeleopCommand

    if name == "none":
        return ScriptedTeleop(lambda _k: TeleopCommand(np.zeros(6), None, frozenset()))
    if name == "corrector":
        from robot_rl.finetune.robot.corrector import GoalCorrector

        return GoalCorrector(actor.runtime, actor.robot)
    from robot_rl.recording.record import open_teleop

    if name not in ("keyboard", "spacemouse", "gamepad"):
        raise ConfigError(f"teleop must be none, keyboard, spacemouse, gamepad or corrector, "
                          f"got {name!r}")
    device: Teleoperator = open_teleop(name)  # type: ignore[arg-type]
    device.connect()
    return device
