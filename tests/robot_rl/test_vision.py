"""Learning from pixels: DrQ's shift, the pixel student, and its DAgger distillation from a
state teacher through the env's cameras."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from rich.console import Console

from robot_rl.cli import main
from robot_rl.distill.configs import DaggerConfig, PixelDistillConfig
from robot_rl.distill.pixel_eval import state_error
from robot_rl.distill.pixels import distill_pixels
from robot_rl.errors import ConfigError
from robot_rl.export import ArtifactError, load_policy
from robot_rl.hardware.runtime import DeployRuntime
from robot_rl.vision.configs import PixelInputs, PixelPolicyConfig
from robot_rl.vision.encoder import DEPTH_RANGE, SpatialSoftmax, image_input, random_shift
from robot_rl.vision.student import PixelPolicy
from robot_rl.vision.student_file import load_pixel_student
from tests.hardware.conftest import ScriptedRobot
from tests.robot_rl.flow_runs import tiny_pixel_config


def test_random_shift_moves_each_image_by_its_own_offset():
    x = torch.arange(2 * 1 * 6 * 6, dtype=torch.float32).view(2, 1, 6, 6)
    assert torch.equal(random_shift(x, 0), x)
    gen = torch.Generator().manual_seed(0)
    y = random_shift(x, 2, gen)
    assert y.shape == x.shape
    padded = torch.nn.functional.pad(x, (2, 2, 2, 2), mode="replicate")
    for b in range(2):  # each output is a 6x6 window of its padded input
        found = [(i, j) for i in range(5) for j in range(5)
                 if torch.equal(padded[b, :, i:i + 6, j:j + 6], y[b])]
        assert found, b


def test_image_input_scales_rgb_and_depth():
    rgb = torch.full((1, 3, 2, 2), 255, dtype=torch.uint8)
    depth = torch.tensor([[[[0.0, 1.0], [DEPTH_RANGE, 9.0]]]])
    x = image_input(rgb, depth)
    assert x.shape == (1, 4, 2, 2) and torch.equal(x[:, :3], torch.ones(1, 3, 2, 2))
    assert x[0, 3].tolist() == [[0.0, 1.0 / DEPTH_RANGE], [1.0, 1.0]]


def test_spatial_softmax_finds_the_hot_pixel():
    x = torch.full((1, 2, 5, 7), -50.0)
    x[0, 0, 0, 6] = 50.0  # top right: x = 1, y = -1
    x[0, 1, 2, 3] = 50.0  # the centre
    assert torch.allclose(SpatialSoftmax(5, 7)(x), torch.tensor([[1.0, -1.0, 0.0, 0.0]]),
                          atol=1e-4)


@pytest.mark.parametrize("pool", ["keypoints", "flatten"])
def test_pixel_policy_shapes_and_gradients(pool):
    shapes = {"front.rgb": (3, 24, 24), "wrist.rgb": (3, 24, 24), "wrist.depth": (1, 24, 24)}
    pol = PixelPolicy(PixelPolicyConfig(features=8, hidden=(16,), pool=pool), shapes, 5, 3,
                      state_dim=2)
    assert pol.cameras == ["front", "wrist"] and pol.depth == {"front": False, "wrist": True}
    imgs = {"front.rgb": torch.randint(0, 255, (4, 3, 24, 24), dtype=torch.uint8),
            "wrist.rgb": torch.randint(0, 255, (4, 3, 24, 24), dtype=torch.uint8),
            "wrist.depth": torch.rand(4, 1, 24, 24)}
    a = pol(torch.randn(4, 5), imgs, torch.Generator().manual_seed(0))
    assert a.shape == (4, 3) and bool((a.abs() < 1).all())
    a.sum().backward()
    assert pol.encoders["wrist"].convs[0].weight.grad is not None
    assert pol.estimate(torch.randn(4, 5), imgs).shape == (4, 2)
    ends = PixelPolicy(PixelPolicyConfig(features=8, hidden=(16,), pool=pool,
                                         act_on="features"), shapes, 5, 3, state_dim=2)
    assert not ends.acts_on_state and ends(torch.randn(4, 5), imgs).shape == (4, 3)


@pytest.mark.slow
def test_distilling_the_push_expert_into_a_pixel_student_in_two_stages(tmp_path, monkeypatch):
    import robot_rl.distill.pixels as pixels_mod

    trained = {}
    original, vector_dagger = pixels_mod.train_state_policy, pixels_mod.fit_student

    def spy(*args, **kwargs):
        student, result = original(*args, **kwargs)
        trained["mlp"] = {k: v.clone() for k, v in student.mlp.state_dict().items()}
        trained["encoder"] = {k: v.clone() for k, v in student.encoders.state_dict().items()}
        return student, result

    def dagger_spy(env, *args, **kwargs):
        trained["envs"] = env.num_envs
        return vector_dagger(env, *args, **kwargs)

    monkeypatch.setattr(pixels_mod, "train_state_policy", spy)
    monkeypatch.setattr(pixels_mod, "fit_student", dagger_spy)
    cfg = PixelDistillConfig(task="push", policy_iterations=2, policy_steps=4, policy_envs=3,
                             action_steps=0, state_noise=0.1, action_batch=8, out=tmp_path / "s.pt",
                             policy=PixelPolicyConfig(features=8, hidden=(16,)),
                             inputs=PixelInputs(cameras=("front",), size=24),
                             dagger=DaggerConfig(iterations=2, num_envs=2, rollout_steps=8,
                                                 grad_steps=3, batch_size=8, eval_episodes=2,
                                                 progress=False))
    student, report = distill_pixels(cfg, Console(quiet=True))
    assert report.samples == 2 * 2 * 8
    assert report.teacher is not None and report.teacher.success_rate > 0.4
    assert report.student is not None and np.isfinite(report.final_loss)
    # the estimate's error per hidden term along the student's own evaluation rollouts
    assert list(report.estimate_rmse) == ["puck_pos", "ee_to_puck", "puck_to_goal"]
    assert all(0 < v < 1 for v in report.estimate_rmse.values())  # metres
    # the action MLP learned on the true state (and was evaluated there) before any image;
    # with --action-steps 0 the image iterations trained the encoder and left it alone
    assert report.state_policy is not None and report.state_policy.episodes == 2
    assert trained["envs"] == 3  # stage 1 rolls out its own (camera-less) envs
    assert all(torch.equal(v, student.mlp.state_dict()[k]) for k, v in trained["mlp"].items())
    assert any(not torch.equal(v, student.encoders.state_dict()[k])
               for k, v in trained["encoder"].items())
    # the student sees what a robot has: no puck terms in its proprioception
    loaded, state = load_pixel_student(tmp_path / "s.pt")
    assert state["config"]["policy_iterations"] == 2
    assert state["state_policy_success"] == report.state_policy.success_rate
    names = [n for n, _ in state["obs_layout"]]
    assert all("puck" not in n for n in names) and "last_action" not in names  # no copycat
    assert state["obs_dim"] == sum(w for _, w in state["obs_layout"])
    assert state["image_shapes"] == {"front.rgb": (3, 24, 24)}
    # ... and estimates the terms it does not see from its images, then acts on them
    assert set(state["state_terms"]) == {"puck_pos", "ee_to_puck", "puck_to_goal"}
    assert loaded.acts_on_state and loaded.state_dim == 3 + 3 + 2
    x = torch.randn(3, state["obs_dim"])
    imgs = {"front.rgb": torch.randint(0, 255, (3, 3, 24, 24), dtype=torch.uint8)}
    assert torch.allclose(loaded(x, imgs), student(x, imgs))
    est = loaded.estimate(x, imgs)
    assert torch.allclose(loaded(x, imgs), loaded.act_on_state(x, est))


def test_state_error_is_the_estimates_normalized_squared_error_per_column():
    shapes = {"front.rgb": (3, 24, 24)}
    mean, std = torch.tensor([0.5, -1.0]), torch.tensor([0.1, 2.0])
    pol = PixelPolicy(PixelPolicyConfig(features=8, hidden=(16,)), shapes, 3, 2,
                      state_dim=2, state_mean=mean, state_std=std).eval()
    last = pol.state_head[-1]
    torch.nn.init.zeros_(last.weight)
    torch.nn.init.zeros_(last.bias)  # the estimate is the state's mean, whatever the images
    n = 600  # more than one chunk
    state = mean + std * torch.randn(n, 2)
    imgs = {"front.rgb": torch.randint(0, 255, (n, 3, 24, 24), dtype=torch.uint8)}
    err = state_error(pol, torch.randn(n, 3), imgs, state, chunk=256)
    assert torch.allclose(err, (((state - mean) / std) ** 2).mean(0), rtol=1e-5)


def test_bad_settings_are_refused(tmp_path):
    with pytest.raises(ConfigError, match="untrained"):  # no stage trains the action MLP
        distill_pixels(PixelDistillConfig(policy_iterations=0, action_steps=0,
                                          out=tmp_path / "z.pt"), Console(quiet=True))
    with pytest.raises(ConfigError, match="size"):
        distill_pixels(PixelDistillConfig(out=tmp_path / "x.pt", inputs=PixelInputs(size=8)),
                       Console(quiet=True))
    with pytest.raises(ConfigError, match="unknown camera"):
        distill_pixels(PixelDistillConfig(out=tmp_path / "y.pt",
                                          inputs=PixelInputs(cameras=("nope",))),
                       Console(quiet=True))


@pytest.mark.slow
def test_a_pixel_student_exports_with_image_inputs_and_evaluates_through_onnx(tmp_path):
    cfg = tiny_pixel_config(tmp_path / "s.pt", rollout_steps=6)
    student, _ = distill_pixels(cfg, Console(quiet=True))
    main(["export", str(tmp_path / "s.pt")])
    art = tmp_path / "s"  # default: the file's name without .pt
    meta = json.loads((art / "policy.json").read_text())
    assert [i["key"] for i in meta["images"]] == list(student.image_shapes)
    assert len(meta["images"]) == 4  # RGB and depth of each camera
    assert {c["name"] for c in meta["cameras"]} == {"front", "wrist"}
    assert all(c["height"] == c["width"] == 24 and c["depth"] for c in meta["cameras"])
    rgb = next(i for i in meta["images"] if i["key"] == "front.rgb")
    assert rgb["dtype"] == "uint8" and rgb["shape"] == [3, 24, 24]
    gen = torch.Generator().manual_seed(3)
    obs = torch.randn(5, meta["observation"]["dim"], generator=gen)
    imgs = {k: torch.randint(0, 256, (5, *s), generator=gen, dtype=torch.uint8)
            if k.endswith("rgb") else torch.rand((5, *s), generator=gen) * 2.5
            for k, s in student.image_shapes.items()}
    with torch.no_grad():
        ref = student(obs, imgs).numpy()
    for backend in ("onnx", "torchscript"):
        pol = load_policy(art, backend=backend)
        assert pol.cameras == ["front", "wrist"]
        got = pol(obs.numpy(), {k: v.numpy() for k, v in imgs.items()})
        assert np.abs(got - ref).max() < 1e-5
        one = pol(obs[0].numpy(), {k: v[0].numpy() for k, v in imgs.items()})
        assert np.abs(one - ref[0]).max() < 1e-5
    with pytest.raises(ArtifactError, match="sees cameras"):
        pol(obs[0].numpy())
    with pytest.raises(ArtifactError, match="must be"):
        pol(obs[0].numpy(), {k: v[0, :, :12].numpy() for k, v in imgs.items()})
    # evaluated in the simulator through ONNX: the env renders the cameras it names
    main(["eval", str(art), "--episodes", "2", "--num-envs", "2"])
    # the deploy runtime needs the cameras the artifact sees (tests/hardware/test_camera_deploy)
    with pytest.raises(ConfigError, match="sees cameras"):
        DeployRuntime(pol, ScriptedRobot())


def test_the_resnet18_encoder_loads_torchvision_weights_and_keeps_their_statistics(tmp_path):
    from robot_rl.vision.resnet import ResNet18Trunk, ResNetEncoder

    torch.manual_seed(0)
    src = ResNet18Trunk()
    for m in src.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.1, 0.1)
    # a torchvision ResNet-18 file: the trunk's names plus the classifier, which is dropped
    torch.save(src.state_dict() | {"fc.weight": torch.zeros(1000, 512),
                                   "fc.bias": torch.zeros(1000)}, tmp_path / "r18.pth")
    enc = ResNetEncoder(4, (32, 32), features=8, weights=tmp_path / "r18.pth")
    assert torch.equal(enc.trunk.layer3[1].conv2.weight, src.layer3[1].conv2.weight)
    rgb = src.conv1.weight
    assert torch.equal(enc.trunk.conv1.weight[:, :3], rgb)  # depth: the mean RGB filter
    assert torch.allclose(enc.trunk.conv1.weight[:, 3], rgb.mean(1))
    enc.train()
    stats = enc.trunk.layer2[0].bn1.running_mean.clone()
    enc(torch.rand(4, 4, 32, 32)).sum().backward()
    assert torch.equal(enc.trunk.layer2[0].bn1.running_mean, stats)  # ImageNet's, kept
    assert enc.trunk.layer2[0].bn1.weight.grad is not None  # their affine parameters train
    with pytest.raises(ConfigError, match="not found"):
        ResNetEncoder(3, (32, 32), weights=tmp_path / "missing.pth")
    torch.save({"w": torch.zeros(1)}, tmp_path / "bad.pth")
    with pytest.raises(ConfigError, match="not a ResNet"):
        ResNetEncoder(3, (32, 32), weights=tmp_path / "bad.pth")
    with pytest.raises(ConfigError, match="too small"):
        ResNetEncoder(3, (24, 24))


@pytest.mark.slow
def test_a_resnet_student_saves_without_its_weights_file_and_exports(tmp_path):
    from robot_rl.vision.resnet import ResNet18Trunk

    torch.save(ResNet18Trunk().state_dict(), tmp_path / "r18.pth")
    cfg = PixelDistillConfig(task="push", action_steps=2, policy_iterations=0, action_batch=8,
                             out=tmp_path / "s.pt",
                             policy=PixelPolicyConfig(encoder="resnet18", features=8,
                                                      hidden=(16,),
                                                      pretrained=tmp_path / "r18.pth"),
                             inputs=PixelInputs(cameras=("front",), size=32),
                             dagger=DaggerConfig(iterations=1, num_envs=2, rollout_steps=4,
                                                 grad_steps=2, batch_size=8, eval_episodes=0,
                                                 progress=False))
    student, _ = distill_pixels(cfg, Console(quiet=True))
    (tmp_path / "r18.pth").unlink()  # the saved student carries its own weights
    loaded, _ = load_pixel_student(tmp_path / "s.pt")
    main(["export", str(tmp_path / "s.pt")])
    pol = load_policy(tmp_path / "s", backend="onnx")
    gen = torch.Generator().manual_seed(4)
    obs = torch.randn(3, loaded.proprio_dim, generator=gen)
    imgs = {"front.rgb": torch.randint(0, 256, (3, 3, 32, 32), generator=gen,
                                       dtype=torch.uint8)}
    with torch.no_grad():
        ref = student(obs, imgs).numpy()
        assert np.abs(loaded(obs, imgs).numpy() - ref).max() == 0
    assert np.abs(pol(obs.numpy(), {"front.rgb": imgs["front.rgb"].numpy()}) - ref).max() < 1e-4
