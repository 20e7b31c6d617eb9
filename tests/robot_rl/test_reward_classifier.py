"""The success classifier (``robot-rl reward``): frame labels, episode split, training to a
clear signal, saving, evaluation and the refusals. The dataset is written by the real writer
with synthetic frames: a white square appears once the episode has succeeded."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from robot_rl.cli import main
from robot_rl.data import Dataset, DatasetError, DatasetWriter
from robot_rl.recording.record import dataset_spec, make_recording_env
from robot_rl.vision import reward_training
from robot_rl.vision.configs import RewardTrainConfig
from robot_rl.vision.reward_classifier import load_reward_classifier, resize_frames
from robot_rl.vision.reward_training import (
    SuccessFrames,
    choose_threshold,
    load_success_frames,
    split_episodes,
    state_columns,
    train_reward_classifier,
)

EP_LEN, EPISODES, SIZE = 24, 10, 32


def _success_from(ep: int) -> int | None:
    """Frame whose step first succeeds (next.success), or None: every other episode fails."""
    return None if ep % 3 == 2 else 6 + ep


@pytest.fixture(scope="module")
def squares(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("reward") / "squares"
    env = make_recording_env("push")
    spec = dataset_spec(env, cameras=(("front", SIZE, SIZE),))
    rng = np.random.default_rng(0)
    zeros = np.zeros(len(spec.obs_names), np.float32)
    with DatasetWriter(root, spec) as w:
        for ep in range(EPISODES):
            w.begin_episode(seed=ep, source="synthetic")
            k = _success_from(ep)
            for t in range(EP_LEN):
                img = rng.integers(0, 60, (SIZE, SIZE, 3), dtype=np.uint8)
                if k is not None and t >= k + 1:  # the state after step k is a success
                    img[8:20, 10:22] = 255
                obs = zeros + ep
                w.add_frame(obs=obs, joint_pos=np.zeros(7, np.float32),
                            joint_vel=np.zeros(7, np.float32),
                            action=np.zeros(len(spec.action_names), np.float32),
                            next_obs=obs, reward=0.0, cost=0.0, terminated=False,
                            truncated=t == EP_LEN - 1, success=k is not None and t >= k,
                            images={"front": img})
            w.save_episode()
    return root


@pytest.mark.slow
def test_a_frame_is_labelled_by_the_success_of_the_state_it_shows(squares):
    ds = Dataset(squares)
    data = load_success_frames(ds, ("front",), 16, [], [0, 2])
    assert data.frames["front"].shape == (2 * EP_LEN, 3, 16, 16)
    assert data.episode.tolist() == [0] * EP_LEN + [2] * EP_LEN
    k = _success_from(0)
    assert k is not None
    expected = [t >= k + 1 for t in range(EP_LEN)] + [False] * EP_LEN
    assert data.label.tolist() == expected
    # the white square is where the labels say, through H.264 and the resize
    bright = data.frames["front"].float().mean(dim=(1, 2, 3)) > 60
    assert bright.tolist() == expected


def test_episodes_are_held_out_whole_and_both_sides_are_non_empty():
    train, held = split_episodes(list(range(10)), 0.2, seed=0)
    assert len(held) == 2 and sorted(train + held) == list(range(10))
    assert split_episodes([4, 7], 0.01, 0)[1] and split_episodes([4, 7], 0.99, 0)[0]
    with pytest.raises(DatasetError, match=">= 2 episodes"):
        split_episodes([0], 0.2, 0)


@pytest.mark.slow
def test_trains_to_the_signal_saves_and_evaluates(squares, tmp_path, capsys):
    out = tmp_path / "clf.pt"
    cfg = RewardTrainConfig(dataset=squares, size=SIZE, holdout=0.3, validation=0.3,
                            grad_steps=150, batch_size=32, out=out, progress=False)
    clf, report = train_reward_classifier(cfg)
    assert report.episodes == 3 and report.frames == 3 * EP_LEN
    assert report.precision >= 0.9 and report.recall >= 0.9, report
    loaded = load_reward_classifier(out)
    assert loaded.cameras == ("front",) and loaded.meta["held_out"]["precision"] >= 0.9
    held = loaded.meta["held_out_episodes"]
    fit, val = loaded.meta["train_episodes"], loaded.meta["validation_episodes"]
    assert len(val) == 2 and sorted(fit + val + held) == list(range(EPISODES))
    assert 0.05 <= loaded.threshold < 1.0
    # any frame size works: a bright 64x64 frame is a success, a dark one is not
    frames = torch.zeros(2, 3, 64, 64, dtype=torch.uint8)
    frames[0, :, 16:40, 20:44] = 255
    assert loaded.success({"front": frames}).tolist() == [True, False]
    with pytest.raises(ValueError, match="missing"):
        loaded.probability({"wrist": frames})
    # the CLI evaluates it on the held-out episodes
    main(["reward", "eval", str(out), str(squares), "--episodes",
          *[str(e) for e in held]])
    line = capsys.readouterr().out
    assert "precision" in line and f"{len(held)}/{len(held)}" in line


def test_state_columns_by_term_and_the_refusals(squares, tmp_path):
    ds = Dataset(squares)
    cols, names = state_columns(ds, ("goal",))
    assert names == ("goal.0", "goal.1") and len(cols) == 2
    with pytest.raises(DatasetError, match="no \\['nope'\\]"):
        state_columns(ds, ("nope",))
    with pytest.raises(DatasetError, match="no camera"):
        load_success_frames(ds, ("side",), 16, [])
    # a classifier on images + the goal reads the goal
    cfg = RewardTrainConfig(dataset=squares, size=24, state_terms=("goal",), grad_steps=2,
                            out=tmp_path / "g.pt", progress=False)
    clf, _ = train_reward_classifier(cfg)
    assert clf.state_names == ("goal.0", "goal.1")
    with pytest.raises(ValueError, match="state columns"):
        clf.probability({"front": torch.zeros(1, 3, 24, 24, dtype=torch.uint8)})
    with pytest.raises(SystemExit):
        main(["reward", "train", str(squares), "--holdout", "1.5"])


def test_resize_frames_keeps_uint8_and_averages():
    x = torch.zeros(1, 3, 4, 4, dtype=torch.uint8)
    x[..., :2, :2] = 200
    y = resize_frames(x, 2)
    assert y.dtype == torch.uint8 and y[0, 0].tolist() == [[200, 0], [0, 0]]
    assert resize_frames(x, 4) is x


def test_the_threshold_is_the_lowest_reaching_the_precision(monkeypatch):
    probs = torch.tensor([0.95, 0.9, 0.8, 0.7, 0.6, 0.3, 0.2])
    truth = torch.tensor([True, True, False, True, False, False, True])
    data = SuccessFrames({}, torch.zeros(7, 0), truth, torch.zeros(7, dtype=torch.long))
    monkeypatch.setattr(reward_training, "probabilities", lambda clf, d, batch=256: probs)
    # precision at t: 0.2 -> 4/7, 0.61 -> 3/4, 0.71 -> 2/3, 0.81 -> 2/2
    assert choose_threshold(None, data, 0.95, 0.5) == 0.81  # type: ignore[arg-type]
    assert choose_threshold(None, data, 0.7, 0.5) == 0.61  # type: ignore[arg-type]
    none = SuccessFrames({}, torch.zeros(7, 0), torch.zeros(7, dtype=torch.bool), data.episode)
    assert choose_threshold(None, none, 0.95, 0.5) == 0.5  # type: ignore[arg-type]
