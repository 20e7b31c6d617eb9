"""DatasetWriter: record episodes into a LeRobot v3 dataset, each one committed atomically.

    spec = DatasetSpec(fps=25, robot_type="arm7", task="push", ...)
    with DatasetWriter("data/push", spec) as w:          # resume=True appends
        w.begin_episode(seed=7)                            # checks the disk first
        for each step:
            w.add_frame(obs=..., joint_pos=..., joint_vel=..., action=..., next_obs=...,
                        reward=..., cost=..., terminated=..., truncated=..., success=...,
                        intervention=False, images={"front": rgb})
        seconds = w.save_episode()                         # or w.discard_episode()

Frames are kept in memory and camera frames are encoded to mp4 as they arrive (in
``.incomplete``), so saving writes one small parquet file and renames files: well under a
second. See ``format`` for the commit order that makes a crash lose only the open episode.
"""

from __future__ import annotations

import dataclasses
import io
import json
import queue
import shutil
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from robot_rl.data.format import (
    CHUNKS_SIZE,
    CODEBASE_VERSION,
    DATA_PATH,
    IMAGE_PREFIX,
    INCOMPLETE,
    SCALARS,
    VIDEO_PATH,
    DatasetError,
    DatasetSpec,
    atomic_write_bytes,
    atomic_write_json,
    chunk_file,
    commit_file,
    data_path,
    episode_path,
    used_file_numbers,
    video_path,
)
from robot_rl.data.stats import STATS, feature_stats, merge_stats, to_json

VECTORS = ("observation.state", "observation.joint_pos", "observation.joint_vel", "action",
           "next.observation.state")
APPLIED = "action.applied"
"""The action after the shield; written when the dataset's spec records it."""
_IMAGE_STATS_EVERY = 5
"""Every this many camera frames feeds the image statistics."""


class _VideoThread:
    """An mp4 encoder on a thread of its own: the recording loop hands frames over and goes
    on (PyAV encodes without holding the GIL), so encoding overlaps the next step and render.
    ``close`` waits for the last frame; an encoder error surfaces there."""

    def __init__(self, path: Path, fps: float, keyframe_interval: int | None):
        from robot_rl.video import VideoWriter

        self._writer = VideoWriter(path, fps, keyframe_interval)
        self._queue: queue.Queue[np.ndarray | None] = queue.Queue(maxsize=256)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=f"encode {path.name}",
                                        daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while (frame := self._queue.get()) is not None:
                self._writer.write(frame)
        except BaseException as e:  # noqa: BLE001 - handed to close()
            self._error = e
            while self._queue.get() is not None:  # drain so write() never blocks forever
                pass
        finally:
            try:
                self._writer.close()
            except BaseException as e:  # noqa: BLE001
                self._error = self._error or e

    def write(self, frame: np.ndarray) -> None:
        self._queue.put(frame)

    def close(self) -> None:
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()
        if self._error is not None:
            raise DatasetError(f"video encoding failed: {self._error}") from self._error


def _parquet_bytes(table: pa.Table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd")
    return buf.getvalue()


def _vector_column(rows: list[np.ndarray], width: int) -> pa.FixedSizeListArray:
    flat = np.asarray(rows, dtype=np.float32).reshape(-1)
    return pa.FixedSizeListArray.from_arrays(pa.array(flat, pa.float32()), width)


class _Episode:
    """The episode being recorded: frame columns, video writers, image statistics."""

    def __init__(self, index: int, seed: int | None, source: str):
        self.index, self.seed, self.source = index, seed, source
        self.columns: dict[str, list[Any]] = {k: [] for k in (*VECTORS, APPLIED, *SCALARS)}
        self.videos: dict[str, Any] = {}
        self.image_stats: dict[str, list[np.ndarray]] = {}
        self.started = time.monotonic()

    def __len__(self) -> int:
        return len(self.columns["action"])


class DatasetWriter:
    """Appends episodes to the dataset at ``root`` (see module docstring)."""

    def __init__(self, root: str | Path, spec: DatasetSpec, resume: bool = False,
                 min_free_mb: float = 64.0):
        self.root = Path(root)
        self.spec = spec
        self.min_free_mb = min_free_mb
        self._episode: _Episode | None = None
        self._rows: list[dict[str, Any]] = []
        info = self.root / "meta" / "info.json"
        if info.exists():
            if not resume:
                raise DatasetError(f"{self.root} already holds a dataset; pass --resume to "
                                   f"append to it, or choose another --out")
            from robot_rl.data.reader import Dataset

            ds = Dataset(self.root)
            ds.check(spec)
            own = ds.require_spec("appending")
            # the columns stay the dataset's own (older ones lack the applied action)
            self.spec = spec = dataclasses.replace(spec, applied_action=own.applied_action)
            self._rows = ds.episodes
            ds.remove_uncommitted()
            self._write_meta()
        else:
            if self.root.exists() and any(p.name != INCOMPLETE for p in self.root.iterdir()):
                raise DatasetError(f"{self.root} exists and is not a dataset (no meta/info.json)"
                                   f"; choose an empty or new folder")
            self._check_writable()
            self._write_meta()
        # each new episode's files get a number no file has (see format.used_file_numbers)
        self._next_file = max([self.num_episodes - 1, *used_file_numbers(self.root)]) + 1

    # -- state -----------------------------------------------------------------------------

    @property
    def num_episodes(self) -> int:
        return len(self._rows)

    @property
    def total_frames(self) -> int:
        return sum(int(r["length"]) for r in self._rows)

    @property
    def recording(self) -> bool:
        return self._episode is not None

    @property
    def frames_in_episode(self) -> int:
        return 0 if self._episode is None else len(self._episode)

    # -- episodes --------------------------------------------------------------------------

    def begin_episode(self, seed: int | None = None, source: str = "") -> None:
        """Open the next episode (``seed``: the env seed its reset used, for replay;
        ``source``: what produced the actions). Refuses when the folder is not writable or
        the disk is nearly full, before anything is recorded."""
        if self._episode is not None:
            raise DatasetError("an episode is already open; save or discard it first")
        self._check_writable()
        ep = _Episode(self.num_episodes, seed, source)
        tmp = self.root / INCOMPLETE
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        if self.spec.cameras:
            for cam, _, _ in self.spec.cameras:
                ep.videos[cam] = _VideoThread(tmp / f"{cam}.mp4", self.spec.fps,
                                              self.spec.keyframe_interval)
                ep.image_stats[cam] = []
        self._episode = ep

    def add_frame(self, *, obs: np.ndarray, joint_pos: np.ndarray, joint_vel: np.ndarray,
                  action: np.ndarray, next_obs: np.ndarray, reward: float, cost: float,
                  terminated: bool, truncated: bool, success: bool, intervention: bool = False,
                  images: dict[str, np.ndarray] | None = None,
                  applied_action: np.ndarray | None = None) -> None:
        """One control step: the observation it acted on, the action commanded, the action
        applied after the shield (default: the command, for sources that only know what
        was sent, like a bag of commands), and what followed."""
        ep = self._episode
        if ep is None:
            raise DatasetError("no open episode: call begin_episode first")
        c = ep.columns
        for key, value, width in (("observation.state", obs, len(self.spec.obs_names)),
                                  ("observation.joint_pos", joint_pos,
                                   len(self.spec.joint_names)),
                                  ("observation.joint_vel", joint_vel,
                                   len(self.spec.joint_names)),
                                  ("action", action, len(self.spec.action_names)),
                                  (APPLIED, action if applied_action is None else
                                   applied_action, len(self.spec.action_names)),
                                  ("next.observation.state", next_obs,
                                   len(self.spec.obs_names))):
            v = np.asarray(value, dtype=np.float32).reshape(-1)
            if v.shape != (width,):
                raise DatasetError(f"{key} has {v.size} values, the dataset's features say "
                                   f"{width}")
            c[key].append(v)
        c["next.reward"].append(float(reward))
        c["next.cost"].append(float(cost))
        c["next.done"].append(bool(terminated or truncated))
        c["next.terminated"].append(bool(terminated))
        c["next.success"].append(bool(success))
        c["intervention"].append(bool(intervention))
        images = images or {}
        for cam, writer in ep.videos.items():
            if cam not in images:
                raise DatasetError(f"camera {cam!r} is in the dataset's features but this "
                                   f"frame has none")
            img = images[cam]
            writer.write(img)
            if len(ep) % _IMAGE_STATS_EVERY == 1:
                ep.image_stats[cam].append(img[::4, ::4].reshape(-1, 3))

    def discard_episode(self) -> None:
        """Drop the open episode (re-record)."""
        ep, self._episode = self._episode, None
        if ep is None:
            return
        for w in ep.videos.values():
            w.close()
        shutil.rmtree(self.root / INCOMPLETE, ignore_errors=True)

    def save_episode(self, success: bool | None = None) -> float:
        """Commit the open episode; returns the seconds it took. ``success`` labels the episode
        (default: its last frame's success flag: an episode succeeds when the task's test
        holds at its end, ``robot_rl.sim.tasks.base``)."""
        ep = self._episode
        if ep is None:
            raise DatasetError("no open episode to save")
        if len(ep) == 0:
            raise DatasetError("the episode has no frames; discard it instead")
        t0 = time.monotonic()
        number, start = self._next_file, self.total_frames
        for w in ep.videos.values():
            w.close()
        table = self._frame_table(ep, start)
        atomic_write_bytes(self.root / data_path(number), _parquet_bytes(table))
        for cam in ep.videos:
            commit_file(self.root / INCOMPLETE / f"{cam}.mp4",
                        self.root / video_path(number, cam))
        row = self._episode_row(ep, number, start, table, success)
        if self._rows:  # every row file the same columns and types (LeRobot concatenates them)
            row = _conform(row, self._rows[0])
        # then its row, the statistics, and info.json counting it: the commit point
        atomic_write_bytes(self.root / episode_path(number), _parquet_bytes(
            pa.Table.from_pylist([row])))
        self._rows.append(row)
        self._next_file = number + 1
        self._episode = None
        self._write_meta()
        shutil.rmtree(self.root / INCOMPLETE, ignore_errors=True)
        return time.monotonic() - t0

    def close(self) -> None:
        """Discard an episode still open (it was not saved)."""
        self.discard_episode()

    def __enter__(self) -> DatasetWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # -- internals -------------------------------------------------------------------------

    @property
    def _vectors(self) -> tuple[str, ...]:
        """The vector columns written (in this order)."""
        return (*VECTORS[:4], APPLIED, VECTORS[4]) if self.spec.applied_action else VECTORS

    def _check_writable(self) -> None:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            probe = self.root / ".write-test"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as e:
            raise DatasetError(f"cannot write to {self.root}: {e.strerror or e}") from None
        free_mb = shutil.disk_usage(self.root).free / 2 ** 20
        if free_mb < self.min_free_mb:
            raise DatasetError(f"only {free_mb:.0f} MB free on the disk of {self.root} (need "
                               f"{self.min_free_mb:.0f} MB to record an episode safely)")

    def _frame_table(self, ep: _Episode, start: int) -> pa.Table:
        n, c, spec = len(ep), ep.columns, self.spec
        cols: dict[str, pa.Array] = {}
        for key in self._vectors:
            cols[key] = _vector_column(c[key], len(c[key][0]))
        for key, dtype in SCALARS.items():
            cols[key] = pa.array(c[key], type=pa.bool_() if dtype == "bool" else pa.float32())
        frame = np.arange(n)
        cols["timestamp"] = pa.array((frame / spec.fps).astype(np.float32))
        cols["frame_index"] = pa.array(frame, pa.int64())
        cols["episode_index"] = pa.array(np.full(n, ep.index), pa.int64())
        cols["index"] = pa.array(start + frame, pa.int64())
        cols["task_index"] = pa.array(np.zeros(n, np.int64))
        return pa.table(cols)

    def _episode_row(self, ep: _Episode, number: int, start: int, table: pa.Table,
                     success: bool | None) -> dict[str, Any]:
        i, n = ep.index, len(ep)
        chunk, file = chunk_file(number)
        row: dict[str, Any] = {
            "episode_index": i, "tasks": [self.spec.task_text], "length": n,
            "data/chunk_index": chunk, "data/file_index": file,
            "dataset_from_index": start, "dataset_to_index": start + n,
        }
        for cam in ep.videos:
            key = IMAGE_PREFIX + cam
            row.update({f"videos/{key}/chunk_index": chunk, f"videos/{key}/file_index": file,
                        f"videos/{key}/from_timestamp": 0.0,
                        f"videos/{key}/to_timestamp": n / self.spec.fps})
        row["meta/episodes/chunk_index"], row["meta/episodes/file_index"] = chunk, file
        for key, stats in self._episode_stats(ep, table).items():
            for name, v in stats.items():
                row[f"stats/{key}/{name}"] = np.asarray(v).reshape(-1).tolist()
        c = ep.columns
        row.update({
            "robot_rl/seed": -1 if ep.seed is None else int(ep.seed),
            "robot_rl/success": (bool(c["next.success"][-1]) if success is None and
                                 c["next.success"] else bool(success)),
            "robot_rl/interventions": int(sum(c["intervention"])),
            "robot_rl/return": float(sum(c["next.reward"])),
            "robot_rl/cost": float(sum(c["next.cost"])),
            "robot_rl/source": ep.source,
            "robot_rl/recorded_s": time.monotonic() - ep.started,
        })
        return row

    def _episode_stats(self, ep: _Episode, table: pa.Table) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for key in (*self._vectors, *SCALARS, "timestamp", "frame_index", "episode_index",
                    "index", "task_index"):
            col = table.column(key)
            if pa.types.is_fixed_size_list(col.type):
                x = np.asarray(ep.columns[key], dtype=np.float64)
            else:
                x = col.to_numpy(zero_copy_only=False)
            s = feature_stats(x)
            if x.dtype.kind in "biu":  # min and max keep an integer or bool column's type
                s["min"], s["max"] = x.min(0, keepdims=True), x.max(0, keepdims=True)
            out[key] = s
        for cam, samples in ep.image_stats.items():
            px = np.concatenate(samples).astype(np.float64) / 255.0  # (P, 3) in [0, 1]
            s = feature_stats(px)  # per channel; LeRobot keeps them as (3, 1, 1)
            s["count"] = np.array([len(ep)])
            out[IMAGE_PREFIX + cam] = s
        return out

    def _write_meta(self) -> None:
        """stats.json, tasks.parquet and, last (the commit point), info.json from the
        committed episode rows."""
        spec, rows = self.spec, self._rows
        info = {
            "codebase_version": CODEBASE_VERSION, "robot_type": spec.robot_type,
            "total_episodes": len(rows), "total_frames": self.total_frames, "total_tasks": 1,
            "chunks_size": CHUNKS_SIZE, "data_files_size_in_mb": 100,
            "video_files_size_in_mb": 200, "fps": spec.lerobot_fps,
            "splits": {"train": f"0:{len(rows)}"}, "data_path": DATA_PATH,
            "video_path": VIDEO_PATH if spec.cameras else None,
            "features": spec.features(), "robot_rl": {"format": 1, **spec.to_json()},
        }
        meta = self.root / "meta"
        if rows:
            keys = sorted({k.split("/")[1] for k in rows[0] if k.startswith("stats/")})
            stats = {}
            for key in keys:
                # flat: LeRobot's rows hold image statistics as (3, 1, 1)
                parts = [{s: np.asarray(r[f"stats/{key}/{s}"], np.float64).reshape(-1)
                          for s in STATS if f"stats/{key}/{s}" in r} for r in rows]
                stats[key] = merge_stats(parts)
            for cam, _, _ in spec.cameras:  # LeRobot's image statistics shape (3, 1, 1)
                key = IMAGE_PREFIX + cam
                if key in stats:
                    stats[key] = {s: (v if s == "count" else v.reshape(3, 1, 1))
                                  for s, v in stats[key].items()}
            atomic_write_json(meta / "stats.json", to_json(stats))
        if not (meta / "tasks.parquet").exists():
            atomic_write_bytes(meta / "tasks.parquet", _parquet_bytes(_tasks_table(
                spec.task_text)))
        atomic_write_json(meta / "info.json", info)


def _conform(row: dict[str, Any], like: dict[str, Any]) -> dict[str, Any]:
    """``row`` with the columns of ``like`` and their types: a dataset recorded before a
    column or statistic existed (quantiles, integer min/max) keeps one schema when appended
    to, so readers that concatenate the episode files (LeRobot's) still load it."""
    def cast(v: Any, ref: Any) -> Any:
        if isinstance(ref, list) and isinstance(v, list):
            # LeRobot nests image statistics as (3, 1, 1): nest ours the same way
            return [cast(x if isinstance(x, list) or not isinstance(ref[0], list) else [x],
                         ref[0]) for x in v] if ref else v
        for t in (bool, int, float):  # bool before int: a bool is an int
            if isinstance(ref, t) and not isinstance(v, list):
                return t(v)
        return v

    return {k: cast(row[k], ref) if k in row else None for k, ref in like.items()}


def _tasks_table(text: str) -> pa.Table:
    """meta/tasks.parquet as pandas writes it (LeRobot reads the task text as the index)."""
    table = pa.table({"task_index": pa.array([0], pa.int64()), "task": pa.array([text])})
    pandas_meta = {
        "index_columns": ["task"], "column_indexes": [],
        "columns": [
            {"name": "task_index", "field_name": "task_index", "pandas_type": "int64",
             "numpy_type": "int64", "metadata": None},
            {"name": "task", "field_name": "task", "pandas_type": "unicode",
             "numpy_type": "object", "metadata": None}],
        "creator": {"library": "pyarrow", "version": pa.__version__},
        "pandas_version": "2.2.0"}
    return table.replace_schema_metadata({"pandas": json.dumps(pandas_meta)})
