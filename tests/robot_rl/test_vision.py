"""Learning from pixels: DrQ's shift, the pixel student, and its DAgger distillation from a
state teacher through the env's cameras."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from rich.console import Console

from robot_rl.errors import ConfigError
from robot_rl.vision.dagger import PixelDistillConfig, distill_pixels, load_pixel_student
from robot_rl.vision.encoder import DEPTH_RANGE, image_input, random_shift
from robot_rl.vision.student import PixelPolicy, PixelPolicyConfig


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


def test_pixel_policy_shapes_and_gradients():
    shapes = {"front.rgb": (3, 24, 24), "wrist.rgb": (3, 24, 24), "wrist.depth": (1, 24, 24)}
    pol = PixelPolicy(PixelPolicyConfig(features=8, hidden=(16,)), shapes, 5, 3)
    assert pol.cameras == ["front", "wrist"] and pol.depth == {"front": False, "wrist": True}
    imgs = {"front.rgb": torch.randint(0, 255, (4, 3, 24, 24), dtype=torch.uint8),
            "wrist.rgb": torch.randint(0, 255, (4, 3, 24, 24), dtype=torch.uint8),
            "wrist.depth": torch.rand(4, 1, 24, 24)}
    a = pol(torch.randn(4, 5), imgs, torch.Generator().manual_seed(0))
    assert a.shape == (4, 3) and bool((a.abs() < 1).all())
    a.sum().backward()
    assert pol.encoders["wrist"].convs[0].weight.grad is not None


def test_distilling_the_push_expert_into_a_pixel_student(tmp_path):
    cfg = PixelDistillConfig(task="push", cameras=("front",), size=24, iterations=2,
                             num_envs=2, rollout_steps=8, grad_steps=3, batch_size=8,
                             eval_episodes=2, out=tmp_path / "s.pt", progress=False,
                             policy=PixelPolicyConfig(features=8, hidden=(16,)))
    student, report = distill_pixels(cfg, Console(quiet=True))
    assert report.samples == 2 * 2 * 8
    assert report.teacher is not None and report.teacher.success_rate > 0.4
    assert report.student is not None and np.isfinite(report.final_loss)
    # the student sees what a robot has: no puck terms in its proprioception
    loaded, state = load_pixel_student(tmp_path / "s.pt")
    names = [n for n, _ in state["obs_layout"]]
    assert all("puck" not in n for n in names) and "last_action" not in names  # no copycat
    assert state["obs_dim"] == sum(w for _, w in state["obs_layout"])
    assert state["image_shapes"] == {"front.rgb": (3, 24, 24)}
    x = torch.randn(3, state["obs_dim"])
    imgs = {"front.rgb": torch.randint(0, 255, (3, 3, 24, 24), dtype=torch.uint8)}
    assert torch.allclose(loaded(x, imgs), student(x, imgs))


def test_bad_settings_are_refused(tmp_path):
    with pytest.raises(ConfigError, match="size"):
        distill_pixels(PixelDistillConfig(size=8, out=tmp_path / "x.pt"), Console(quiet=True))
    with pytest.raises(ConfigError, match="unknown camera"):
        distill_pixels(PixelDistillConfig(cameras=("nope",), out=tmp_path / "y.pt"),
                       Console(quiet=True))
