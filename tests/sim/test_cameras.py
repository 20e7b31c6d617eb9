"""Policy cameras: the fast OpenGL mode, depth in metres, every env at once, and MuJoCo
Warp's batch ray tracer (on Warp's CPU device) agreeing with OpenGL."""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np
import pytest
import torch

from robot_rl.errors import ConfigError
from robot_rl.sim import make_env
from robot_rl.sim.cameras import SimCameras
from robot_rl.sim.configs import CameraConfig
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
    assert bool((depth >= 0).all()) and float((depth > 0).float().mean()) > 0.5  # 0: sky
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


def test_visual_randomization_varies_the_look_per_env_and_redraws(push2):
    from robot_rl.sim.configs import VISUAL_PRESETS, VisualDR

    state, rgba = push2.backend.qpos.clone(), push2.model.geom_rgba.copy()
    push2.backend.qpos[1] = push2.backend.qpos[0]  # two envs in the same state
    push2.backend.mocap_pos[1] = push2.backend.mocap_pos[0]
    push2.backend.forward(torch.arange(2))
    try:
        base = CameraConfig(names=("front",), height=32, width=32, depth=True)
        with SimCameras(push2, base) as cams:
            plain = cams.render()["front"]
        assert torch.equal(plain.rgb[0], plain.rgb[1])  # no randomization: the same image
        scene = VisualDR(camera_pos=0.02, fovy=4.0, light=0.4, color=0.15)
        cfg = dataclasses.replace(base, visual=scene)
        with SimCameras(push2, cfg, seed=1) as cams:
            a = cams.render()["front"]
            again = cams.render()["front"]
            cams.redraw([0])
            b = cams.render()["front"]
        assert not torch.equal(a.rgb[0], a.rgb[1])  # each env its own look
        assert torch.equal(a.rgb, again.rgb)  # held until the env's next draw
        assert not torch.equal(a.rgb[0], b.rgb[0]) and torch.equal(a.rgb[1], b.rgb[1])
        assert np.array_equal(push2.model.geom_rgba, rgba)  # the env's model untouched
        # image noise and depth holes, fresh every frame
        strong = VISUAL_PRESETS["strong"]
        noisy = dataclasses.replace(base, visual=VisualDR(
            rgb_noise=strong.rgb_noise, depth_noise=strong.depth_noise,
            depth_holes=strong.depth_holes))
        with SimCameras(push2, noisy, seed=2) as cams:
            n1, n2 = cams.render()["front"], cams.render()["front"]
        assert not torch.equal(n1.rgb, n2.rgb)
        assert n1.depth is not None and plain.depth is not None
        seen = plain.depth > 0  # the sky has no depth
        holes = float((n1.depth[seen] == 0).float().mean())
        assert 0.01 < holes < 0.25  # ~8% of 4x4 blocks
        valid = (n1.depth > 0) & seen
        assert (n1.depth[valid] - plain.depth[valid]).abs().mean() < 0.02
        assert (n1.depth[valid] != plain.depth[valid]).float().mean() > 0.5
    finally:
        push2.backend.qpos.copy_(state)
        push2.backend.forward(torch.arange(2))


def test_scene_randomization_needs_the_opengl_renderer():
    pytest.importorskip("mujoco_warp")
    from robot_rl.sim.configs import VisualDR

    env = make_env("push", 1, backend="warp", device="cpu")
    with pytest.raises(ConfigError, match="OpenGL renderer"):
        SimCameras(env, CameraConfig(visual=VisualDR(color=0.1)))


def test_policy_cameras_do_not_see_goal_markers():
    env = make_env("reach", 1, seed=0)
    env.reset(seed=0)
    data = mujoco.MjData(env.model)
    env.backend.write_data(0, data)
    mujoco.mj_camlight(env.model, data)
    gid = env.model.geom("target_geom").id
    env.model.geom_rgba[gid] = (1.0, 0.0, 1.0, 1.0)  # a magenta marker, easy to find
    env.model.geom_size[gid, 0] = 0.08  # (this test's own env)
    seen = {}
    for mode in ("video", "policy"):
        gl = OffscreenGL(env.model, 64, 64, "front", mode)
        img = gl.render(data).astype(int)
        gl.close()
        seen[mode] = int(((img[..., 0] > 150) & (img[..., 1] < 80) & (img[..., 2] > 150)).sum())
    assert seen["video"] > 5 and seen["policy"] == 0


def test_an_env_with_cameras_returns_images_with_each_step():
    cfg = CameraConfig(names=("front", "wrist"), height=24, width=32, depth=True)
    env = make_env("push", 3, seed=0, episode_length=2, cameras=cfg)
    assert env.image_shapes == {"front.rgb": (3, 24, 32), "front.depth": (1, 24, 32),
                                "wrist.rgb": (3, 24, 32), "wrist.depth": (1, 24, 32)}
    env.reset(seed=0)
    first = env.images()
    assert {k: tuple(v.shape[1:]) for k, v in first.items()} == env.image_shapes
    act = torch.zeros(3, env.act_dim)
    act[:, 0] = 1.0
    _, _, _, _, truncated, info = env.step(act)
    assert not truncated.any() and "images" in info
    assert not torch.equal(info["images"]["wrist.rgb"], first["wrist.rgb"])  # it moved
    assert torch.equal(info["images"]["front.rgb"], info["final_images"]["front.rgb"])
    _, _, _, _, truncated, info = env.step(act)
    assert truncated.all()  # every env reset: images after differ from the final ones
    assert not torch.equal(info["images"]["wrist.rgb"], info["final_images"]["wrist.rgb"])
    assert torch.equal(info["images"]["wrist.rgb"], env.images()["wrist.rgb"])
    plain = make_env("push", 1)
    assert plain.image_shapes == {} and plain.images() == {}
    _, _, _, _, _, info = plain.step(torch.zeros(1, plain.act_dim))
    assert "images" not in info


def test_with_cameras_the_policy_vector_keeps_what_a_robot_measures():
    from robot_rl.sim.measurable import unmeasured_terms

    plain = make_env("push", 2, seed=0)
    hidden = unmeasured_terms(plain)
    assert hidden and all("puck" in n for n in hidden), hidden
    seeing = make_env("push", 2, seed=0, cameras=CameraConfig(height=16, width=16))
    names = [n for n, _ in seeing.obs_layout]
    assert names == [n for n, _ in plain.obs_layout if n not in hidden]
    assert seeing.critic_layout == plain.critic_layout  # the critic sees every term
    assert seeing.obs_groups == {"policy": seeing.obs_dim,
                                 "critic": plain.obs_groups["critic"]}
    obs = seeing.reset(seed=1)
    ref = plain.reset(seed=1)
    keep = torch.cat([torch.arange(s, s + w) for (n, w), s in zip(
        plain.obs_layout, np.cumsum([0] + [w for _, w in plain.obs_layout]), strict=False)
        if n not in hidden])
    assert torch.allclose(obs, ref[:, keep])
    assert torch.allclose(seeing.group_obs()["critic"], plain.group_obs()["critic"])
    _, _, _, _, _, info = seeing.step(torch.zeros(2, seeing.act_dim))
    assert info["obs_groups"]["critic"].shape == (2, plain.obs_groups["critic"])
