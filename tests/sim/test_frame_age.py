"""Camera frame timing in the simulator: the frames shown are as old as a camera of that frame
rate and latency would deliver them, never run backwards, never predate the episode, and the
env's images are those frames."""

from __future__ import annotations

import pytest
import torch

from robot_rl.errors import ConfigError
from robot_rl.sim import make_env
from robot_rl.sim.configs import CameraConfig, VisualDR
from robot_rl.sim.frame_age import FrameAge


def _frame(t: int, envs: int) -> dict[str, torch.Tensor]:
    """A frame whose pixels name the step it was rendered at and the env."""
    v = (t * 1000 + torch.arange(envs)).float().view(envs, 1, 1, 1).expand(envs, 1, 2, 2)
    return {"cam.depth": v.clone()}


def _step_of(shown: dict[str, torch.Tensor]) -> torch.Tensor:
    return (shown["cam.depth"][:, 0, 0, 0] // 1000).long()


def test_frames_are_as_old_as_the_cameras_timing_makes_them():
    E, dt = 64, 0.02
    ages = FrameAge(E, dt, frame_rate=30.0, max_latency=0.05, seed=3)
    period = 1 / (30.0 * dt)
    assert ages.max_steps == 6  # ceil(2.5 + 1.67) + 1
    assert torch.equal(_step_of(ages.reset(_frame(0, E))), torch.zeros(E, dtype=torch.long))
    prev = torch.zeros(E, dtype=torch.long)
    seen = []
    for t in range(1, 120):
        shown = _step_of(ages.step(_frame(t, E)))
        age = t - shown
        assert torch.equal(age, ages.ages)
        assert (shown >= prev).all()  # never backwards
        prev = shown
        # once a capture was delivered: its time c is within [latency, latency + period) of
        # now, and the frame shown is the step nearest c
        lat = ages._latency
        delivered = t >= lat + ages._phase
        lo, hi = lat - 0.5, lat + period + 0.5
        assert ((age >= lo) & (age <= hi) | ~delivered).all()
        seen.append(age[delivered])
    seen_ages = torch.cat(seen).float()
    assert 1.0 < seen_ages.mean() < 3.5 and seen_ages.max() <= ages.max_steps


def test_a_new_episode_shows_its_own_first_frame_until_a_capture_arrives():
    E = 8
    ages = FrameAge(E, 0.02, frame_rate=0.0, max_latency=0.06, seed=0)
    ages.reset(_frame(0, E))
    for t in range(1, 10):
        ages.step(_frame(t, E))
    ids = torch.tensor([1, 4])
    first = {"cam.depth": torch.full((2, 1, 2, 2), -1.0)}  # the new episodes' first frames
    shown = ages.restart(ids, first)["cam.depth"][:, 0, 0, 0]
    assert (shown[ids] == -1.0).all() and (ages.ages[ids] == 0).all()
    assert (shown[[0, 2, 3]] >= 0).all()  # the others keep theirs
    for t in range(10, 14):
        shown = ages.step(_frame(t, E))["cam.depth"][:, 0, 0, 0]
        # a capture every step: frames of the new episode only (-1 or its later steps)
        assert ((shown[ids] == -1.0) | (shown[ids] // 1000 >= 10)).all()


def test_a_camera_at_the_control_rate_without_latency_shows_the_current_frame():
    ages = FrameAge(4, 0.02, frame_rate=0.0, max_latency=0.0)
    ages.reset(_frame(0, 4))
    for t in range(1, 6):
        assert (_step_of(ages.step(_frame(t, 4))) == t).all()
    with pytest.raises(ConfigError, match="frame_rate"):
        FrameAge(4, 0.02, frame_rate=-1.0, max_latency=0.0)


def test_the_envs_images_are_frames_it_rendered_steps_before():
    vis = VisualDR(frame_rate=25.0, frame_latency=0.04)
    env = make_env("push", 3, seed=0, episode_length=6,
                   cameras=CameraConfig(names=("wrist",), height=16, width=16, visual=vis))
    assert env.frame_age is not None
    renders: list[tuple[torch.Tensor | None, torch.Tensor]] = []  # (env_ids, images) of each
    render = env.cameras.images

    def recorded(env_ids=None):
        out = render(env_ids)
        renders.append((env_ids, out["wrist.rgb"]))
        return out

    env.cameras.images = recorded
    env.reset(seed=0)
    frames = [renders[-1][1]]  # frames[t][e]: the frame env e's ring holds for step t
    act = torch.zeros(3, env.act_dim)
    older = resets = 0
    for t in range(1, 16):
        act[:, 0] = 1.0 if t % 4 < 2 else -1.0  # the wrist camera moves
        renders.clear()
        _, _, _, term, trunc, info = env.step(act)
        now = renders[0][1].clone()
        final = info["final_images"]["wrist.rgb"]
        before = [*frames, now.clone()]  # before the resets: the finished episode's frames
        if len(renders) > 1:  # the resets' first frames replace this step's
            ids, first = renders[1]
            now[ids] = first
            resets += len(ids)
        frames.append(now)
        age = env.frame_age.ages
        shown = info["images"]["wrist.rgb"]
        done = term | trunc
        for e in range(3):
            assert torch.equal(shown[e], frames[t - int(age[e])][e])
            older += int(age[e] > 0 and not torch.equal(shown[e], now[e]))
            if done[e]:  # its last frame was one of the finished episode's
                assert age[e] == 0 and any(torch.equal(final[e], f[e]) for f in before[-7:])
            else:
                assert torch.equal(final[e], shown[e])
        assert torch.equal(env.last_images["wrist.rgb"], shown)
    assert resets == 6 and older > 10  # two episodes each; stale frames that differ
