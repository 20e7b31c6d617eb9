"""robot-rl data view: a dataset logged into Rerun and read back with Rerun's own dataframe
API (``rerun.chunk``), entity by entity against the dataset: values, frame count, times."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

rr = pytest.importorskip("rerun")

from robot_rl.data import Dataset  # noqa: E402
from robot_rl.data.rerun_log import SCALAR_COLUMNS, VECTORS, entity_names  # noqa: E402
from robot_rl.errors import ConfigError  # noqa: E402


@pytest.fixture(scope="module")
def demos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three push episodes of the scripted expert with a 32x32 front camera."""
    from robot_rl.recording.config import RecordConfig
    from robot_rl.recording.record import record

    out = tmp_path_factory.mktemp("rerun") / "push"
    record(RecordConfig(task="push", teleop="expert", episodes=3, out=out, cameras=("front",),
                        camera_size=(32, 32), episode_length=30, progress=False))
    return out


def read_back(path: Path) -> dict:
    import rerun.chunk as rc

    store = rc.RrdReader(path).stream().collect()
    return store.reader(index="frame").to_arrow_table().to_pydict()


@pytest.mark.slow
def test_every_entity_reads_back_as_the_dataset_has_it(demos: Path, tmp_path: Path) -> None:
    ds = Dataset(demos)
    out = tmp_path / "view.rrd"
    cli = subprocess.run([sys.executable, "-m", "robot_rl.cli", "data", "view", str(demos),
                          "--episodes", "0", "2", "--out", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert cli.returncode == 0, cli.stderr
    got = read_back(out)
    frames = {k: np.concatenate([ds.episode(e)[k] for e in (0, 2)]) for k in
              ("index", "timestamp", *VECTORS, *SCALAR_COLUMNS.values())}
    n = len(frames["index"])
    assert n == 60 and len(got["frame"]) == n  # episodes 0 and 2, 30 frames each
    np.testing.assert_array_equal(got["frame"], frames["index"])
    # time: the episodes end to end, each frame at its own timestamp within its episode
    t = np.array([d.total_seconds() for d in got["time"]])
    expect = np.concatenate([frames["timestamp"][:30], frames["timestamp"][30:] + 30 / ds.fps])
    np.testing.assert_allclose(t, expect, atol=1e-6)
    episode = np.array([v[0] for v in got["/episode:Scalars:scalars"]])
    np.testing.assert_array_equal(episode, [0] * 30 + [2] * 30)
    names = entity_names(ds)
    for key, prefix in VECTORS.items():
        for j, name in enumerate(names[key]):
            column = got[f"/{prefix}/{name}:Scalars:scalars"]
            np.testing.assert_array_equal([v[0] for v in column],
                                          frames[key][:, j].astype(np.float64))
    for entity, key in SCALAR_COLUMNS.items():
        np.testing.assert_array_equal([v[0] for v in got[f"/{entity}:Scalars:scalars"]],
                                      frames[key].astype(np.float64))
    images = got["/cameras/front:EncodedImage:blob"]
    assert sum(v is not None for v in images) == n  # one frame each
    assert "episode 2/2 logged" in cli.stdout and "from a replay" in cli.stdout
    # from the replay: the weighted reward terms add up to each frame's recorded reward, and
    # every shield layer has a flag per frame
    terms = [k for k in got if k.startswith("/reward_terms/")]
    assert len(terms) >= 2
    total = np.sum([[v[0] for v in got[k]] for k in terms], axis=0)
    np.testing.assert_allclose(total, frames["next.reward"], rtol=1e-5, atol=1e-6)
    layers = [k for k in got if k.startswith("/safety/")]
    assert len(layers) == 8 and all(len(got[k]) == n for k in layers)
    assert any(k.startswith("/cost_terms/") for k in got)


def test_camera_frames_decode_to_the_videos_frames(demos: Path, tmp_path: Path) -> None:
    import io

    from PIL import Image

    from robot_rl.data.rerun_log import log_dataset, rerun_recording

    ds = Dataset(demos)
    rec = rerun_recording("test")
    rec.save(str(tmp_path / "v.rrd"))
    assert log_dataset(rec, ds, [1]) == 30
    rec.flush()
    rec.disconnect()
    got = read_back(tmp_path / "v.rrd")
    video = ds.video(1, "front").astype(np.float32)
    for i in (0, 15, 29):
        blob = bytes(np.asarray(got["/cameras/front:EncodedImage:blob"][i][0], np.uint8))
        frame = np.asarray(Image.open(io.BytesIO(blob)), dtype=np.float32)
        assert frame.shape == video[i].shape
        assert np.abs(frame - video[i]).mean() < 6.0  # JPEG at quality 85
    with pytest.raises(ConfigError, match="episodes 0..2"):
        log_dataset(rec, ds, [3])


def test_an_env_logged_step_by_step_reads_back_as_it_stepped(tmp_path: Path) -> None:
    """EnvRerunLog (robot-rl eval --rerun) on push with the expert: every step's joint
    state, actions, reward and cost terms and shield flags of env 1, against the env's own
    outputs; episodes counted at env 1's ends."""
    import torch

    from robot_rl.data.rerun_log import EnvRerunLog, rerun_recording
    from robot_rl.sim import make_env
    from robot_rl.sim.experts import make_expert

    env = make_env("push", 2, seed=0, episode_length=15)
    expert = make_expert(env, "scripted", seed=0)
    rec = rerun_recording("test")
    rec.save(str(tmp_path / "eval.rrd"))
    log = EnvRerunLog(rec, env, index=1)
    log.watch()
    env.reset(seed=0)
    seen: dict[str, list[float]] = {"reward": [], "cost": [], "q0": [], "applied3": []}
    safety: dict[str, list[float]] = {}
    for _ in range(40):
        q0 = float(env.state.joint_pos[1, 0])
        action = expert(env.state)
        _, reward, cost, _, _, info = env.step(action)
        seen["reward"].append(float(reward[1]))
        seen["cost"].append(float(cost[1]))
        seen["q0"].append(q0)
        seen["applied3"].append(float(info["applied_action"][1, 3]))
        for k, v in info["safety"].items():
            safety.setdefault(k, []).append(float(torch.as_tensor(v)[1]))
    log.close()
    assert log.steps == 40 and log.episode == 2  # ends at steps 15 and 30
    got = read_back_steps(tmp_path / "eval.rrd")
    np.testing.assert_array_equal(got["step"], np.arange(40))
    first = lambda k: np.array([v[0] for v in got[f"/{k}:Scalars:scalars"]])  # noqa: E731
    np.testing.assert_allclose(first("reward"), seen["reward"], rtol=1e-6)
    np.testing.assert_allclose(first("cost"), seen["cost"], rtol=1e-6)
    np.testing.assert_allclose(first("joint_pos/joint1"), seen["q0"], rtol=1e-6)
    np.testing.assert_allclose(first("action_applied/3"), seen["applied3"], rtol=1e-6)
    for k, flags in safety.items():
        np.testing.assert_array_equal(first(f"safety/{k}"), flags)
    np.testing.assert_array_equal(first("episode"), [0] * 15 + [1] * 15 + [2] * 10)
    t = np.array([d.total_seconds() for d in got["time"]])
    np.testing.assert_allclose(t, np.arange(40) * env.control_dt, atol=1e-6)


def read_back_steps(path: Path) -> dict:
    import rerun.chunk as rc

    return rc.RrdReader(path).stream().collect().reader(index="step").to_arrow_table() \
        .to_pydict()
