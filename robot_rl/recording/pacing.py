"""How a person's recorded episode ends: ``robot-rl record`` in simulation and
``RobotRecorder`` on a robot (teleop_node) alike.

An episode with a person driving lasts until Enter (``next``: saved), until the task's
success test holds (``success_ends="auto"``: saved at once; ``"confirm"``: the person is told
and Enter saves it), or until the time limit or the task's own termination. Its success is
the test at its last step (unless the person labelled it y/n): with "confirm", a puck that
left the goal before Enter is a failure. An episode that ends at the time limit without
success is saved only if the person labelled it or ``keep_failures`` is set; otherwise it is
dropped and recorded again. The RL episode length
plays no part.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import numpy as np

from robot_rl.errors import ConfigError

SuccessEnds = Literal["auto", "confirm"]


@dataclasses.dataclass(frozen=True)
class Pacing:
    """When a person's episode ends, and whether it is kept (module docstring)."""

    episode_time: float = 60.0
    """The longest episode [s]."""
    success_ends: SuccessEnds = "auto"
    keep_failures: bool = False

    def __post_init__(self) -> None:
        if not self.episode_time > 0:
            raise ConfigError(f"--episode-time must be > 0, got {self.episode_time}")
        if self.success_ends not in ("auto", "confirm"):
            raise ConfigError(f"success_ends must be auto or confirm, got "
                              f"{self.success_ends!r}")

    def steps(self, control_dt: float, episode_length: int | None = None) -> int:
        """The episode's step limit: ``episode_length`` if given, else the time limit's."""
        if episode_length:
            return episode_length
        return max(1, int(np.ceil(self.episode_time / control_dt - 1e-9)))

    def outcome(self, enter: bool, ended: bool, success_now: bool, label: bool | None
                ) -> tuple[str, bool] | None:
        """After a step: None (the episode goes on), or ("save" | "fail", its success).
        ``enter``: the person pressed Enter; ``ended``: the time limit or the task's
        termination; ``success_now``: the task's test at this step, the episode's last if it
        ends here (an episode succeeds when the test holds at its end: one definition,
        ``robot_rl.sim.tasks.base``); ``label``: the person's y/n, if any, which overrides
        it."""
        kept = success_now if label is None else label
        if enter:
            return "save", kept
        if success_now and self.success_ends == "auto":
            return "save", kept
        if ended:
            keep = success_now or label is not None or self.keep_failures
            return ("save" if keep else "fail"), kept
        return None
