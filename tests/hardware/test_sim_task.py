"""The episode harness of the simulated arm (``hardware.sim_task.run_episodes``): the episode's
clock and its judge begin when the policy begins to act, also when the runtime started
itself, and the task's own success test judges the arm's ground truth at the episode's end
(a goal reached and then lost is a failure, as in training)."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest

from robot_rl.hardware.sim_robot import SceneState
from robot_rl.hardware.sim_task import SimTaskEpisodes, run_episodes
from robot_rl.sim import make_env

SOLVE_AFTER = 0.3
"""Seconds of acting after which the fake policy has pushed the puck onto the goal."""
LOSE_AFTER = 0.6
"""... and after which, in a losing episode, it has pushed it off again."""


class FakeRuntime:
    """What ``run_episodes`` uses of a ``DeployRuntime``; it starts itself once (autostart)."""

    def __init__(self, arm: FakeArm):
        self.arm, self.autostart, self.running = arm, True, False
        self.watchdog = SimpleNamespace(trips=0)
        self.stats = SimpleNamespace(camera_holds=0)
        self.starts = 0

    @property
    def mode(self) -> str:
        return "running" if self.running else "idle"

    def reset(self) -> None:
        self.running = False

    def set_goal(self, goal: np.ndarray) -> None:
        self.goal = goal

    def start(self) -> tuple[bool, str]:
        self.running = True
        self.starts += 1
        return True, "running"

    def run(self, duration: float, stop: threading.Event, on_tick) -> dict:
        end = time.monotonic() + duration
        while not stop.is_set() and time.monotonic() < end:
            if self.autostart:  # the first fresh reading starts it
                self.autostart, self.running = False, True
            if self.running:
                self.arm.act(self.goal)
            on_tick(self)
            time.sleep(0.005)
        self.running = False
        return {}


class FakeArm:
    """A scene whose puck reaches the goal after SOLVE_AFTER seconds of acting and, in the
    episodes numbered in ``loses``, leaves it after LOSE_AFTER."""

    def __init__(self, puck: slice, loses: set[int]):
        self.puck, self.scene, self.acting_since = puck, None, None
        self.loses, self.episode = loses, -1

    def reset(self, q=None, scene: SceneState | None = None) -> None:
        self.scene, self.acting_since = scene, None
        self.start = scene.qpos[self.puck.start:self.puck.start + 2].copy()
        self.episode += 1

    def act(self, goal: np.ndarray) -> None:
        now = time.monotonic()
        self.acting_since = self.acting_since or now
        xy = self.scene.qpos[self.puck.start:self.puck.start + 2]
        if now - self.acting_since >= LOSE_AFTER and self.episode in self.loses:
            xy[:] = self.start
        elif now - self.acting_since >= SOLVE_AFTER:
            xy[:] = goal[:2]

    def scene_state(self) -> SceneState:
        return SceneState(self.scene.qpos.copy(), self.scene.mocap_pos.copy())


@pytest.mark.slow
def test_episodes_are_timed_from_the_policys_first_act_and_judged_at_their_end():
    cfg = make_env("push", 1).cfg
    episodes = SimTaskEpisodes(cfg, seed=1)
    arm = FakeArm(episodes.env.state.qpos_slice("puck_joint"), loses={1})
    runtime = FakeRuntime(arm)
    results = run_episodes(runtime, arm, episodes, 3, seconds=1.0, seed=1)
    assert runtime.starts == 2  # the first episode started itself, the others were started
    held, lost, held_too = results
    for r in results:
        assert r.started and r.seconds >= 1.0, r  # the whole episode, every time
    assert held.success and held_too.success
    assert held.first_success is not None and held.first_success >= SOLVE_AFTER - 0.05, held
    assert not lost.success, lost  # reached the goal (0.3 s), lost it (0.6 s): a failure
    assert not episodes.success(SceneState(*_drawn(episodes, 3)))  # a new scene is unsolved


def _drawn(episodes: SimTaskEpisodes, seed: int) -> tuple[np.ndarray, np.ndarray]:
    scene, _ = episodes.draw(seed)
    return scene.qpos, scene.mocap_pos
