"""Cameras in the deploy path: the simulated arm in a task's scene, its cameras, frames into
the runtime with their age checked, and push through the cameras end to end.

No test asserts a rate or relies on a first frame: frames are awaited with deadlines, and the
runtime's tests drive ``tick`` with explicit clocks."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from robot_rl.cli import main
from robot_rl.errors import ConfigError
from robot_rl.export import load_policy
from robot_rl.hardware.camera_feed import frame_input
from robot_rl.hardware.cameras.base import Camera, CameraFrame, Intrinsics
from robot_rl.hardware.cameras.sim_camera import SimArmCameras
from robot_rl.hardware.configs import DeployConfig, SimCameraConfig, SimRobotConfig
from robot_rl.hardware.observation import TaskObserver, task_config_from_meta
from robot_rl.hardware.runtime import DeployRuntime
from robot_rl.hardware.sim_robot import SimRobot
from robot_rl.hardware.sim_robot_process import SimRobotProcess
from robot_rl.hardware.sim_task import SimTaskEpisodes
from robot_rl.sim.configs import CameraConfig
from tests.polling import poll

from .conftest import ScriptedRobot

INTR = Intrinsics(width=24, height=24, fx=20.0, fy=20.0, ppx=12.0, ppy=12.0)


def _frame(t: float, h: int = 24, w: int = 24, value: int = 100) -> CameraFrame:
    return CameraFrame(color=np.full((h, w, 3), value, np.uint8),
                       depth=np.full((h, w), 800, np.uint16), depth_scale=0.001,
                       frame_number=0, timestamp_ms=t * 1e3, timestamp_domain="system_time",
                       host_time=t, intrinsics=INTR)


class ScriptedCamera(Camera):
    """A camera whose frames the test hands over."""

    def __init__(self, name: str):
        self.name = name
        self.next: CameraFrame | None = None

    def connect(self) -> None:
        pass

    def close(self) -> None:
        pass

    def poll(self) -> CameraFrame | None:
        frame, self.next = self.next, None
        return frame

    def read(self, timeout_s: float | None = None) -> CameraFrame | None:
        return self.poll()


def _wait_frame(cam: Camera, deadline_s: float = 20.0) -> CameraFrame:
    frame = poll(cam.poll, deadline_s, every=0.005)
    assert frame is not None, f"no frame from {cam.name} within {deadline_s} s"
    return frame


@pytest.mark.slow
def test_the_observer_gives_a_camera_policy_only_what_the_robot_measures(pixel_artifact):
    pol = load_policy(pixel_artifact)
    cfg = task_config_from_meta(pol.meta)
    layout = [(t["name"], t["width"]) for t in pol.meta["observation"]["layout"]]
    obs = TaskObserver(cfg, layout)
    assert obs.obs_dim == pol.obs_dim and obs.layout == layout
    assert "puck_pos" not in dict(obs.layout)
    home = np.asarray(obs.robot.home)
    x = obs(home, np.zeros_like(home), np.zeros(pol.act_dim, np.float32),
            np.zeros(pol.act_dim, np.float32))
    assert x.shape == (pol.obs_dim,) and np.isfinite(x).all()
    # the goal is push's goal buffer, set from outside as reach's target is
    obs.set_goal((0.5, 0.1, 0.02))
    assert np.allclose(obs.goal, (0.5, 0.1, 0.02))
    with pytest.raises(ConfigError, match="observes"):
        TaskObserver(cfg, [*layout, ("puck_pos", 3)])


def test_the_arm_in_a_task_scene_places_objects_and_the_judge_scores_them(pixel_artifact):
    cfg = task_config_from_meta(load_policy(pixel_artifact).meta)
    episodes = SimTaskEpisodes(cfg, seed=0)
    robot = SimRobot(SimRobotConfig(), scene=cfg)  # not connected: no physics runs
    scene, goal = episodes.draw(3)
    assert goal is not None and goal.shape == (3,)
    robot.reset(None, scene)
    now = robot.scene_state()
    assert np.allclose(now.qpos[robot._qadr], robot.spec.home)
    others = [i for i in range(len(now.qpos)) if i not in set(robot._qadr)]
    assert np.allclose(now.qpos[others], scene.qpos[others])
    assert not episodes.success(now)  # the puck starts away from the goal
    puck = robot.model.joint("puck_joint").qposadr[0]
    moved = now.qpos.copy()
    moved[puck:puck + 2] = goal[:2]
    assert episodes.success(now._replace(qpos=moved))
    with pytest.raises(ConfigError, match="scene state"):
        robot.reset(None, now._replace(qpos=now.qpos[:5]))


def test_simulated_cameras_deliver_frames_as_a_realsense_does(pixel_artifact):
    cfg = task_config_from_meta(load_policy(pixel_artifact).meta)
    robot = SimRobot(SimRobotConfig(), scene=cfg)
    robot.reset(None, SimTaskEpisodes(cfg).draw(0)[0])
    cams = CameraConfig(names=("front", "wrist"), height=32, width=40, depth=True)
    with SimArmCameras(robot, cams, SimCameraConfig(fps=60, latency=0.03)) as sim:
        front, wrist = _wait_frame(sim.camera("front")), _wait_frame(sim.camera("wrist"))
    for f in (front, wrist):
        assert f.color is not None and f.color.shape == (32, 40, 3)
        assert f.depth is not None and f.depth.dtype == np.uint16
        assert f.host_time - f.timestamp_ms / 1e3 == pytest.approx(0.03, abs=1e-6)
        d = f.depth_m()
        assert 0.05 < np.median(d[d > 0]) < 3.0  # the table and the arm, metres away
        assert f.intrinsics.width == 40 and f.intrinsics.ppx == 20.0
    assert np.abs(front.color.astype(int) - wrist.color.astype(int)).mean() > 5
    with SimArmCameras(robot, cams, SimCameraConfig(fps=200, drop_prob=0.5, seed=1)) as sim:
        end = time.monotonic() + 20.0
        while sim.captures < 40 and time.monotonic() < end:
            time.sleep(0.01)
    assert sim.captures >= 40 and 0 < sim.dropped < sim.captures
    with pytest.raises(ConfigError, match="unknown camera"):
        SimArmCameras(robot, CameraConfig(names=("nope",)))


def test_frames_become_the_policy_inputs_with_depth_holes_kept():
    frame = _frame(0.0, h=480, w=640)
    frame.color[:240] = 200  # top half bright
    frame.depth[:, :320] = 0  # left half: no depth return
    rgb = frame_input(frame, "rgb", (3, 48, 64))
    assert rgb.shape == (3, 48, 64) and rgb.dtype == np.uint8
    assert (rgb[:, :24] == 200).all() and (rgb[:, 24:] == 100).all()
    depth = frame_input(frame, "depth", (1, 48, 64))
    assert depth.shape == (1, 48, 64) and depth.dtype == np.float32
    assert (depth[0, :, :32] == 0).all()  # holes stay holes, never blended into depth
    assert np.allclose(depth[0, :, 32:], 0.8)


def test_the_runtime_feeds_frames_and_holds_on_a_stale_camera(pixel_artifact):
    pol = load_policy(pixel_artifact)
    robot = ScriptedRobot()
    cfg = DeployConfig(rate_hz=50, sliced_policy=False, max_frame_age=0.1)
    with pytest.raises(ConfigError, match="give the runtime those cameras"):
        DeployRuntime(pol, robot, cfg)
    with pytest.raises(ConfigError, match="were not given"):
        DeployRuntime(pol, robot, cfg, cameras={"front": ScriptedCamera("front")})
    cams = {n: ScriptedCamera(n) for n in ("front", "wrist")}
    rt = DeployRuntime(pol, robot, cfg, cameras=cams)
    home = np.asarray(robot.spec.home)
    t = 100.0
    robot.set(home, stamp=t)
    rt.tick(robot.observe(), t)  # joint states but no frames: it does not start
    assert rt.mode == "idle" and rt.stats.policy_steps == 0
    assert "no fresh camera frames" in rt.start(t)[1]
    for _ in range(10):  # frames every tick (20 ms): it runs, a policy step per tick
        t += 0.02
        robot.set(home, stamp=t)
        for c in cams.values():
            c.next = _frame(t - 0.01)
        rt.tick(robot.observe(), t)
    assert rt.mode == "running" and rt.stats.policy_steps >= 9
    assert rt.stats.inference.n == rt.stats.policy_steps and rt.stats.frame_age.n > 0
    for _ in range(8):  # the wrist camera stops; joint states keep coming
        t += 0.02
        robot.set(home, stamp=t)
        cams["front"].next = _frame(t)
        rt.tick(robot.observe(), t)
    assert rt.mode == "idle" and rt.stats.camera_holds == 1
    assert robot.sent[-1].hold
    cams["wrist"].next = _frame(t)
    t += 0.02
    robot.set(home, stamp=t)
    rt.tick(robot.observe(), t)
    assert rt.mode == "idle"  # fresh frames again, but it stays held until started
    assert rt.start(t) == (True, "running")


@pytest.mark.slow
def test_push_through_the_cameras_of_the_arm_in_its_own_process(pixel_artifact, tmp_path):
    cfg = task_config_from_meta(load_policy(pixel_artifact).meta)
    scene, _ = SimTaskEpisodes(cfg).draw(5)
    cams = CameraConfig(names=("front",), height=24, width=24, depth=True)
    with SimRobotProcess(SimRobotConfig(), scene=cfg, cameras=cams) as robot:
        robot.reset(None, scene)
        puck = robot.model.joint("puck_joint").qposadr[0]
        end = time.monotonic() + 20.0  # the next physics step publishes the reset scene
        while time.monotonic() < end and not np.allclose(
                robot.scene_state().qpos[puck:puck + 2], scene.qpos[puck:puck + 2], atol=1e-3):
            time.sleep(0.01)
        assert np.allclose(robot.scene_state().qpos[puck:puck + 2],
                           scene.qpos[puck:puck + 2], atol=1e-3)
        frame = _wait_frame(robot.camera("front"))
        assert frame.color.shape == (24, 24, 3) and frame.depth.shape == (24, 24)
        with pytest.raises(ConfigError, match="no simulated camera"):
            robot.camera("wrist")
    # the CLI: episodes of push on the simulated arm, the student seeing its cameras
    out = tmp_path / "summary.json"
    main(["deploy", str(pixel_artifact), "--robot", "sim", "--episodes", "1", "--duration",
          "1", "--deploy.rate-hz", "100", "--deploy.max-frame-age", "0.5",  # a loaded host
          "--summary-json", str(out)])
    s = json.loads(out.read_text())
    assert len(s["episodes"]) == 1 and s["policy_steps"] > 0
    assert s["frame_age_ms"][0] > 0 and 0.0 <= s["episode_success_rate"] <= 1.0
