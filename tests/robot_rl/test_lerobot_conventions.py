"""Our datasets against LeRobot's published v3.0 conventions (what its loader and its
QUANTILES normalization rely on), and random access to camera frames."""

from __future__ import annotations

import json
from pathlib import Path

import av
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from robot_rl.data import Dataset, DatasetError
from robot_rl.data.format import DatasetSpec
from robot_rl.data.stats import QUANTILES, feature_stats, merge_stats
from robot_rl.errors import ConfigError
from robot_rl.recording.config import RecordConfig
from robot_rl.recording.record import record

EP_LEN, G = 30, 8


def _record(out: Path, episodes: int, **kw) -> None:
    record(RecordConfig(task="push", teleop="expert", episodes=episodes, out=out,
                        episode_length=EP_LEN, progress=False, **kw))


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("conv") / "push"
    _record(out, 3, cameras=("front",), camera_size=(48, 64), keyframe_interval=G)
    return out


def _episode_tables(root: Path) -> list[pa.Table]:
    return [pq.read_table(p) for p in sorted((root / "meta" / "episodes").rglob("*.parquet"))]


@pytest.mark.slow
def test_info_json_fields_and_types(data):
    info = json.loads((data / "meta" / "info.json").read_text())
    for key in ("fps", "total_episodes", "total_frames", "total_tasks", "chunks_size",
                "data_files_size_in_mb", "video_files_size_in_mb"):
        assert type(info[key]) is int, (key, info[key])
    assert info["fps"] == 50
    assert info["data_path"].format(chunk_index=0, file_index=2) == \
        "data/chunk-000/file-002.parquet"
    assert info["video_path"].format(video_key="observation.images.front", chunk_index=0,
                                     file_index=2) == \
        "videos/observation.images.front/chunk-000/file-002.mp4"
    video = info["features"]["observation.images.front"]
    assert video["shape"] == [48, 64, 3] and video["names"] == ["height", "width", "channels"]
    assert type(video["info"]["video.fps"]) is int and video["info"]["video.g"] == G
    for f in info["features"].values():  # every feature: dtype, shape (a list), names
        assert {"dtype", "shape", "names"} <= set(f) and isinstance(f["shape"], list)


def test_stats_have_quantiles_per_episode_and_merged(data):
    ds = Dataset(data)
    frames = ds.frames()
    stats = json.loads((data / "meta" / "stats.json").read_text())
    for key in ("observation.state", "action", "next.reward", "observation.images.front"):
        assert set(stats[key]) == {"min", "max", "mean", "std", "count", *QUANTILES}, key
    img = stats["observation.images.front"]
    for q in QUANTILES:
        assert np.asarray(img[q]).shape == (3, 1, 1)
        assert 0.0 <= np.asarray(img[q]).min() <= np.asarray(img[q]).max() <= 1.0
    # each episode's quantiles are exact
    for r in ds.episodes:
        a = ds.episode(int(r["episode_index"]))["action"]
        assert np.allclose(r["stats/action/q50"], np.quantile(a, 0.5, axis=0), atol=1e-6)
        assert np.allclose(r["stats/action/q01"], np.quantile(a, 0.01, axis=0), atol=1e-6)
    # the merged ones are ordered and the median near the data's (30-frame episodes are
    # too short for tails to agree: merging known distributions is tested below)
    s = {q: np.asarray(stats["observation.state"][q]) for q in QUANTILES}
    x = frames["observation.state"]
    assert (np.diff(np.stack([np.asarray(stats["observation.state"]["min"]), *s.values(),
                              np.asarray(stats["observation.state"]["max"])]), axis=0)
            >= -1e-9).all()
    spread = np.maximum(x.max(0) - x.min(0), 1e-9)
    assert (np.abs(s["q50"] - np.quantile(x, 0.5, axis=0)) <= 0.1 * spread + 1e-6).all()


def test_episode_rows_keep_column_types_and_agree_across_files(data):
    tables = _episode_tables(data)
    assert len(tables) == 3 and all(t.schema.equals(tables[0].schema) for t in tables)
    schema = tables[0].schema
    for name in ("episode_index", "length", "dataset_from_index", "dataset_to_index",
                 "data/chunk_index", "data/file_index"):
        assert schema.field(name).type == pa.int64(), name
    # min and max of integer and bool features keep their type; mean and std are floats
    assert schema.field("stats/index/min").type.value_type == pa.int64()
    assert schema.field("stats/next.done/max").type.value_type == pa.bool_()
    assert schema.field("stats/index/mean").type.value_type == pa.float64()
    assert schema.field("stats/action/q99").type.value_type == pa.float64()
    assert tables[2].column("stats/next.done/max").to_pylist() == [[True]]


def test_videos_have_a_keyframe_every_g_frames(data):
    with av.open(str(data / "videos" / "observation.images.front" / "chunk-000" /
                     "file-001.mp4")) as c:
        stream = c.streams.video[0]
        keys = sorted(round(float(p.pts * stream.time_base) * 50)
                      for p in c.demux(stream) if p.pts is not None and p.is_keyframe)
    assert keys == list(range(0, EP_LEN, G))


def test_random_frames_equal_the_decoded_video(data):
    ds = Dataset(data)
    full = ds.video(1, "front")
    rng = np.random.default_rng(0)
    picks = rng.integers(EP_LEN, size=12)
    picks[:3] = (EP_LEN - 1, 0, G)  # the last frame, the first, a keyframe
    got = ds.video_frames(1, "front", picks)
    assert got.shape == (12, 48, 64, 3)
    assert np.array_equal(got, full[picks])
    with pytest.raises(DatasetError, match="frames 0..29"):
        ds.video_frames(1, "front", [EP_LEN])


def test_odd_camera_sizes_are_refused(tmp_path):
    with pytest.raises(ConfigError, match="even sizes"):
        _record(tmp_path / "odd", 1, cameras=("front",), camera_size=(121, 161))
    with pytest.raises(DatasetError, match="even"):
        DatasetSpec(fps=50, robot_type="arm7", task="push", task_text="t", obs_names=("a",),
                    action_names=("b",), joint_names=("j",), action_space={},
                    cameras=(("front", 121, 160),))


def test_validate_reports_episode_files_that_lerobot_could_not_concatenate(tmp_path):
    out = tmp_path / "ds"
    _record(out, 2)
    assert Dataset(out).validate(decode_videos=False) == []
    # another tool appends episode 1 with other columns (LeRobot's own writer does)
    path = out / "meta" / "episodes" / "chunk-000" / "file-001.parquet"
    row = pq.read_table(path).to_pylist()[0]
    del row["robot_rl/seed"]
    row["stats/action/q05"] = [0.0] * 7
    pq.write_table(pa.Table.from_pylist([row]), path)
    problems = Dataset(out).validate(decode_videos=False)
    assert any("file-001.parquet does not match" in p and "robot_rl/seed" in p
               and "q05" in p for p in problems), problems


def test_appending_to_a_dataset_without_quantiles_keeps_its_schema(tmp_path):
    """A dataset recorded before quantiles, integer min/max and the applied action existed:
    new episodes take its columns and types, so its files still concatenate."""
    out = tmp_path / "old"
    _record(out, 1)
    path = out / "meta" / "episodes" / "chunk-000" / "file-000.parquet"
    row = pq.read_table(path).to_pylist()[0]
    old = {k: ([float(x) for x in v] if k.endswith(("/min", "/max")) else v)
           for k, v in row.items() if k.split("/")[-1] not in QUANTILES}
    old = {k: v for k, v in old.items() if "action.applied" not in k}
    pq.write_table(pa.Table.from_pylist([old]), path)
    # nor the applied action (frames, features, our block)
    data = out / "data" / "chunk-000" / "file-000.parquet"
    pq.write_table(pq.read_table(data).drop_columns(["action.applied"]), data)
    info_path = out / "meta" / "info.json"
    info = json.loads(info_path.read_text())
    del info["features"]["action.applied"], info["robot_rl"]["applied_action"]
    info_path.write_text(json.dumps(info))
    assert Dataset(out).validate(decode_videos=False) == []
    _record(out, 2, resume=True)
    tables = _episode_tables(out)
    assert tables[1].schema.equals(tables[0].schema)
    frames = [pq.read_table(p) for p in sorted((out / "data").rglob("*.parquet"))]
    assert frames[1].schema.equals(frames[0].schema)
    assert Dataset(out).validate(decode_videos=False) == []
    stats = json.loads((out / "meta" / "stats.json").read_text())
    assert "q01" not in stats["action"] and stats["action"]["count"] == [2 * EP_LEN]


def test_merged_quantiles_of_known_mixtures():
    rng = np.random.default_rng(0)
    a, b = rng.uniform(0, 1, 20_000), rng.uniform(2, 3, 20_000)
    m = merge_stats([feature_stats(a), feature_stats(b)])
    # half the mass on [0, 1], half on [2, 3]
    assert m["q10"][0] == pytest.approx(0.2, abs=0.01)
    assert m["q50"][0] == pytest.approx(1.0, abs=0.01)
    assert m["q90"][0] == pytest.approx(2.8, abs=0.01)
    assert m["q99"][0] == pytest.approx(np.quantile(np.r_[a, b], 0.99), abs=0.01)
    # unequal counts weigh the parts
    m = merge_stats([feature_stats(a[:1000]), feature_stats(b[:9000])])
    assert m["q50"][0] == pytest.approx(2 + 0.4 / 0.9, abs=0.02)
    # constant parts are point masses: the data's median is the middle one
    m = merge_stats([feature_stats(np.full(30, v)) for v in (-0.2, -0.07, 0.02)])
    assert m["q50"][0] == pytest.approx(-0.07) and m["q01"][0] == pytest.approx(-0.2)
    # one part merges to itself; a constant feature's quantiles are the constant
    one = feature_stats(a)
    assert merge_stats([one])["q01"] == pytest.approx(one["q01"])
    c = merge_stats([feature_stats(np.full(50, 3.0)), feature_stats(np.full(70, 3.0))])
    assert all(c[q][0] == pytest.approx(3.0) for q in QUANTILES)
    # a bool feature: mostly False, True on the last 10%
    done = merge_stats([feature_stats(np.arange(40) >= 36)] * 3)
    assert done["q50"][0] == pytest.approx(0.0) and done["q99"][0] == pytest.approx(1.0)


_KILLED_SAVE = """
import os, signal, sys
from pathlib import Path
import numpy as np
from robot_rl.data import DatasetWriter
from robot_rl.data.format import DatasetSpec

out, kill_at = Path(sys.argv[1]), int(sys.argv[2])
spec = DatasetSpec(fps=50, robot_type="arm7", task="push", task_text="push the puck",
                   obs_names=("a", "b"), action_names=("u",), joint_names=("j",),
                   action_space={"type": "test"}, cameras=(("front", 16, 16),),
                   keyframe_interval=4)
w = DatasetWriter(out, spec)

def episode(n):
    w.begin_episode(seed=w.num_episodes)
    for t in range(n):
        w.add_frame(obs=np.full(2, t), joint_pos=np.zeros(1), joint_vel=np.zeros(1),
                    action=np.full(1, 0.1 * t), next_obs=np.full(2, t + 1), reward=1.0,
                    cost=0.0, terminated=False, truncated=t == n - 1, success=False,
                    images={"front": np.full((16, 16, 3), 15 * t, np.uint8)})
    w.save_episode()

episode(10)
episode(12)
replace, calls = os.replace, [0]

def dying_replace(src, dst):  # every step of a save ends in a rename
    if calls[0] == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)
    calls[0] += 1
    replace(src, dst)

os.replace = dying_replace
episode(14)
print(calls[0], flush=True)
os.kill(os.getpid(), signal.SIGKILL)  # done: die without any clean-up
"""


def _lerobot_view(root: Path) -> tuple[int, int]:
    """What LeRobot's loader relies on: counts from info.json; every episode file and every
    data file concatenated (sorted paths); the first total_frames data rows are the counted
    episodes' frames in order; each counted episode has its row and videos."""
    info = json.loads((root / "meta" / "info.json").read_text())
    n_eps, n_frames = info["total_episodes"], info["total_frames"]
    rows = pa.concat_tables([pq.read_table(p) for p in
                             sorted((root / "meta" / "episodes").glob("*/*.parquet"))])
    data = pa.concat_tables([pq.read_table(p) for p in sorted((root / "data").glob(
        "*/*.parquet"))])
    assert data.num_rows >= n_frames
    assert data.column("index").to_pylist()[:n_frames] == list(range(n_frames))
    by_index = {r["episode_index"]: r for r in rows.to_pylist()}
    assert sum(by_index[i]["length"] for i in range(n_eps)) == n_frames
    for i in range(n_eps):
        assert (root / info["video_path"].format(
            video_key="observation.images.front", chunk_index=0, file_index=i)).is_file()
    return n_eps, n_frames


@pytest.mark.slow
def test_a_kill_at_each_step_of_a_save_leaves_a_valid_dataset(tmp_path):
    """SIGKILL before each rename of the third episode's save in turn (its frames, video,
    row, stats.json, info.json), and after the save: the dataset is valid for us and for
    LeRobot's loader, holding 2 episodes until info.json counts the third; --resume
    cleans up and appends."""
    import subprocess
    import sys

    from robot_rl.data import DatasetWriter

    steps = None
    kill_at = 0
    while steps is None or kill_at <= steps:
        out = tmp_path / f"kill{kill_at}"
        proc = subprocess.run([sys.executable, "-c", _KILLED_SAVE, str(out), str(kill_at)],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == -9, proc.stderr
        if proc.stdout.strip():  # the run that was not killed inside the save counts them
            steps = int(proc.stdout)
            assert steps == 5
        ds = Dataset(out)
        committed = 3 if kill_at >= 5 else 2
        assert ds.num_episodes == committed, kill_at
        assert ds.validate() == [], kill_at
        assert _lerobot_view(out) == (committed, ds.num_frames) == (
            committed, [10, 22, 36][committed - 1]), kill_at
        assert ds.frames()["action"].shape[0] == ds.num_frames
        # --resume removes what the killed save left and goes on
        with DatasetWriter(out, ds.spec, resume=True) as w:
            assert Dataset(out).uncommitted() == []
            w.begin_episode()
            for _ in range(3):
                w.add_frame(obs=np.zeros(2), joint_pos=np.zeros(1), joint_vel=np.zeros(1),
                            action=np.zeros(1), next_obs=np.zeros(2), reward=0.0, cost=0.0,
                            terminated=False, truncated=False, success=False,
                            images={"front": np.zeros((16, 16, 3), np.uint8)})
            w.save_episode()
        ds = Dataset(out)
        assert ds.num_episodes == committed + 1 and ds.validate() == [], kill_at
        assert _lerobot_view(out)[0] == committed + 1
        kill_at += 1


def _pack_like_lerobot(src: Path, dst: Path) -> None:
    """``src`` rewritten as LeRobot's writer lays a dataset out: every episode's frames in
    one data file (vectors as variable-length lists), every episode's video back to back in
    one mp4, every episode row in one file pointing into them."""
    from robot_rl.video import VideoWriter

    ds = Dataset(src)
    (dst / "meta").mkdir(parents=True)
    for name in ("info.json", "stats.json", "tasks.parquet"):
        (dst / "meta" / name).write_bytes((src / "meta" / name).read_bytes())
    tables = [pq.read_table(p) for p in sorted((src / "data").rglob("*.parquet"))]
    data = pa.concat_tables(tables)
    data = data.cast(pa.schema([pa.field(f.name, pa.list_(pa.float32()))
                                if pa.types.is_fixed_size_list(f.type) else f
                                for f in data.schema]))
    (dst / "data" / "chunk-000").mkdir(parents=True)
    pq.write_table(data, dst / "data" / "chunk-000" / "file-000.parquet")
    key = "observation.images.front"
    video = dst / "videos" / key / "chunk-000" / "file-000.mp4"
    rows, t = [], 0.0
    with VideoWriter(video, ds.fps, keyframe_interval=G) as w:
        for r in ds.episodes:
            for frame in ds.video(int(r["episode_index"]), "front"):
                w.write(frame)
            n = int(r["length"])
            rows.append({**r, "data/file_index": 0, "meta/episodes/file_index": 0,
                         f"videos/{key}/file_index": 0, f"videos/{key}/from_timestamp": t,
                         f"videos/{key}/to_timestamp": t + n / ds.fps})
            t += n / ds.fps
    (dst / "meta" / "episodes" / "chunk-000").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows),
                   dst / "meta" / "episodes" / "chunk-000" / "file-000.parquet")


def _synthetic(out: Path, episodes: int = 3, length: int = EP_LEN) -> Path:
    """A dataset whose camera frame t of episode e is the flat grey 70 e + 2 t."""
    from robot_rl.data import DatasetWriter

    spec = DatasetSpec(fps=50, robot_type="arm7", task="push", task_text="push the puck",
                       obs_names=("a", "b"), action_names=("u",), joint_names=("j",),
                       action_space={"type": "test"}, cameras=(("front", 48, 64),),
                       keyframe_interval=G)
    with DatasetWriter(out, spec) as w:
        for e in range(episodes):
            w.begin_episode(seed=e)
            for t in range(length):
                w.add_frame(obs=np.array([e, t]), joint_pos=np.zeros(1), joint_vel=np.zeros(1),
                            action=np.array([0.01 * t]), next_obs=np.array([e, t + 1]),
                            reward=float(t), cost=0.0, terminated=False,
                            truncated=t == length - 1, success=False,
                            images={"front": np.full((48, 64, 3), 70 * e + 2 * t, np.uint8)})
            w.save_episode()
    return out


def test_reads_datasets_laid_out_as_lerobot_writes_them(tmp_path):
    src = _synthetic(tmp_path / "ours")
    packed = tmp_path / "packed"
    _pack_like_lerobot(src, packed)
    ours, theirs = Dataset(src), Dataset(packed)
    assert theirs.validate() == []
    assert theirs.num_episodes == 3 and theirs.num_frames == 3 * EP_LEN
    a, b = ours.frames(), theirs.frames()
    for key in ("observation.state", "action", "action.applied", "next.reward", "index"):
        assert np.array_equal(a[key], b[key]), key
    assert np.array_equal(theirs.episode(2)["observation.state"][:, 0], np.full(EP_LEN, 2))
    assert theirs.uncommitted() == []
    # episode 1's frames start 30 frames into the shared video
    v = theirs.video(1, "front")
    assert v.shape == (EP_LEN, 48, 64, 3)
    assert np.allclose(v.mean(axis=(1, 2, 3)), 70 + 2 * np.arange(EP_LEN), atol=2.5)
    picks = np.array([EP_LEN - 1, 0, 17, 3])
    assert np.array_equal(theirs.video_frames(1, "front", picks), v[picks])
