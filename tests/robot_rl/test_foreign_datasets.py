"""Datasets we did not write as they are: LeRobot datasets of another arm (read, validated,
learnt from by ``robot-rl bc``, imported onto a task) and our own after LeRobot's edit tools
dropped our metadata (recovered, and what was lost said)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from rich.console import Console

from robot_rl.bc import BCRunner
from robot_rl.bc.config import BCConfig
from robot_rl.data import Dataset, DatasetError
from robot_rl.data.format import ACTION_MEANING
from robot_rl.errors import ConfigError
from robot_rl.policies import PolicyConfig
from robot_rl.recording.config import RecordConfig
from robot_rl.recording.record import dataset_spec, record

FPS, EPISODES, LENGTH = 50, 8, 40
JOINTS = tuple(f"joint{i}" for i in range(1, 8))


def _lead(q_deg: np.ndarray) -> np.ndarray:
    """How far [deg] each target leads its measured joint angle (a function of the state,
    so the data has one right action per state)."""
    return 3.0 * np.tanh(q_deg / 10.0)


def _lerobot_info(features: dict, episodes: int, frames: int, robot_type: str) -> dict:
    """info.json as LeRobot 0.4-0.6 writes it (DatasetInfo's fields, nothing else)."""
    return {"codebase_version": "v3.0", "fps": FPS, "features": features,
            "total_episodes": episodes, "total_frames": frames, "total_tasks": 1,
            "chunks_size": 1000, "data_files_size_in_mb": 100, "video_files_size_in_mb": 200,
            "data_path": "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet",
            "video_path": "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4",
            "robot_type": robot_type, "splits": {"train": f"0:{episodes}"}}


def _write_tasks(root: Path, text: str) -> None:
    pq.write_table(pa.table({"task_index": pa.array([0], pa.int64()), "task": [text]}),
                   root / "meta" / "tasks.parquet")


def _vec(names: list[str]) -> dict:
    return {"dtype": "float32", "shape": [len(names)], "names": names}


CAM = "observation.images.wrist"


def _grey(e: int, t: int) -> int:
    """The camera frame t of episode e is this flat grey."""
    return 15 * e + 2 * t


def _av1_video(path: Path, frames: list[np.ndarray]) -> None:
    """An mp4 as LeRobot's writer encodes it by default: AV1 (SVT-AV1), yuv420p, g=2 (H.264
    where this PyAV build has no SVT-AV1 encoder)."""
    import av

    path.parent.mkdir(parents=True)
    codec = "libsvtav1" if "libsvtav1" in av.codecs_available else "libx264"
    with av.open(str(path), "w") as c:
        s = c.add_stream(codec, rate=FPS)
        s.width, s.height = frames[0].shape[1], frames[0].shape[0]
        s.pix_fmt = "yuv420p"
        s.options = {"g": "2", "crf": "30", "preset": "10" if codec == "libsvtav1" else "fast"}
        for f in frames:
            for packet in s.encode(av.VideoFrame.from_ndarray(f, format="rgb24")):
                c.mux(packet)
        for packet in s.encode():
            c.mux(packet)


def _write_lerobot(root: Path, names: list[str], states: list[np.ndarray],
                   actions: list[np.ndarray], robot_type: str, camera: bool = False) -> Path:
    """A LeRobot dataset as LeRobot's writer lays it out: all episodes in one data file,
    vectors as list<float>, with ``camera`` every episode's frames back to back in one AV1
    video (episode e's frame t a flat grey ``_grey(e, t)``)."""
    (root / "meta" / "episodes" / "chunk-000").mkdir(parents=True)
    (root / "data" / "chunk-000").mkdir(parents=True)
    features = {"observation.state": _vec(names), "action": _vec(names)}
    for key, dtype in (("timestamp", "float32"), ("frame_index", "int64"),
                       ("episode_index", "int64"), ("index", "int64"), ("task_index", "int64")):
        features[key] = {"dtype": dtype, "shape": [1], "names": None}
    cols: dict[str, list] = {k: [] for k in features}
    rows, video = [], []
    for e, (q, a) in enumerate(zip(states, actions, strict=True)):
        n = len(q)
        start = len(cols["index"])
        cols["observation.state"] += q.astype(np.float32).tolist()
        cols["action"] += a.astype(np.float32).tolist()
        cols["timestamp"] += (np.arange(n) / FPS).astype(np.float32).tolist()
        cols["frame_index"] += list(range(n))
        cols["episode_index"] += [e] * n
        cols["index"] += list(range(start, start + n))
        cols["task_index"] += [0] * n
        row = {"episode_index": e, "tasks": ["move the arm"], "length": n,
               "data/chunk_index": 0, "data/file_index": 0, "dataset_from_index": start,
               "dataset_to_index": start + n, "meta/episodes/chunk_index": 0,
               "meta/episodes/file_index": 0}
        if camera:
            row.update({f"videos/{CAM}/chunk_index": 0, f"videos/{CAM}/file_index": 0,
                        f"videos/{CAM}/from_timestamp": start / FPS,
                        f"videos/{CAM}/to_timestamp": (start + n) / FPS})
            video += [np.full((48, 64, 3), _grey(e, k), np.uint8) for k in range(n)]
        rows.append(row)
    table = pa.table({k: pa.array(v, pa.list_(pa.float32()) if features[k]["shape"] != [1]
                                  else pa.from_numpy_dtype(np.dtype(features[k]["dtype"])))
                      for k, v in cols.items()})
    pq.write_table(table, root / "data" / "chunk-000" / "file-000.parquet")
    if camera:
        _av1_video(root / "videos" / CAM / "chunk-000" / "file-000.mp4", video)
        features[CAM] = {"dtype": "video", "shape": [48, 64, 3],
                         "names": ["height", "width", "channels"],
                         "info": {"video.height": 48, "video.width": 64, "video.codec": "av1",
                                  "video.pix_fmt": "yuv420p", "video.is_depth_map": False,
                                  "video.fps": FPS, "video.channels": 3, "has_audio": False}}
    pq.write_table(pa.Table.from_pylist(rows),
                   root / "meta" / "episodes" / "chunk-000" / "file-000.parquet")
    _write_tasks(root, "move the arm")
    (root / "meta" / "stats.json").write_text("{}")
    frames = sum(len(q) for q in states)
    info = _lerobot_info(features, len(states), frames, robot_type)
    (root / "meta" / "info.json").write_text(json.dumps(info, indent=2))
    return root


@pytest.fixture(scope="module")
def so_arm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A LeRobot dataset of a 7-joint arm (motor names ``jointN.pos``, degrees) with a
    camera."""
    rng = np.random.default_rng(0)
    t = np.arange(LENGTH) / FPS
    # every episode sweeps the same range, from its own phases
    states = [30.0 * np.sin(2 * np.pi * 1.5 * t[:, None] + rng.uniform(0, 2 * np.pi, 7))
              for _ in range(EPISODES)]
    return _write_lerobot(tmp_path_factory.mktemp("lerobot") / "so_arm",
                          [f"{j}.pos" for j in JOINTS], states, [q + _lead(q) for q in states],
                          "so_arm7", camera=True)


def test_a_lerobot_dataset_of_another_arm_is_read_and_validated(so_arm, capsys):
    from robot_rl.cli import main

    ds = Dataset(so_arm)
    assert ds.spec is None and "not a robot_rl recording" in ds.notes[0]
    assert ds.validate() == []
    assert ds.num_episodes == EPISODES and ds.fps == FPS
    f = ds.episode(3)
    assert f["observation.state"].shape == (LENGTH, 7) and (f["episode_index"] == 3).all()
    # AV1 camera frames, episode 3 starting 120 frames into the shared video
    assert ds.cameras == (("wrist", 48, 64),)
    want = [37, 2, 20, 39]
    got = ds.video_frames(3, "wrist", want).mean(axis=(1, 2, 3))
    assert np.allclose(got, [_grey(3, k) for k in want], atol=3), got
    with pytest.raises(DatasetError, match="data import"):
        ds.require_spec("fine-tuning")
    main(["data", "info", str(so_arm)])
    out = capsys.readouterr().out
    assert "observation.state (7)" in out and "so_arm7" in out and "data import" in out
    assert "wrist 64x48" in out and "keyframe" not in out  # not recorded: not claimed


def test_a_broken_lerobot_dataset_is_reported(so_arm, tmp_path):
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(so_arm, bad)
    info = json.loads((bad / "meta" / "info.json").read_text())
    info["features"]["action"]["shape"] = [6]  # the files hold 7
    (bad / "meta" / "info.json").write_text(json.dumps(info))
    assert any("'action' has lists of length [7], expected 6" in p
               for p in Dataset(bad).validate())


def test_import_maps_a_lerobot_dataset_onto_a_task(so_arm, tmp_path):
    from robot_rl.hardware.observation import TaskObserver
    from robot_rl.recording.lerobot_import import import_lerobot
    from robot_rl.sim import make_env, make_task_config

    out = tmp_path / "reach"
    goal = (0.5, -0.15, 0.3)
    assert import_lerobot([so_arm], out, "reach", goal, angle_unit="deg") == EPISODES
    ds = Dataset(out)
    assert ds.validate() == [] and ds.notes == []
    ds.check(dataset_spec(make_env("reach", 1)))  # fine-tuning on reach takes it
    src = Dataset(so_arm).episode(2)
    f = ds.episode(2)
    assert len(f["action"]) == LENGTH - 1  # the last frame has no next state
    q = np.deg2rad(src["observation.state"][:-1].astype(np.float64))
    assert np.allclose(f["observation.joint_pos"], q, atol=1e-5)
    qd = np.gradient(np.deg2rad(src["observation.state"].astype(np.float64)), 1 / FPS, axis=0)
    assert np.allclose(f["observation.joint_vel"], qd[:-1], atol=1e-3)
    scale = float(make_task_config("reach").action.scale)
    lead = np.deg2rad(_lead(src["observation.state"][:-1].astype(np.float64)))
    assert np.allclose(f["action"], np.clip(lead / scale, -1, 1), atol=1e-4)
    obs = TaskObserver(make_task_config("reach"))
    obs.set_goal(goal)
    want = obs(f["observation.joint_pos"][5].astype(np.float64),
               f["observation.joint_vel"][5].astype(np.float64), f["action"][4], f["action"][3])
    assert np.allclose(f["observation.state"][5], want, atol=1e-5)
    assert ds.episodes[2]["robot_rl/source"] == "lerobot:so_arm/2"
    with pytest.raises(DatasetError, match="looked for each as j or j.pos"):
        import_lerobot([so_arm], tmp_path / "y", "reach", state_key="timestamp")
    with pytest.raises(DatasetError, match="no feature 'observation.joints'"):
        import_lerobot([so_arm], tmp_path / "z", "reach", state_key="observation.joints")


SO101 = ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll")


@pytest.mark.parametrize("unit", ["deg", "normalized"])
def test_lerobot_so101_data_lands_on_the_so5_arm_and_bc_trains_on_it(unit, tmp_path, cli):
    """An SO-101 dataset as LeRobot records one (``shoulder_pan.pos`` ... ``gripper.pos``, in
    degrees or its -100 .. 100 range across each joint's range) imported onto reach on so5:
    the joint angles in radians, then ``robot-rl bc`` on it."""
    from robot_rl.robots import get_robot

    arm = get_robot("so5")
    lo, hi = np.asarray(arm.q_min), np.asarray(arm.q_max)
    rng = np.random.default_rng(1)
    t = np.arange(LENGTH) / FPS
    rad = [np.asarray(arm.home) + 0.3 * np.sin(2 * np.pi * t[:, None] + rng.uniform(0, 6, 5))
           for _ in range(4)]

    def logged(q: np.ndarray) -> np.ndarray:
        arm_cols = np.rad2deg(q) if unit == "deg" else (q - lo) / (hi - lo) * 200.0 - 100.0
        gripper = np.full((len(q), 1), 40.0)  # LeRobot's 0 .. 100
        return np.concatenate([arm_cols, gripper], axis=1)

    lead = 0.05
    states = [logged(q) for q in rad]
    states[0][0, :5] = 50.0  # 50 deg = 0.8727 rad; normalized 50: 3/4 of the way up the range
    root = _write_lerobot(tmp_path / "so101", [f"{j}.pos" for j in (*SO101, "gripper")],
                          states, [logged(q + lead) for q in rad], "so101")
    out = tmp_path / "so5_reach"
    r = cli("data", "import", str(root), "--task", "reach", "--robot", "so5", "--angle-unit",
            unit, "--goal", "0.22", "0.05", "0.12", "--out", str(out))
    assert r.returncode == 0, r.stderr
    ds = Dataset(out)
    assert ds.num_episodes == 4 and ds.spec is not None and ds.spec.robot_type == "so5"
    assert ds.spec.joint_names == SO101
    first = ds.episode(0)["observation.joint_pos"][0]
    # shoulder_pan's range is +-1.91986 rad, wrist_roll's -2.74385 .. 2.84121
    want = [0.87266] * 5 if unit == "deg" else [0.95993, 0.87267, 0.845, 0.82903, 1.44495]
    assert np.allclose(first, want, atol=1e-4), first
    f = ds.episode(1)
    assert np.allclose(f["observation.joint_pos"], rad[1][:-1], atol=1e-5)
    scale = 0.1  # reach's joint_delta scale: the 0.05 rad lead is half an action
    assert np.allclose(f["action"], lead / scale, atol=1e-4)
    r = cli("bc", "--demos", str(out), "--algo", "bc-mlp", "--steps", "60", "--eval-every",
            "60", "--eval-episodes", "2", "--runs-dir", str(tmp_path / "runs"), "--run-name",
            "bc", "--no-progress", "--policy.width", "32", "--policy.blocks", "1")
    assert r.returncode == 0, r.stderr
    # evaluated in simulation on the arm the data is of: reach laid out for so5
    rows = list(csv.DictReader(open(tmp_path / "runs" / "bc" / "eval.csv")))
    assert rows and "success_rate" in rows[-1]


def test_bc_learns_a_foreign_dataset_by_held_out_action_error(so_arm, tmp_path, capsys):
    from robot_rl.cli import main

    cfg = BCConfig(demos=so_arm, algo="bc-mlp", steps=300, batch_size=64, eval_every=150,
                   log_every=50, lr=3e-3, runs_dir=tmp_path, run_name="bc",
                   policy=PolicyConfig(horizon=1, width=64, blocks=1), progress=False)
    runner = BCRunner(cfg, console=Console(quiet=True))  # one action per state: H = 1
    assert runner.demos.task is None and len(runner.demos.heldout_episodes) == 1
    assert runner.eval_env is None
    history = runner.train()
    rows = list(csv.DictReader(open(tmp_path / "bc" / "eval.csv")))
    assert [float(r["action_rmse"]) for r in rows] == [h["action_rmse"] for h in history]
    last = history[-1]
    assert last["action_rmse_rel"] < 0.3, last  # far better than the mean action (0.17 here)
    # actions stay in the data's range (degrees, not [-1, 1])
    obs = runner.data.obs[:4, None]
    chunk = runner.acting.sample(obs)
    assert chunk.abs().max() > 1.0
    assert (chunk <= runner.acting.high + 1e-6).all() and (chunk >= runner.acting.low - 1e-6
                                                            ).all()
    with pytest.raises(SystemExit):
        main(["eval", str(tmp_path / "bc"), "--episodes", "1"])
    assert "matches none of our simulated tasks" in capsys.readouterr().err


def test_bc_holdout_is_checked(so_arm, tmp_path):
    with pytest.raises(ConfigError, match="--holdout"):
        BCRunner(BCConfig(demos=so_arm, holdout=1.0, runs_dir=tmp_path, progress=False))


# -- our datasets after LeRobot's edit tools --------------------------------------------------


def _lerobot_delete_episode(src: Path, dst: Path, drop: int) -> None:
    """What LeRobot 0.4.4's ``delete_episodes`` leaves (checked against the real one): info.json
    rebuilt from LeRobot's fields with the feature entries copied; each kept episode's frames
    re-indexed in a file keeping its source file number (deleting 1 of 0..3 leaves files 0,
    2, 3 holding episodes 0, 1, 2); one episode-row file of LeRobot's columns only, image
    statistics nested (3, 1, 1); the task text as pandas' unnamed index."""
    ds = Dataset(src)
    info = json.loads((src / "meta" / "info.json").read_text())
    keep = [int(r["episode_index"]) for r in ds.episodes if r["episode_index"] != drop]
    (dst / "meta" / "episodes" / "chunk-000").mkdir(parents=True)
    (dst / "data" / "chunk-000").mkdir(parents=True)
    rows, start = [], 0
    for new, old in enumerate(keep):
        r = next(r for r in ds.episodes if r["episode_index"] == old)
        name = f"file-{old:03d}"
        t = pq.read_table(src / "data" / "chunk-000" / f"{name}.parquet")
        n = t.num_rows
        t = t.set_column(t.column_names.index("episode_index"), "episode_index",
                         pa.array([new] * n, pa.int64()))
        t = t.set_column(t.column_names.index("index"), "index",
                         pa.array(range(start, start + n), pa.int64()))
        pq.write_table(t, dst / "data" / "chunk-000" / f"{name}.parquet")
        row = {k: v for k, v in r.items() if not k.startswith("robot_rl/")}
        for k, v in row.items():
            if k.startswith("stats/observation.images.") and not k.endswith("/count"):
                row[k] = [[[x]] for x in v]
        row.update({"episode_index": new, "dataset_from_index": start,
                    "dataset_to_index": start + n, "meta/episodes/file_index": 0})
        rows.append(row)
        start += n
        for p in (src / "videos").glob("*"):
            v = dst / "videos" / p.name / "chunk-000" / f"{name}.mp4"
            v.parent.mkdir(parents=True, exist_ok=True)
            v.write_bytes((p / "chunk-000" / f"{name}.mp4").read_bytes())
    pq.write_table(pa.Table.from_pylist(rows),
                   dst / "meta" / "episodes" / "chunk-000" / "file-000.parquet")
    text = pq.read_table(src / "meta" / "tasks.parquet").column("task")[0].as_py()
    pq.write_table(pa.table({"task_index": pa.array([0], pa.int64()),
                             "__index_level_0__": [text]}), dst / "meta" / "tasks.parquet")
    (dst / "meta" / "stats.json").write_bytes((src / "meta" / "stats.json").read_bytes())
    out = _lerobot_info(info["features"], len(keep), start, info["robot_type"])
    out["fps"] = info["fps"]
    (dst / "meta" / "info.json").write_text(json.dumps(out, indent=2))


@pytest.fixture(scope="module")
def edited(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("edit")
    src = root / "push"
    record(RecordConfig(task="push", teleop="expert", episodes=3, out=src, episode_length=30,
                        cameras=("front",), camera_size=(48, 64), keyframe_interval=8,
                        progress=False))
    _lerobot_delete_episode(src, root / "edited", drop=1)
    return src, root / "edited"


@pytest.mark.slow
def test_our_dataset_after_a_lerobot_edit_is_recovered(edited, capsys):
    from robot_rl.cli import main
    from robot_rl.finetune.demos import demo_buffer
    from robot_rl.recording.sim_replay import replay_episode
    from robot_rl.sim import make_env

    src, dst = edited
    assert "robot_rl" not in json.loads((dst / "meta" / "info.json").read_text())
    before, after = Dataset(src), Dataset(dst)
    assert after.spec is not None
    assert after.spec.mismatch(before.spec) is None  # task (and text), action space, names
    assert after.spec.cameras == before.spec.cameras
    assert after.spec.keyframe_interval == 8 and after.spec.applied_action
    assert after.spec.task_text == before.spec.task_text and after.spec.env == {}
    assert any("cannot be replayed" in n for n in after.notes)
    assert any("reset seed" in n for n in after.notes)
    assert after.validate() == []
    assert np.array_equal(after.episode(1)["action"], before.episode(2)["action"])
    assert np.array_equal(after.video(1, "front"), before.video(2, "front"))
    env = make_env("push", 1, episode_length=30)
    assert demo_buffer(after, env).size == after.num_frames  # fine-tuning takes it
    with pytest.raises(DatasetError, match="lost"):
        replay_episode(after, 0)
    main(["data", "info", str(dst)])
    out = capsys.readouterr().out
    assert "push" in out and "note" in out and "lost" in out
    success = sum(bool(r["robot_rl/success"]) for r in before.episodes if
                  r["episode_index"] != 1)
    assert f"2 ({success} successful)" in out


def test_the_action_feature_says_what_an_action_means(edited):
    src, _ = edited
    info = json.loads((src / "meta" / "info.json").read_text())
    meaning = info["features"]["action"][ACTION_MEANING]
    assert meaning == {"task": "push", "action_space": info["robot_rl"]["action_space"]}


def test_an_edit_that_lost_the_actions_meaning_is_said(edited, tmp_path):
    import shutil

    _, dst = edited
    old = tmp_path / "old"
    shutil.copytree(dst, old)
    info = json.loads((old / "meta" / "info.json").read_text())
    del info["features"]["action"][ACTION_MEANING]  # edited before robot_rl kept it there
    (old / "meta" / "info.json").write_text(json.dumps(info))
    ds = Dataset(old)
    assert ds.spec is None and "cannot be recovered" in ds.notes[0]
    assert ds.validate() == [] and ds.cameras == (("front", 48, 64),)
    assert np.array_equal(ds.video(0, "front"), Dataset(dst).video(0, "front"))


def test_appending_to_an_edited_dataset_overwrites_nothing(edited, tmp_path):
    import shutil

    from robot_rl.data import DatasetWriter

    _, dst = edited
    app = tmp_path / "app"
    shutil.copytree(dst, app)
    before = Dataset(app)
    old = [before.episode(i)["action"] for i in range(before.num_episodes)]
    assert before.episodes[1]["data/file_index"] == 2  # the number episode 2 would get
    spec = before.spec
    assert spec is not None
    with DatasetWriter(app, spec, resume=True) as w:
        for e in range(2):
            w.begin_episode()
            for t in range(5):
                w.add_frame(obs=np.zeros(len(spec.obs_names)),
                            joint_pos=np.zeros(len(spec.joint_names)),
                            joint_vel=np.zeros(len(spec.joint_names)),
                            action=np.full(len(spec.action_names), 0.1 * e),
                            next_obs=np.zeros(len(spec.obs_names)), reward=0.0, cost=0.0,
                            terminated=False, truncated=t == 4, success=False,
                            images={"front": np.zeros((48, 64, 3), np.uint8)})
            w.save_episode()
    after = Dataset(app)
    assert after.num_episodes == 4 and after.validate() == []  # one episode-row schema too
    for i, a in enumerate(old):
        assert np.array_equal(after.episode(i)["action"], a), i
    assert [int(r["data/file_index"]) for r in after.episodes] == [0, 2, 3, 4]
    assert np.allclose(after.episode(3)["action"], 0.1)
