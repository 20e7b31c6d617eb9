"""The robot actor on a ROS 2 arm: policy_node with the live policy and the online loop.

    node, spin = start_finetune_node(policy, params_file, overrides, domain_id)
    loop = OnlineRobotLoop(node.runtime, ...)
    node.on_tick = loop.tick
    spin(stop)                                  # on the actor's loop thread, until ``stop``

It is ``policy_node`` (the same ``/joint_states`` subscription, tick schedule, runtime,
shield, watchdog, command topic and ``~/start`` / ``~/stop`` / ``~/estop`` / ``~/reset``
services, and the same parameters file section: ``policy_node``) with the learner's
``LivePolicy`` in place of an exported artifact; each tick first runs ``on_tick`` (the
online loop). It has an rclpy context of its own, so it lives beside other rclpy users of
the process.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from robot_rl.hardware.ros import require_rclpy

require_rclpy()

import rclpy  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402

from robot_rl.nodes.policy_node import PolicyNode  # noqa: E402


class FinetuneNode(PolicyNode):
    """policy_node running the live policy; ``on_tick(runtime)`` before every tick."""

    node_name = "policy_node"  # reads policy_node's parameters
    allow_autostart = False  # the online loop starts and stops episodes

    def __init__(self, policy: Any, **kwargs: Any):
        self._live = policy
        self.on_tick: Callable[[Any], None] | None = None
        super().__init__(**kwargs)

    def make_policy(self, p: Any) -> Any:
        return self._live

    def before_tick(self) -> None:
        if self.on_tick is not None:
            self.on_tick(self.runtime)


def start_finetune_node(policy: Any, params_file: Path, overrides: dict[str, Any],
                        domain_id: int | None = None
                        ) -> tuple[FinetuneNode, Callable[[threading.Event], None]]:
    """The node (its runtime built from the parameters) and the function that spins it
    until an event is set, then sends the final hold and shuts its context down."""
    args = ["--ros-args", "--params-file", str(params_file)]
    for k, v in overrides.items():
        args += ["-p", f"{k}:={str(v).lower() if isinstance(v, bool) else v}"]
    ctx = rclpy.Context()
    kwargs: dict[str, Any] = {} if domain_id is None else {"domain_id": domain_id}
    rclpy.init(args=args, context=ctx,
               signal_handler_options=rclpy.signals.SignalHandlerOptions.NO, **kwargs)
    try:
        node = FinetuneNode(policy, context=ctx)
    except BaseException:
        rclpy.shutdown(context=ctx)
        raise

    def spin(stop: threading.Event) -> None:
        executor = SingleThreadedExecutor(context=ctx)
        executor.add_node(node)
        try:
            while not stop.is_set() and ctx.ok():
                executor.spin_once(timeout_sec=0.05)
        finally:
            node.shutdown()
            node.destroy_node()
            executor.shutdown()
            if ctx.ok():
                rclpy.shutdown(context=ctx)

    return node, spin
