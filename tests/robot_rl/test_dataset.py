"""Recording into a LeRobot v3 dataset: layout, replay, crash safety, refusals."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from robot_rl.data import Dataset, DatasetError, DatasetWriter
from robot_rl.errors import ConfigError
from robot_rl.recording.config import RecordConfig
from robot_rl.recording.record import dataset_spec, make_recording_env, record
from robot_rl.recording.sim_replay import replay_episode

EP_LEN = 40


def _record(out: Path, episodes: int = 2, **kw) -> None:
    record(RecordConfig(task="push", teleop="expert", episodes=episodes, out=out,
                        episode_length=EP_LEN, progress=False, **kw))


@pytest.fixture(scope="module")
def push_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("data") / "push"
    _record(out, episodes=2, cameras=("corner",), camera_size=(48, 64))
    return out


def test_layout_and_schema_follow_lerobot_v3(push_data):
    info = json.loads((push_data / "meta" / "info.json").read_text())
    assert info["codebase_version"] == "v3.0"
    assert info["total_episodes"] == 2 and info["total_frames"] == 2 * EP_LEN
    assert info["data_path"] == "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
    assert info["video_path"] == \
        "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
    assert info["splits"] == {"train": "0:2"} and info["fps"] == 50.0
    feats = info["features"]
    for key in ("observation.state", "action", "timestamp", "frame_index", "episode_index",
                "index", "task_index", "next.reward", "next.done"):
        assert key in feats, key
    assert feats["observation.images.corner"]["dtype"] == "video"
    assert feats["observation.images.corner"]["shape"] == [48, 64, 3]
    assert feats["action"]["shape"] == [7] and len(feats["action"]["names"]) == 7
    # frames: one parquet per episode, columns and types as the features say
    t = pq.read_table(push_data / "data" / "chunk-000" / "file-001.parquet")
    assert set(feats) - {"observation.images.corner"} == set(t.column_names)
    action_type = t.schema.field("action").type
    assert action_type.list_size == 7 and str(action_type.value_type) == "float"
    assert str(t.schema.field("index").type) == "int64"
    assert t.column("index").to_pylist() == list(range(EP_LEN, 2 * EP_LEN))
    assert t.column("episode_index").to_pylist() == [1] * EP_LEN
    assert np.allclose(t.column("timestamp").to_numpy(), np.arange(EP_LEN) / 50.0)
    # episode rows: LeRobot's offsets and statistics, plus ours
    ep = pq.read_table(push_data / "meta" / "episodes" / "chunk-000" / "file-001.parquet")
    row = ep.to_pylist()[0]
    assert row["episode_index"] == 1 and row["length"] == EP_LEN
    assert (row["dataset_from_index"], row["dataset_to_index"]) == (EP_LEN, 2 * EP_LEN)
    assert (row["data/chunk_index"], row["data/file_index"]) == (0, 1)
    assert row["videos/observation.images.corner/to_timestamp"] == pytest.approx(EP_LEN / 50)
    assert len(row["stats/action/mean"]) == 7 and row["stats/action/count"] == [EP_LEN]
    assert row["robot_rl/seed"] >= 0 and row["robot_rl/source"] == "expert"
    tasks = pq.read_table(push_data / "meta" / "tasks.parquet")
    assert tasks.column("task").to_pylist() == [row["tasks"][0]]
    assert json.loads(tasks.schema.metadata[b"pandas"])["index_columns"] == ["task"]
    # global statistics are the exact merge of the episodes'
    stats = json.loads((push_data / "meta" / "stats.json").read_text())
    f = Dataset(push_data).frames()
    assert np.allclose(stats["action"]["mean"], f["action"].mean(0), atol=1e-6)
    assert np.allclose(stats["action"]["std"], f["action"].std(0), atol=1e-6)
    assert stats["action"]["count"] == [2 * EP_LEN]
    assert np.asarray(stats["observation.images.corner"]["mean"]).shape == (3, 1, 1)


def test_validates_and_videos_hold_every_frame(push_data):
    ds = Dataset(push_data)
    assert ds.validate() == []
    video = ds.video(0, "corner")
    assert video.shape == (EP_LEN, 48, 64, 3) and video.std() > 1  # an image, not a blank


def test_replay_from_the_recorded_initial_state_reproduces_the_states(push_data):
    ds = Dataset(push_data)
    for i in range(2):
        r = replay_episode(ds, i)
        assert r.frames == EP_LEN
        assert r.max_joint_error < 1e-6  # float32 storage is the only difference
        assert r.max_obs_error < 1e-6


def test_next_observation_is_the_following_frame_and_the_final_one_at_the_end(push_data):
    f = Dataset(push_data).episode(0)
    assert np.array_equal(f["next.observation.state"][:-1], f["observation.state"][1:])
    assert f["next.done"][-1] and not f["next.done"][:-1].any()


def test_a_recording_in_another_action_space_replays_and_learners_act_in_it(tmp_path):
    """``--action ee-position --target-box``: the dataset records its action space with the
    task's target box; replay, and the env a learner from it evaluates in
    (``make_eval_env``), act in that space, not the task's."""
    from robot_rl.bc import make_eval_env
    from robot_rl.controllers import EEDeltaConfig
    from robot_rl.sim import get_task

    out = tmp_path / "ee"
    record(RecordConfig(task="push", teleop="expert", episodes=2, out=out, progress=False,
                        episode_length=EP_LEN, action="ee-position", target_box=True))
    ds = Dataset(out)
    assert ds.spec is not None and ds.spec.action_names == ("ee.x", "ee.y", "ee.z")
    r = replay_episode(ds, 1)
    assert r.frames == EP_LEN and r.max_obs_error < 1e-6
    env = make_eval_env(ds, 2, seed=0)
    assert env is not None and env.act_dim == 3
    lo, hi = get_task("push").ee_box or ((), ())
    assert env.cfg.action == EEDeltaConfig(rotation=False, gripper=False, box_lo=lo,
                                           box_hi=hi)
    assert env.cfg.episode_length == EP_LEN


def test_named_action_spaces_and_the_target_box() -> None:
    from robot_rl.controllers import EEDeltaConfig, JointDeltaConfig
    from robot_rl.recording.record import named_action

    assert named_action("push", "task") is None
    assert named_action("push", "joint-delta") == JointDeltaConfig(gripper=False)
    plain = named_action("push", "ee-delta")
    assert isinstance(plain, EEDeltaConfig) and plain.rotation and plain.box_lo is None
    boxed = named_action("push", "ee-position", box=True)
    assert isinstance(boxed, EEDeltaConfig) and not boxed.rotation
    assert boxed.box_lo is not None and boxed.box_hi is not None
    assert all(lo < hi for lo, hi in zip(boxed.box_lo, boxed.box_hi, strict=True))
    for task, name in (("push", "joint-delta"), ("push", "task"), ("reach", "ee-position")):
        with pytest.raises(ConfigError, match="target box"):
            named_action(task, name, box=True)  # type: ignore[arg-type]


def test_a_recording_with_the_motion_profile_replays_and_learners_act_with_it(tmp_path):
    """``--motion``: the dataset records the profile in its env making; replay reproduces the
    episode only with it, and a learner's env from the dataset has it on."""
    from robot_rl.bc import make_eval_env

    out = tmp_path / "motion"
    record(RecordConfig(task="push", teleop="expert", episodes=1, out=out, progress=False,
                        episode_length=EP_LEN, motion=True))
    ds = Dataset(out)
    assert ds.spec is not None and ds.spec.env["motion"]["enabled"] is True
    assert replay_episode(ds, 0).max_obs_error < 1e-6
    env = make_eval_env(ds, 2, seed=0)
    assert env is not None and env.cfg.motion.enabled


def test_a_recording_at_another_control_rate_replays_and_learners_act_at_it(tmp_path):
    """``--control-hz 20``: 20 frames per second, the decimation (25 physics steps of 2 ms)
    in the env making; replay reproduces it and a learner's env from it steps at 50 ms."""
    from robot_rl.bc import make_eval_env

    out = tmp_path / "rate"
    record(RecordConfig(task="push", teleop="expert", episodes=1, out=out, progress=False,
                        episode_length=EP_LEN, control_hz=20.0))
    ds = Dataset(out)
    assert ds.spec is not None and ds.spec.fps == pytest.approx(20.0)
    assert ds.spec.env["decimation"] == 25
    assert replay_episode(ds, 0).max_obs_error < 1e-6
    env = make_eval_env(ds, 2, seed=0)
    assert env is not None and env.control_dt == pytest.approx(0.05)
    with pytest.raises(ConfigError, match="--control-hz: .*whole number"):
        RecordConfig(task="push", teleop="expert", control_hz=30.0).validate()


def test_corrupt_or_mismatched_datasets_are_refused_naming_the_field(push_data, tmp_path):
    reach = make_recording_env("reach")
    with pytest.raises(DatasetError, match="task: the dataset has 'push'"):
        Dataset(push_data).check(dataset_spec(reach))
    # names: where the two lists part, not their common beginning (the gripper's action)
    spec = Dataset(push_data).spec
    assert spec is not None
    wider = dataclasses.replace(spec, obs_names=(*spec.obs_names, "last_action.7"))
    n = len(spec.obs_names)
    assert spec.mismatch(wider) == (f"obs_names: the dataset has {n}, this run {n + 1}; from "
                                    f"element {n} on the dataset has (), this run "
                                    f"('last_action.7',)")
    with pytest.raises(DatasetError, match="task"):  # resuming with another task
        record(RecordConfig(task="reach", teleop="expert", episodes=3, out=push_data,
                            resume=True, progress=False, episode_length=EP_LEN))
    bad = tmp_path / "bad"
    (bad / "meta").mkdir(parents=True)
    (bad / "meta" / "info.json").write_text("{not json")
    with pytest.raises(DatasetError, match="not valid JSON"):
        Dataset(bad)
    (bad / "meta" / "info.json").write_text(json.dumps({"codebase_version": "v2.1"}))
    with pytest.raises(DatasetError, match="v2.1"):
        Dataset(bad)
    with pytest.raises(DatasetError, match="already holds a dataset"):
        _record(push_data)  # no --resume: refuse to write over it


def test_a_damaged_frame_file_is_reported_by_validate(push_data, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(push_data, copy)
    f = copy / "data" / "chunk-000" / "file-000.parquet"
    f.write_bytes(f.read_bytes()[:100])
    problems = Dataset(copy).validate(decode_videos=False)
    assert any("episode 0" in p and "unreadable" in p for p in problems), problems


def test_unwritable_folder_and_full_disk_fail_before_the_episode(tmp_path):
    spec = dataset_spec(make_recording_env("push"))
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(DatasetError, match="cannot write"):
        DatasetWriter(blocker / "ds", spec)
    w = DatasetWriter(tmp_path / "ds", spec)
    w.min_free_mb = 1e12  # the disk filled up since: more than any disk has
    with pytest.raises(DatasetError, match="MB free"):
        w.begin_episode()
    assert not w.recording


def test_resume_appends(tmp_path):
    out = tmp_path / "ds"
    _record(out, episodes=1)
    _record(out, episodes=2, resume=True)
    ds = Dataset(out)
    assert ds.num_episodes == 2 and ds.validate(decode_videos=False) == []
    seeds = [r["robot_rl/seed"] for r in ds.episodes]
    assert seeds[0] != seeds[1]  # a new start, not the first one again


_RECORDER = """
import sys
from pathlib import Path
from robot_rl.recording.record import RecordConfig, record
record(RecordConfig(task="push", teleop="expert", episodes=50, out=Path(sys.argv[1]),
                    episode_length=50, realtime=True, progress=False))
"""


@pytest.mark.slow
def test_kill_9_mid_episode_leaves_a_valid_dataset_and_resume_cleans_up(tmp_path):
    out = tmp_path / "ds"
    proc = subprocess.Popen([sys.executable, "-c", _RECORDER, str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    info = out / "meta" / "info.json"

    def saved() -> int:  # committed episodes (info.json is the commit point)
        try:
            return int(json.loads(info.read_text()).get("total_episodes", 0))
        except (OSError, ValueError):
            return 0

    try:
        end = time.monotonic() + 180
        while time.monotonic() < end and saved() < 2:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.02)
        # the third episode (1 s of real time) is under way: kill it while it is open (a
        # kill at each step of a save: test_lerobot_conventions)
        while time.monotonic() < end and not (saved() >= 2 and (out / ".incomplete").exists()):
            time.sleep(0.005)
        assert (out / ".incomplete").exists()
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    ds = Dataset(out)
    n = ds.num_episodes
    assert n >= 2
    assert ds.validate(decode_videos=False) == []
    assert (out / ".incomplete") in ds.uncommitted()
    assert ds.frames()["action"].shape[0] == 50 * n
    _record(out, episodes=n + 1, resume=True)
    ds = Dataset(out)
    assert ds.num_episodes == n + 1 and ds.uncommitted() == []
    assert ds.validate(decode_videos=False) == []


def test_a_crash_between_an_episode_row_and_info_json_leaves_the_episode_uncommitted(
        tmp_path, monkeypatch):
    """info.json is the commit point, written last; a crash after an episode's row but
    before info.json leaves a valid dataset without that episode, whose files --resume
    removes. (A kill before each step of a save is tested in test_lerobot_conventions.)"""
    from robot_rl.data.writer import DatasetWriter

    out = tmp_path / "ds"
    _record(out, episodes=1)

    write_meta = DatasetWriter._write_meta

    def crash(self: DatasetWriter) -> None:
        if len(self._rows) == 2:  # the second episode's save, after its row
            raise KeyboardInterrupt  # the process dies before info.json counts it
        write_meta(self)

    monkeypatch.setattr(DatasetWriter, "_write_meta", crash)
    with pytest.raises(KeyboardInterrupt):
        _record(out, episodes=2, resume=True)
    monkeypatch.undo()
    ds = Dataset(out)
    assert ds.num_episodes == 1 and ds.validate(decode_videos=False) == []
    row = out / "meta" / "episodes" / "chunk-000" / "file-001.parquet"
    assert row.is_file() and row in ds.uncommitted()
    _record(out, episodes=2, resume=True)  # removes the leftovers, records the second again
    ds = Dataset(out)
    assert ds.num_episodes == 2 and ds.validate(decode_videos=False) == []


def test_a_dataset_loads_into_a_replay_buffer_as_its_transitions(push_data):
    from robot_rl.finetune.demos import demo_buffer

    ds = Dataset(push_data)
    env = make_recording_env("push")
    buf = demo_buffer(ds, env)
    f = ds.frames()
    assert len(buf) == ds.num_frames == 2 * EP_LEN
    assert np.array_equal(buf.obs.numpy(), f["observation.state"])
    assert np.array_equal(buf.next_obs.numpy(), f["next.observation.state"])
    assert np.array_equal(buf.reward.numpy(), f["next.reward"])
    assert np.array_equal(buf.terminated.numpy(), f["next.terminated"].astype(np.float32))
    with pytest.raises(DatasetError, match="task"):
        demo_buffer(ds, make_recording_env("reach"))


def test_the_applied_action_is_recorded_next_to_the_command(push_data):
    """``action`` is the command, ``action.applied`` what the shield let through: the next
    observation's last_action term is the applied one."""
    ds = Dataset(push_data)
    f = ds.frames()
    names = ds.spec.obs_names
    last = [names.index(f"last_action.{i}") for i in range(len(ds.spec.action_names))]
    assert f["action.applied"].shape == f["action"].shape
    assert np.array_equal(f["next.observation.state"][:, last], f["action.applied"])
    info = json.loads((push_data / "meta" / "info.json").read_text())
    assert info["features"]["action.applied"]["names"] == list(ds.spec.action_names)
