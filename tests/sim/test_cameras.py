"""Policy cameras: the fast OpenGL mode, depth in metres, every env at once, and MuJoCo
Warp's batch ray tracer (on Warp's CPU device) agreeing with OpenGL."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
import torch

from robot_rl.errors import ConfigError
from robot_rl.sim import make_env
from robot_rl.sim.cameras import CameraConfig, SimCameras
from robot_rl.sim.render import OffscreenGL


def _axis_distance(model: mujoco.MjModel, data: mujoco.MjData, cam: str) -> float:
    """Distance from the camera to the first geom along its optical axis (-z)."""
    cid = model.camera(cam).id
    axis = -data.cam_xmat[cid].reshape(3, 3)[:, 2]
    geom = np.zeros(1, np.int32)
    return float(mujoco.mj_ray(model, data, data.cam_xpos[cid], axis, None, 1, -1, geom))


@pytest.fixture(scope="module")
def push2():
    env = make_env("push", 2, seed=3)
    env.reset(seed=3)
    return env


def test_policy_mode_looks_like_the_default_without_its_costly_parts(push2):
    data = mujoco.MjData(push2.model)
    push2.backend.write_data(0, data)
    mujoco.mj_camlight(push2.model, data)
    images = {}
    for mode in ("video", "policy"):
        gl = OffscreenGL(push2.model, 64, 64, "front", mode)
        images[mode] = gl.render(data).astype(float)
        gl.close()
    # the same scene from the same camera: no shadows or reflections, otherwise alike
    assert np.abs(images["video"] - images["policy"]).mean() < 12.0
    assert images["policy"].std() > 10.0  # not a blank frame
    # the env's own model keeps MuJoCo's defaults (policy mode draws with a copy)
    assert push2.model.vis.quality.offsamples == 4
    assert push2.model.vis.quality.shadowsize > 0


def test_depth_is_the_distance_along_the_camera_axis(push2):
    data = mujoco.MjData(push2.model)
    push2.backend.write_data(0, data)
    mujoco.mj_camlight(push2.model, data)
    gl = OffscreenGL(push2.model, 64, 64, "front", "policy")
    _, z = gl.render_rgbd(data)
    gl.close()
    centre = float(z[31:33, 31:33].mean())
    assert centre == pytest.approx(_axis_distance(push2.model, data, "front"), abs=0.01)


def test_every_envs_cameras_as_batched_tensors(push2):
    cfg = CameraConfig(names=("front", "side"), height=32, width=48, depth=True)
    with SimCameras(push2, cfg) as cams:
        assert cams.kind == "opengl"
        frames = cams.render()
        only = cams.render(torch.tensor([1]))
    assert set(frames) == {"front", "side"}
    rgb, depth = frames["front"]
    assert rgb.shape == (2, 3, 32, 48) and rgb.dtype == torch.uint8
    assert depth is not None and depth.shape == (2, 1, 32, 48) and depth.dtype == torch.float32
    assert bool((depth > 0).all())
    # the envs differ (randomized puck and goal), and env 1 alone is env 1 of the batch
    assert not torch.equal(frames["side"].rgb[0], frames["side"].rgb[1])
    assert torch.equal(only["side"].rgb[0], frames["side"].rgb[1])


def test_bad_camera_requests_are_refused(push2):
    with pytest.raises(ConfigError, match="unknown camera"):
        SimCameras(push2, CameraConfig(names=("wrist_cam",)))
    with pytest.raises(ConfigError, match="render mode"):
        OffscreenGL(push2.model, 8, 8, "front", "fast")  # type: ignore[arg-type]


@pytest.mark.slow
def test_warp_batch_renderer_agrees_with_opengl():
    pytest.importorskip("mujoco_warp")
    env = make_env("push", 2, backend="warp", device="cpu", seed=3)
    env.reset(seed=3)
    cfg = CameraConfig(names=("front",), height=24, width=24, depth=True)
    with SimCameras(env, cfg) as cams:
        assert cams.kind == "warp"
        warp = cams.render()["front"]
    cpu = make_env("push", 2, seed=3)
    cpu.reset(seed=3)
    with SimCameras(cpu, cfg) as cams:
        gl = cams.render()["front"]
    assert warp.rgb.shape == gl.rgb.shape == (2, 3, 24, 24)
    assert warp.depth is not None and gl.depth is not None
    # same geometry: depth agrees where both see a surface; colours alike (shading differs)
    assert torch.allclose(warp.depth[:, :, 10:14, 10:14], gl.depth[:, :, 10:14, 10:14],
                          atol=0.01)
    assert (warp.rgb.float() - gl.rgb.float()).abs().mean() < 12.0


def test_the_arm_carries_a_wrist_camera_that_sees_its_fingers():
    env = make_env("lift", 1, seed=0)
    env.reset(seed=0)
    model, data = env.model, mujoco.MjData(env.model)
    offsets = []
    for _ in range(2):
        env.backend.write_data(0, data)
        hand = model.body("hand").id
        offsets.append(np.linalg.norm(data.cam_xpos[model.camera("wrist").id]
                                      - data.xpos[hand]))
        env.step(torch.full((1, env.act_dim), 0.8))
    assert offsets[0] == pytest.approx(offsets[1], abs=1e-9)  # rigidly on the hand
    with SimCameras(env, CameraConfig(names=("wrist",), height=48, width=48,
                                      depth=True)) as cams:
        depth = cams.render()["wrist"].depth
    assert depth is not None and float(depth.min()) < 0.15  # a fingertip, close below it
