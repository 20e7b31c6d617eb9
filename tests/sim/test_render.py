"""Offscreen rendering of chosen envs, mp4 writing, and the message when GL is missing."""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np
import pytest

import robot_rl
from robot_rl.errors import ConfigError, RenderError
from robot_rl.sim import make_env
from robot_rl.sim import render as render_mod
from robot_rl.sim.render import EnvRenderer, VideoWriter


def test_renders_chosen_envs_side_by_side_and_writes_mp4(tmp_path: Path) -> None:
    env = make_env("push", 3)
    env.reset(seed=0)
    path = tmp_path / "clip.mp4"
    with EnvRenderer(env, [0, 2], width=160, height=120) as r, VideoWriter(path, fps=50) as v:
        for _ in range(5):
            env.step(env.expert_action())
            frame = r.render()
            v.write(frame)
    assert frame.shape == (120, 320, 3) and frame.dtype == np.uint8
    assert not np.array_equal(frame[:, :160], frame[:, 160:])  # two different envs
    with av.open(str(path)) as container:
        frames = list(container.decode(video=0))
    assert len(frames) == 5 and frames[0].width == 320


@pytest.mark.parametrize(("control_dt", "every", "fps"), [(0.02, 2, 25.0), (0.1, 1, 10.0),
                                                         (0.01, 4, 25.0), (0.03, 2, 50 / 3)])
def test_step_videos_keep_at_most_25_frames_a_second(tmp_path: Path, control_dt: float,
                                                     every: int, fps: float) -> None:
    rendered: list[int] = []

    def render() -> np.ndarray:
        rendered.append(len(rendered))
        return np.zeros((8, 8, 3), dtype=np.uint8)

    with VideoWriter.of_steps(tmp_path / "v.mp4", control_dt) as v:
        for _ in range(8):
            v.add(render)
    assert (v.every, v.frames, len(rendered)) == (every, 8 // every, 8 // every)
    with av.open(str(tmp_path / "v.mp4")) as container:
        assert float(container.streams.video[0].average_rate) == pytest.approx(fps)


def test_frames_follow_the_simulation() -> None:
    env = make_env("reach", 1)
    env.reset(seed=0)
    with EnvRenderer(env, [0], width=160, height=120) as r:
        first = r.render()
        for _ in range(30):
            env.step(env.expert_action())
        later = r.render()
    assert np.abs(first.astype(int) - later.astype(int)).mean() > 0.5


def test_bad_camera_and_env_ids() -> None:
    env = make_env("reach", 2)
    with pytest.raises(ConfigError, match="unknown camera 'top'; cameras of this scene: corner"):
        EnvRenderer(env, [0], camera="top")
    with pytest.raises(ConfigError, match=r"env ids to render must be in \[0, 2\)"):
        EnvRenderer(env, [2])
    with pytest.raises(ConfigError, match="must end in .mp4"):
        VideoWriter("clip.avi", fps=10)


def test_clear_message_without_a_gl_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    class NoDisplay:
        def __init__(self, width: int, height: int):
            raise RuntimeError("no OpenGL platform available")

    monkeypatch.setattr(render_mod, "_gl_context_class", lambda: NoDisplay)
    env = make_env("reach", 1)
    with pytest.raises(RenderError, match=r"apt-get install libegl1 libgl1-mesa-dri.*"
                                          r"MUJOCO_GL=egl"):
        EnvRenderer(env, [0])


def test_default_gl_is_egl_only_where_libegl_loads() -> None:
    # without a display: EGL where libEGL loads; without libEGL, MuJoCo's own default (import
    # mujoco with MUJOCO_GL=egl and no libEGL fails inside PyOpenGL)
    assert robot_rl.default_gl({}, lambda: True) == "egl"
    assert robot_rl.default_gl({}, lambda: False) is None
    assert robot_rl.default_gl({"DISPLAY": ":0"}, lambda: True) is None
    assert robot_rl.default_gl({"MUJOCO_GL": "osmesa"}, lambda: True) is None
