"""teleop_node over real rclpy and DDS (loopback): keys typed into its terminal (a pipe) drive
the simulated arm behind sim_robot_node, and the episodes land in a valid dataset."""

from __future__ import annotations

import os
import queue
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("rclpy")

from robot_rl.data.reader import Dataset  # noqa: E402
from robot_rl.hardware.ros.launcher import default_params_file, node_command, stop_node  # noqa: E402
from tests.hardware.test_ros_nodes import _domain_id  # noqa: E402


class Node:
    """A node process whose output lines are collected on a thread."""

    def __init__(self, module: str, overrides: dict, domain: int, stdin: bool = False):
        env = dict(os.environ, ROS_DOMAIN_ID=str(domain), PYTHONUNBUFFERED="1")
        self.p = subprocess.Popen(node_command(module, default_params_file(), overrides),
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  stdin=subprocess.PIPE if stdin else None, text=True)
        self.lines: queue.Queue[str] = queue.Queue()
        self.log: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.p.stdout is not None
        for line in self.p.stdout:
            self.lines.put(line)

    def wait_for(self, text: str, timeout: float) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                line = self.lines.get(timeout=0.1)
            except queue.Empty:
                continue
            self.log.append(line)
            if text in line:
                return True
        return False

    def keys(self, data: str) -> None:
        assert self.p.stdin is not None
        self.p.stdin.write(data)
        self.p.stdin.flush()


@pytest.mark.slow
def test_keys_in_the_terminal_record_an_episode_on_the_ros_arm(tmp_path: Path):
    domain = _domain_id()
    out = tmp_path / "demos"
    sim = Node("sim_robot_node", {}, domain)
    # a loaded 2-core host can starve /joint_states for 15 ms: a 100 ms watchdog here (a
    # trip drops the episode, see test_robot_recorder), and Enter, not the length, ends it
    node = Node("robot_rl.nodes.teleop_node",
                {"task": "reach", "device": "keyboard", "out": out, "episodes": 1,
                 "watchdog_periods": 20, "episode_length": 1000}, domain, stdin=True)
    try:
        assert node.wait_for("Enter starts an episode", 60), "".join(node.log)
        for _ in range(30):  # until the node has fresh joint states to start on
            node.keys("\r")
            if node.wait_for("recording (Enter saves", 1.0):
                break
        else:
            pytest.fail("no episode started:\n" + "".join(node.log))
        t_end = time.monotonic() + 3.0  # (the thresholds below need ~1 s of 50 Hz steps)
        while time.monotonic() < t_end:  # hold w: +x, as a key's auto-repeat does
            node.keys("w")
            time.sleep(0.05)
        node.keys("y\r")
        assert node.wait_for("episode 1 saved", 10), "".join(node.log)
        node.p.wait(timeout=20)  # the target reached: the node exits by itself
        assert node.p.returncode == 0, "".join(node.log)
    finally:
        for n in (node, sim):
            stop_node(n.p, timeout=15)

    ds = Dataset(out)
    assert ds.validate() == []
    assert ds.num_episodes == 1 and ds.episodes[0]["robot_rl/source"] == "keyboard"
    assert ds.episodes[0]["robot_rl/success"] is True  # labelled with y
    ep = ds.episode(0)
    assert len(ep["action"]) > 40  # > 0.8 s at 50 Hz
    ee = ep["observation.state"][:, 14:17]
    moved = ee[-1] - ee[0]
    assert moved[0] > 0.1 and abs(moved[1]) < 0.3 * moved[0], moved
    np.testing.assert_array_equal(ep["next.observation.state"][:-1],
                                  ep["observation.state"][1:])
