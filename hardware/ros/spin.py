"""What every node's entry point shares: the sensor QoS and the spin-until-signal loop."""

from __future__ import annotations

import signal
import sys
from collections.abc import Sequence
from typing import Any

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

from robot_rl.errors import RobotRLError

SENSOR_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                        reliability=ReliabilityPolicy.BEST_EFFORT)
"""``/joint_states``: the newest sample only, no retransmission."""


def spin_node(make: Any, args: Sequence[str] | None) -> int:
    """Init rclpy, build the node, spin until SIGINT/SIGTERM (or the node sets
    ``finished``), call its ``shutdown``; the exit status is 2 for a bad configuration,
    else the node's ``exit_code`` (0 where it has none)."""
    rclpy.init(args=list(sys.argv if args is None else args),
               signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
    stop = {"flag": False}

    def on_signal(*_: object) -> None:
        stop["flag"] = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    node = None
    try:
        node = make()
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        while not stop["flag"] and rclpy.ok() and not getattr(node, "finished", False):
            executor.spin_once(timeout_sec=0.05)
    except (RobotRLError, ValueError) as e:
        print(f"{sys.argv[0]}: error: {e}", file=sys.stderr)
        return 2
    except ExternalShutdownException:
        pass
    finally:
        if node is not None:
            node.shutdown()
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
    return int(getattr(node, "exit_code", 0))


