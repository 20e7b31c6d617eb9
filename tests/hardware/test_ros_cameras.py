"""Cameras over ROS 2 with real rclpy and DDS over loopback: sim_robot_node in push's scene
publishing its cameras as the RealSense wrapper does, policy_node running a pixel student on
them. Conditions are awaited with deadlines; no rate is asserted."""

from __future__ import annotations

import json

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from geometry_msgs.msg import PoseStamped  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import CameraInfo, Image  # noqa: E402

from robot_rl.hardware.cameras.base import Intrinsics  # noqa: E402
from robot_rl.hardware.ros.images import (  # noqa: E402
    camera_info_msg,
    image_array,
    image_msg,
)
from robot_rl.hardware.ros.launcher import sim_camera_overrides  # noqa: E402

from .test_ros_nodes import Observer, _domain_id, _running, _start, _stop  # noqa: E402


def test_image_messages_round_trip_and_malformed_ones_are_refused():
    rgb = np.random.default_rng(0).integers(0, 256, (6, 8, 3), dtype=np.uint8)
    depth = np.arange(48, dtype=np.uint16).reshape(6, 8) * 100
    assert np.array_equal(image_array(image_msg(rgb, 5, "f")), rgb)
    assert np.array_equal(image_array(image_msg(depth, 5, "f")), depth)
    bgr = image_msg(rgb[..., ::-1].copy(), 5, "f")
    bgr.encoding = "bgr8"
    assert np.array_equal(image_array(bgr), rgb)
    metres = Image(height=1, width=3, encoding="32FC1", step=12,
                   data=np.array([0.5, np.nan, 1.25], np.float32).tobytes())
    assert image_array(metres).tolist() == [[500, 0, 1250]]
    short = image_msg(rgb, 5, "f")
    short.data = short.data[:10]
    assert "do not fit" in image_array(short)
    odd = image_msg(rgb, 5, "f")
    odd.encoding = "yuv422"
    assert "unsupported encoding" in image_array(odd)
    info = camera_info_msg(Intrinsics(width=8, height=6, fx=7.0, fy=7.0, ppx=4.0, ppy=3.0),
                           1_500_000_000, "f")
    assert info.k[0] == 7.0 and info.header.stamp.sec == 1 and info.header.stamp.nanosec == 5e8


def test_the_launcher_shows_a_camera_policy_its_scene(pixel_artifact):
    meta = json.loads((pixel_artifact / "policy.json").read_text())
    o = sim_camera_overrides(meta)
    assert o == {"task": "push", "cameras": "[front,wrist]", "camera_width": 24,
                 "camera_height": 24, "camera_depth": True}
    assert sim_camera_overrides({"task": "reach"}) == {}


@pytest.mark.slow
def test_a_pixel_student_runs_on_the_simulated_arms_image_topics(pixel_artifact, tmp_path):
    domain = _domain_id()
    stats = tmp_path / "stats.json"
    sim = _start("sim_robot_node", {**sim_camera_overrides(json.loads(
        (pixel_artifact / "policy.json").read_text())), "camera_fps": 20.0}, domain)
    policy = _start("policy_node", {"artifact": pixel_artifact, "autostart": True,
                                    "rate_hz": 100.0, "max_frame_age": 0.5,
                                    "stats_file": stats}, domain)
    obs = Observer(domain)
    images: list[Image] = []
    infos: list[CameraInfo] = []
    goals: list[PoseStamped] = []
    best = QoSProfile(depth=5, reliability=ReliabilityPolicy.BEST_EFFORT)
    obs.node.create_subscription(Image, "/camera/wrist/aligned_depth_to_color/image_raw",
                                 obs._rec(images), best)
    obs.node.create_subscription(CameraInfo, "/camera/front/color/camera_info",
                                 obs._rec(infos), best)
    obs.node.create_subscription(PoseStamped, "/goal_pose", obs._rec(goals), 10)
    try:
        assert obs.wait_for(lambda: bool(images) and bool(infos) and bool(goals), 60.0), \
            "no depth image, camera_info or goal from sim_robot_node"
        _, depth = images[-1]
        d = image_array(depth)
        assert isinstance(d, np.ndarray) and d.shape == (24, 24) and d.dtype == np.uint16
        assert infos[-1][1].width == 24 and infos[-1][1].k[0] > 0
        # the policy starts once joint states and both cameras' frames are fresh (or, after a
        # loaded host's stall held it before this observer matched, on ~/start), then acts
        _running(obs)
        n = len(obs.commands)
        assert obs.wait_for(lambda: len(obs.commands) > n + 20, 30.0)
        # a new episode: the scene is redrawn and its goal published
        before = len(goals)
        res = obs.call("/sim_robot_node/reset")
        assert res.success and "goal" in res.message
        assert obs.wait_for(lambda: len(goals) > before, 10.0)
    finally:
        obs.close()
        log_policy = _stop(policy)
        log_sim = _stop(sim)
        print(log_policy[-2000:], log_sim[-2000:])
    s = json.loads(stats.read_text())
    assert s["policy_steps"] > 0 and s["frame_age_ms"][0] > 0
    assert "camera front on /camera/front/color/image_raw" in log_policy

