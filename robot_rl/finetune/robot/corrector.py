"""A scripted person for the simulated arm: watches the hand and the goal, and takes over with
the device when the policy strays, as a person with a SpaceMouse does in HIL-SERL.

    device = GoalCorrector(runtime, robot)     # robot: the simulated arm (its true hand)

While an episode runs (the runtime acting), it keeps the hand's distance to the goal over the
last ``window`` seconds. When the hand has not come ``progress`` metres closer over that
window (stuck, circling, moving away), it steers the hand to the goal at ``speed`` of full
deflection for ``burst`` seconds, then lets go and watches again. A person needs a moment to
see that something goes wrong; ``window`` is that moment. It never intervenes in the first
``window`` of an episode.
"""

from __future__ import annotations

import collections
import time
from typing import Any

import numpy as np

from robot_rl.hardware.teleop.base import TeleopCommand, Teleoperator


class GoalCorrector(Teleoperator):
    """See the module docstring."""

    name = "corrector"

    def __init__(self, runtime: Any, robot: Any, window: float = 0.6, progress: float = 0.02,
                 burst: float = 0.4, speed: float = 0.8, enabled: bool = True):
        self.runtime, self.robot = runtime, robot
        self.window, self.progress, self.burst, self.speed = window, progress, burst, speed
        self.enabled = enabled
        self._dist: collections.deque[tuple[float, float]] = collections.deque()
        self._until = 0.0
        self._was_running = False
        self.bursts = 0

    def connect(self) -> None:
        pass

    def close(self) -> None:
        pass

    def read(self) -> TeleopCommand:
        rt = self.runtime
        goal = rt.goal
        running = rt.mode == "running" and goal is not None
        now = time.monotonic()
        if running and not self._was_running:  # an episode (or the move home) begins
            self._dist.clear()
            self._until = 0.0
        self._was_running = running
        if not running or not self.enabled:
            return TeleopCommand()
        err = np.asarray(goal, dtype=np.float64) - np.asarray(self.robot.ee_pos(),
                                                               dtype=np.float64)
        d = float(np.linalg.norm(err))
        if now < self._until:
            return self._steer(err, d)
        self._dist.append((now, d))
        while self._dist and now - self._dist[0][0] > self.window:
            self._dist.popleft()
        t0, d0 = self._dist[0]
        if now - t0 >= 0.9 * self.window and d0 - d < self.progress and \
                d > 0.5 * self.progress:
            self._until = now + self.burst
            self._dist.clear()
            self.bursts += 1
            return self._steer(err, d)
        return TeleopCommand()

    def _steer(self, err: np.ndarray, d: float) -> TeleopCommand:
        lin = self.speed * err / max(d, 0.05)  # proportional within 5 cm
        return TeleopCommand(np.concatenate([lin, np.zeros(3)]), None, frozenset())
