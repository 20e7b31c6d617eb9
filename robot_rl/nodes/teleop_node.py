"""teleop_node: record demonstrations on a ROS 2 arm with a teleop device.

    robot-rl-teleop-node --ros-args --params-file launch/config/arm7.yaml \
        -p task:=reach -p device:=keyboard -p out:=data/reach_real -p episodes:=20

It is policy_node (the same /joint_states subscription, tick schedule, shield, controller,
watchdog, command topic and services) with a person in the policy's place: each tick reads
the device (``keyboard`` in this terminal, ``spacemouse``, ``gamepad``), and each policy step
maps it into the task's action space; the steps go into a dataset in the layout
``robot-rl record`` writes in sim (``recording/robot_recorder.py``). Keys (keyboard): Enter
starts an episode and saves it, x re-records, y / n label success / failure (otherwise the
task's own success test), q quits. With ``artifact`` set the policy acts and moving the
device takes over (HIL-SERL interventions, flagged in the dataset).

The keyboard is read from this process's terminal: run the node with ``ros2 run`` or the
console entry point, not from a launch file (launch gives nodes no terminal input).
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from robot_rl.hardware.ros import require_rclpy

require_rclpy()

from robot_rl.errors import RobotRLError  # noqa: E402
from robot_rl.hardware.ros.spin import spin_node  # noqa: E402
from robot_rl.nodes.policy_node import PolicyNode, PolicyNodeParams  # noqa: E402

DEVICES = ("keyboard", "spacemouse", "gamepad")


@dataclasses.dataclass
class TeleopNodeParams(PolicyNodeParams):
    """Parameters of teleop_node: policy_node's, and the recording's."""

    task: str = "reach"
    """Task whose observation, action space and rewards the dataset uses (the artifact's,
    when one is given)."""
    robot: str = ""
    """The arm, without an artifact (its parameters file's; empty: the task's own, arm7)."""
    device: str = "keyboard"
    """keyboard (this terminal), spacemouse or gamepad."""
    out: str = "data/demos"
    """Dataset folder."""
    episodes: int = 20
    """Committed episodes to have in the dataset when done (the node then exits)."""
    resume: bool = False
    """Append to the dataset in ``out``."""
    episode_length: int = 0
    """Policy steps after which an episode ends (0: episode_time's)."""
    episode_time: float = 60.0
    """The longest episode [s]; Enter or success end it sooner."""
    success_ends: str = "auto"
    """When the task's success test holds: auto (the episode is saved) or confirm (Enter
    saves it)."""
    keep_failures: bool = False
    """Also save episodes that reach the time limit without success (else only labelled
    ones)."""


class TeleopNode(PolicyNode):
    node_name = "teleop_node"
    params_class = TeleopNodeParams
    allow_autostart = False  # episodes start on the person's key

    def __init__(self, device: Any = None, **kwargs: Any):
        """``device``: a Teleoperator to use instead of the one the ``device`` parameter
        names (tests)."""
        from robot_rl.data.writer import DatasetWriter
        from robot_rl.recording.pacing import Pacing
        from robot_rl.recording.robot_recorder import RobotRecorder, robot_dataset_spec

        self.recorder: RobotRecorder | None = None
        super().__init__(**kwargs)
        p: TeleopNodeParams = self.params  # type: ignore[assignment]
        dev = device if device is not None else self._open_device(p.device)
        writer = DatasetWriter(Path(p.out), robot_dataset_spec(self.runtime), resume=p.resume)
        log = self.get_logger().info
        pacing = Pacing(p.episode_time, p.success_ends,  # type: ignore[arg-type]
                        p.keep_failures)
        self.recorder = RobotRecorder(self.runtime, writer, dev, p.episodes,
                                      p.episode_length or None, with_policy=bool(p.artifact),
                                      log=log, pacing=pacing)
        dev.connect()
        log(f"recording {self.runtime.observer.cfg.name} into {p.out} "
            f"({writer.num_episodes}/{p.episodes} episodes there)")
        if hasattr(dev, "help"):
            log(dev.help())
        log("Enter starts an episode")

    def make_policy(self, p: Any) -> Any:
        if p.artifact:  # the policy acts, the person intervenes
            policy = super().make_policy(p)
            if policy.meta["task"] != p.task:
                raise RobotRLError(f"the artifact is for task {policy.meta['task']!r}, the "
                                   f"'task' parameter says {p.task!r}")
            return policy
        from robot_rl.recording.robot_recorder import NoPolicy

        return NoPolicy(p.task, p.robot or None)

    @staticmethod
    def _open_device(kind: str) -> Any:
        if kind not in DEVICES:
            raise RobotRLError(f"device must be one of {DEVICES}, got {kind!r}")
        from robot_rl.recording.record import open_teleop

        return open_teleop(kind)  # type: ignore[arg-type]

    def before_tick(self) -> None:
        if self.recorder is not None:
            self.recorder.tick()
            self.finished = self.recorder.done

    def shutdown(self) -> None:
        if self.recorder is not None:
            self.recorder.close()
            self.recorder.device.close()
            self.get_logger().info(f"{self.recorder.saved} episodes saved, "
                                   f"{self.recorder.dropped} dropped")
        super().shutdown()


def main(args: Sequence[str] | None = None) -> None:
    sys.exit(spin_node(TeleopNode, args))


if __name__ == "__main__":
    main()
