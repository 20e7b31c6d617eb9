"""The Teleoperator interface: a device read as an end-effector twist, a gripper and events.

    with KeyboardTeleop() as dev:          # or SpaceMouseTeleop(), GamepadTeleop()
        cmd = dev.read()                   # never blocks: the device's state right now
        cmd.twist                          # (6,) in [-1, 1]: linear x, y, z, angular x, y, z
        cmd.gripper                        # -1 open .. +1 closed, None: the device has none
        cmd.events                         # {"next", "rerecord", "quit", "success", ...}

The twist is in the robot's base frame as fractions of full scale; ``TeleopMapper`` turns it
into an action of the task's action space. ``events`` are edges (each reported once).
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Callable, Iterable, Iterator
from types import TracebackType

import numpy as np

from robot_rl.errors import RobotRLError

EVENTS = ("next", "rerecord", "quit", "success", "failure")
"""next: save the episode and go on; rerecord: drop it and record it again; quit: stop
(the open episode is dropped); success / failure: label the episode (hardware)."""


class TeleopError(RobotRLError):
    """A teleoperation device is missing, unsupported or failed."""


@dataclasses.dataclass(frozen=True)
class TeleopCommand:
    """One reading of a teleoperation device."""

    twist: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(6))
    """(6,) end-effector velocity command in [-1, 1] (linear xyz, angular xyz), base frame."""
    gripper: float | None = None
    """Gripper command, -1 open .. +1 closed; None: the device does not drive one."""
    events: frozenset[str] = frozenset()
    """Button edges since the last read (see ``EVENTS``)."""

    @property
    def moving(self) -> bool:
        """A non-zero motion command (an intervention, when a policy is running)."""
        return bool(np.any(self.twist != 0.0))


def deadzone(x: np.ndarray, dz: float) -> np.ndarray:
    """Zero inside ``dz``, rescaled so the output still spans [-1, 1]; clipped."""
    x = np.clip(np.asarray(x, dtype=np.float64), -1.0, 1.0)
    mag = np.maximum(np.abs(x) - dz, 0.0) / (1.0 - dz)
    return np.sign(x) * mag


class Teleoperator(abc.ABC):
    """A device (see module docstring). Subclasses implement ``connect``, ``read``, ``close``."""

    name = "teleop"

    def connect(self) -> None:  # noqa: B027 - optional for devices that need no set-up
        """Open the device."""

    @abc.abstractmethod
    def read(self) -> TeleopCommand:
        """The command now; never blocks."""

    def close(self) -> None:  # noqa: B027
        """Release the device (restore the terminal, close the handle)."""

    def __enter__(self) -> Teleoperator:
        self.connect()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


class ScriptedTeleop(Teleoperator):
    """A device-free teleoperator: plays back commands (one per ``read``), then repeats the
    last one, or calls ``fn(k)`` for the k-th read. For tests, demos and replays."""

    name = "scripted"

    def __init__(self, commands: Iterable[TeleopCommand] | Callable[[int], TeleopCommand]):
        self._fn = commands if callable(commands) else None
        self._it: Iterator[TeleopCommand] | None = None if callable(commands) else \
            iter(list(commands))
        self._last = TeleopCommand()
        self.reads = 0

    def read(self) -> TeleopCommand:
        k, self.reads = self.reads, self.reads + 1
        if self._fn is not None:
            return self._fn(k)
        assert self._it is not None
        nxt = next(self._it, None)
        if nxt is None:  # hold the last motion, report no new events
            return dataclasses.replace(self._last, events=frozenset())
        self._last = nxt
        return nxt
