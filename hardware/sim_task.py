"""The task around the simulated arm: episodes drawn as the task's resets draw them, success
judged from the arm's ground truth.

On a real robot a person sets the puck down and looks whether it reached the goal; on the
simulated arm (``SimRobot(..., scene=task_cfg)``) this does both, with the task's own reset
and success functions on a one-env simulation of the same scene:

    episodes = SimTaskEpisodes(task_cfg, seed=0)
    scene, goal = episodes.draw()                  # objects and markers; the goal point
    robot.reset(None, scene); runtime.set_goal(goal)
    ...
    episodes.success(robot.scene_state())          # the task's success test on the truth

``run_episodes`` does it all for a deploy runtime: per episode a new scene and goal, the
runtime started on fresh data, the episode run for the task's episode length and judged at
its end, as training judges it (one definition: ``robot_rl.sim.tasks.base``), the results per
episode. A person watching (a thread off the loop's) also notes when the task first
succeeded.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import torch

from robot_rl.errors import ConfigError
from robot_rl.hardware.observation import goal_buffer
from robot_rl.hardware.sim_robot import SceneState
from robot_rl.sim import BatchedEnv
from robot_rl.sim.configs import dr_preset
from robot_rl.sim.tasks.config import TaskConfig

if TYPE_CHECKING:
    from robot_rl.hardware.runtime import DeployRuntime


class SceneArm(Protocol):
    """A simulated arm in a task's scene (``SimRobot``, ``SimRobotProcess``)."""

    def reset(self, q: Any = None, scene: SceneState | None = None) -> None: ...

    def scene_state(self) -> SceneState: ...


class SimTaskEpisodes:
    """Draws the task's episodes and judges them on the simulated arm (module docstring)."""

    def __init__(self, cfg: TaskConfig, seed: int = 0):
        cfg = dataclasses.replace(cfg, dr=dr_preset("off"), cameras=None)
        self.cfg = cfg
        self.env = BatchedEnv(cfg, 1, seed=seed, nthread=1)
        self._ids = torch.zeros(1, dtype=torch.long)
        self._goal = goal_buffer(self.env.state.buffers)

    def draw(self, seed: int | None = None) -> tuple[SceneState, np.ndarray | None]:
        """A new episode: the scene (objects and markers, the arm at home) and the goal point
        (None if the task has none)."""
        self.env.reset(seed=seed)
        s, b = self.env.state, self.env.backend
        scene = SceneState(s.qpos[0].numpy().copy(), b.mocap_pos[0].numpy().copy())
        goal = None if self._goal is None else s.buffers[self._goal][0].numpy().copy()
        return scene, goal

    def success(self, scene: SceneState) -> bool:
        """The task's success test at ``scene`` (the goal of the last ``draw``)."""
        s, b = self.env.state, self.env.backend
        if scene.qpos.shape != tuple(s.qpos.shape[1:]):
            raise ConfigError(f"the scene has {scene.qpos.shape[0]} joint positions; task "
                              f"{self.cfg.name!r} has {s.qpos.shape[1]}")
        s.qpos[0] = torch.from_numpy(scene.qpos)
        b.mocap_pos[0] = torch.from_numpy(scene.mocap_pos)
        b.forward(self._ids)
        return bool(self.env.task.success(s, self.cfg)[0])


@dataclasses.dataclass(frozen=True)
class EpisodeResult:
    """One episode on the simulated arm."""

    success: bool
    """The task's success test at the episode's end."""
    seconds: float
    """From the policy's first act to the end [s]."""
    first_success: float | None
    """Seconds from the first act to the first check at which the test held (None: never);
    the test checked ``check_hz`` times a second."""
    started: bool
    """The runtime started (fresh joint states and camera frames arrived)."""
    holds: int
    """Holds begun during the episode (watchdog, stale camera)."""


def run_episodes(runtime: DeployRuntime, robot: SceneArm, episodes: SimTaskEpisodes,
                 n: int, seconds: float | None = None, seed: int = 0, check_hz: float = 25.0,
                 on_episode: Callable[[int, EpisodeResult], None] | None = None,
                 restart: bool = False) -> list[EpisodeResult]:
    """``n`` episodes of the runtime's policy on the simulated arm (module docstring), each
    at most ``seconds`` (default: the task's episode length) of running, episode i drawn with
    seed ``seed + i``. The runtime's statistics accumulate over all of them. A hold (watchdog,
    stale camera) ends the episode's acting, as on the robot until a person restarts it;
    ``restart`` restarts at once instead (a benchmark measuring the policy on a host whose
    timing trips the watchdog; the holds are counted either way)."""
    if seconds is None:
        cfg = episodes.cfg
        seconds = cfg.episode_length * cfg.control_dt
    out: list[EpisodeResult] = []
    for i in range(n):
        scene, goal = episodes.draw(seed + i)
        runtime.reset()  # held, at the next reading's position
        robot.reset(None, scene)
        if goal is not None:
            runtime.set_goal(goal)
        result = _episode(runtime, robot, episodes, seconds, check_hz, restart)
        out.append(result)
        if on_episode is not None:
            on_episode(i, result)
    return out


def _episode(runtime: DeployRuntime, robot: SceneArm, episodes: SimTaskEpisodes,
             seconds: float, check_hz: float, restart: bool) -> EpisodeResult:
    """One episode from a held runtime in a placed scene (``run_episodes``)."""
    done = threading.Event()
    began: list[float] = []
    first: list[float] = []
    holds_before = runtime.watchdog.trips + runtime.stats.camera_holds

    def on_tick(rt: DeployRuntime) -> None:
        if rt.mode == "idle" and (restart or not began):
            rt.start()
        # the clock and the judge begin with the first tick the policy acts on, whoever
        # started it (the runtime's autostart starts the first episode by itself)
        if rt.mode == "running" and not began:
            began.append(time.monotonic())
        if began and time.monotonic() - began[0] >= seconds:
            done.set()

    def watch() -> None:  # a person looking at the scene
        while not first and not done.wait(1.0 / check_hz):
            if began and episodes.success(robot.scene_state()):
                first.append(time.monotonic() - began[0])

    watcher = threading.Thread(target=watch, name="episode-judge", daemon=True)
    watcher.start()
    try:
        runtime.run(seconds + 5.0, stop=done, on_tick=on_tick)  # +5 s to start
    finally:
        done.set()
        watcher.join()
    took = time.monotonic() - began[0] if began else 0.0
    won = bool(began) and episodes.success(robot.scene_state())  # held where it ended
    holds = runtime.watchdog.trips + runtime.stats.camera_holds - holds_before
    return EpisodeResult(won, took, first[0] if first else None, bool(began), holds)
