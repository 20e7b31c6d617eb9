"""Dataset: read a recorded dataset (committed episodes only), check it, decode its videos.

    ds = Dataset("data/push")
    ds.check(spec)                      # refuses a different robot / task / action space
    f = ds.frames()                     # dict of columns over all episodes: (N, ...) numpy
    ep = ds.episode(3)                  # the same for one episode
    problems = ds.validate()            # [] when every file agrees with the metadata

Any LeRobotDataset v3.0 opens: one written by LeRobot for another robot has no ``spec``
(None; ``ds.features`` and ``ds.cameras`` still describe it), and one of ours whose
``robot_rl`` block a LeRobot edit tool dropped has its spec rebuilt; ``ds.notes`` says which,
and what was lost (``robot_rl.data.recover``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from robot_rl.data.format import (
    CODEBASE_VERSION,
    DATA_PATH,
    IMAGE_PREFIX,
    INCOMPLETE,
    VIDEO_PATH,
    DatasetError,
    DatasetSpec,
    video_path,
)
from robot_rl.data.recover import cameras, lost_episode_columns, read_spec

REQUIRED_EPISODE_COLUMNS = ("episode_index", "tasks", "length", "data/chunk_index",
                            "data/file_index", "dataset_from_index", "dataset_to_index")


class Dataset:
    """A dataset folder (see module docstring)."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        info_path = self.root / "meta" / "info.json"
        if not self.root.exists():
            raise DatasetError(f"{self.root} does not exist (a dataset is a folder that "
                               f"robot-rl record or data import wrote)")
        if not info_path.is_file():
            raise DatasetError(f"{self.root} is not a dataset: no meta/info.json")
        try:
            self.info: dict[str, Any] = json.loads(info_path.read_text())
        except json.JSONDecodeError as e:
            raise DatasetError(f"{info_path} is not valid JSON: {e}") from None
        version = self.info.get("codebase_version")
        if version != CODEBASE_VERSION:
            raise DatasetError(f"{info_path}: codebase_version is {version!r}; this reader "
                               f"reads LeRobot {CODEBASE_VERSION} datasets")
        self.spec: DatasetSpec | None
        """What the dataset holds (task, action space, layout); None for a dataset not
        recorded by robot_rl (see ``robot_rl.data.recover``)."""
        self.spec, self.notes = read_spec(self.root, self.info)
        """``notes``: what was recovered or lost where info.json has no robot_rl block."""
        self._cached: tuple[Path, pa.Table] | None = None  # the data file read last
        self.episodes = self._read_episodes()
        if self.spec is not None:
            self.notes += lost_episode_columns(self.episodes)

    # -- metadata --------------------------------------------------------------------------

    def _read_episodes(self) -> list[dict[str, Any]]:
        """The committed episodes' rows: info.json is the commit point (written last), so
        an episode whose row exists but which info.json does not count yet (a crash inside
        its save) is not committed; LeRobot, which trusts info.json, sees the same."""
        rows: list[dict[str, Any]] = []
        self._episode_schemas: dict[Path, pa.Schema] = {}
        self._row_files: dict[int, Path] = {}
        folder = self.root / "meta" / "episodes"
        for path in sorted(folder.glob("chunk-*/file-*.parquet")):
            try:
                table = pq.read_table(path)
            except (pa.ArrowInvalid, OSError) as e:
                raise DatasetError(f"episode metadata {path} is unreadable: {e}") from None
            self._episode_schemas[path] = table.schema
            for r in table.to_pylist():
                self._row_files[int(r.get("episode_index", -1))] = path
                rows.append(r)
        for r in rows:
            missing = [c for c in REQUIRED_EPISODE_COLUMNS if c not in r]
            if missing:
                raise DatasetError(f"episode metadata lacks {missing} (episode "
                                   f"{r.get('episode_index')})")
        total = self.info.get("total_episodes")
        if isinstance(total, int):
            rows = [r for r in rows if int(r["episode_index"]) < total]
        committed = {p for i, p in self._row_files.items() if not isinstance(total, int)
                     or i < total}
        self._episode_schemas = {p: s for p, s in self._episode_schemas.items()
                                 if p in committed}
        rows.sort(key=lambda r: r["episode_index"])
        return rows

    @property
    def num_episodes(self) -> int:
        return len(self.episodes)

    @property
    def num_frames(self) -> int:
        return sum(int(r["length"]) for r in self.episodes)

    @property
    def fps(self) -> float:
        return self.spec.fps if self.spec is not None else float(self.info.get("fps") or 0)

    @property
    def features(self) -> dict[str, dict[str, Any]]:
        """info.json's features (LeRobot's: dtype, shape, names per column or video)."""
        return dict(self.info.get("features") or {})

    @property
    def cameras(self) -> tuple[tuple[str, int, int], ...]:
        """(name, height, width) of each video (the name less ``observation.images.``)."""
        return self.spec.cameras if self.spec is not None else cameras(self.features)

    def require_spec(self, use: str) -> DatasetSpec:
        """The spec, or a DatasetError saying that ``use`` needs a robot_rl dataset."""
        if self.spec is None:
            raise DatasetError(f"{use} needs a dataset recorded for one of our tasks; "
                               f"{self.root} was not: {self.notes[0]}")
        return self.spec

    def check(self, spec: DatasetSpec) -> None:
        """Refuse (DatasetError naming the field) when ``spec`` differs from this dataset's."""
        why = self.require_spec(f"a {spec.task} run").mismatch(spec)
        if why is not None:
            raise DatasetError(f"{self.root} does not match: {why}")

    # -- frames ----------------------------------------------------------------------------

    def episode(self, index: int) -> dict[str, np.ndarray]:
        """Columns of one episode, by its episode_index."""
        return _columns(self._table(self._row(index)))

    def frames(self, episodes: list[int] | None = None) -> dict[str, np.ndarray]:
        """Columns of the given episodes (default all), concatenated in episode order."""
        rows = self.episodes if episodes is None else \
            [r for r in self.episodes if r["episode_index"] in set(episodes)]
        if not rows:
            raise DatasetError(f"{self.root} has no episodes to read")
        return _columns(pa.concat_tables([self._table(r) for r in rows]))

    # where an episode lives: its row's file indices (ours: one episode per file; LeRobot's
    # writer and edit tools: many episodes per file, found by episode_index and timestamps)

    def _row(self, index: int) -> dict[str, Any]:
        for r in self.episodes:
            if r["episode_index"] == index:
                return r
        raise DatasetError(f"{self.root} has no episode {index} (it has "
                           f"{self.num_episodes})")

    def _data_file(self, row: dict[str, Any]) -> Path:
        template = self.info.get("data_path") or DATA_PATH
        return self.root / template.format(chunk_index=int(row["data/chunk_index"]),
                                           file_index=int(row["data/file_index"]))

    def _video_file(self, row: dict[str, Any], camera: str) -> tuple[Path, float]:
        """An episode's video file for ``camera`` and the episode's start time in it."""
        key = IMAGE_PREFIX + camera
        if key not in self.features and camera in self.features:  # a key of another name
            key = camera
        if f"videos/{key}/chunk_index" not in row:
            return self.root / video_path(int(row["episode_index"]), camera), 0.0
        template = self.info.get("video_path") or VIDEO_PATH
        path = self.root / template.format(
            video_key=key, chunk_index=int(row[f"videos/{key}/chunk_index"]),
            file_index=int(row[f"videos/{key}/file_index"]))
        return path, float(row.get(f"videos/{key}/from_timestamp") or 0.0)

    def _table(self, row: dict[str, Any]) -> pa.Table:
        path = self._data_file(row)
        if self._cached is None or self._cached[0] != path:
            try:
                self._cached = (path, pq.read_table(path))
            except (FileNotFoundError, pa.ArrowInvalid, OSError) as e:
                raise DatasetError(f"episode {row['episode_index']}'s frames {path} are "
                                   f"unreadable: {e}") from None
        table = self._cached[1]
        if "episode_index" not in table.column_names:
            raise DatasetError(f"{path} has no episode_index column")
        ep = table.column("episode_index").to_numpy()
        if (ep == row["episode_index"]).all():
            return table
        return table.take(np.flatnonzero(ep == row["episode_index"]))

    def video(self, index: int, camera: str) -> np.ndarray:
        """Decoded RGB frames (T, H, W, 3) uint8 of one episode's camera."""
        return self.video_frames(index, camera, np.arange(int(self._row(index)["length"])))

    def video_frames(self, index: int, camera: str, frames: list[int] | np.ndarray
                     ) -> np.ndarray:
        """RGB frames (len(frames), H, W, 3) uint8 of one episode's camera at the given frame
        indices, in the order given: each is found by seeking to the keyframe before it and
        decoding from there (frames sorted, so one pass serves several), which costs up to
        the recording's keyframe interval in decoded frames per request, not the episode."""
        import av

        want = np.asarray(frames, dtype=np.int64).reshape(-1)
        row = self._row(index)
        n = int(row["length"])
        if want.size and (want.min() < 0 or want.max() >= n):
            raise DatasetError(f"episode {index} has frames 0..{n - 1}; asked for "
                               f"{want.min()}..{want.max()}")
        path, start = self._video_file(row, camera)
        if not path.is_file():
            raise DatasetError(f"no video {path}")
        fps, gop = self.fps, self.keyframe_interval(camera)
        out: dict[int, np.ndarray] = {}
        with av.open(str(path)) as c:
            stream = c.streams.video[0]
            base = float(stream.time_base or 0) or 1.0 / 90_000  # mp4 always sets one
            pending = sorted(set(want.tolist()))
            while pending:
                c.seek(int((start + pending[0] / fps) / base), stream=stream, backward=True)
                for frame in c.decode(stream):
                    k = round(((frame.pts or 0) * base - start) * fps)
                    if k < pending[0]:
                        continue
                    if k > pending[0]:
                        raise DatasetError(f"{path}: frame {pending[0]} is missing")
                    out[k] = frame.to_ndarray(format="rgb24")
                    pending.pop(0)
                    # decode on to a frame in the same group of pictures, seek to a later one
                    if not pending or pending[0] - k > gop:
                        break
                else:
                    raise DatasetError(f"{path} ends before frame {pending[0]}")
        if not want.size:
            return np.zeros((0, 0, 0, 3), np.uint8)
        return np.stack([out[int(k)] for k in want])

    def keyframe_interval(self, camera: str) -> int:
        """Frames between a camera's keyframes as recorded (x264's default, 250, for
        recordings that predate the setting)."""
        feats = self.features
        feat = feats.get(IMAGE_PREFIX + camera) or feats.get(camera) or {}
        return int(feat.get("info", {}).get("video.g") or 250)

    # -- checks ----------------------------------------------------------------------------

    def validate(self, decode_videos: bool = True) -> list[str]:
        """Every disagreement between the files and the metadata, as messages ([] = valid)."""
        problems: list[str] = []
        feats = self.features
        want = self.spec.features() if self.spec is not None else feats
        for key, f in want.items():
            if key not in feats:
                problems.append(f"info.json features lack {key!r}")
            elif feats[key].get("shape") != f["shape"]:
                problems.append(f"info.json feature {key!r} has shape {feats[key].get('shape')}"
                                f", expected {f['shape']}")
        if (self.info.get("total_episodes"), self.info.get("total_frames")) != (
                self.num_episodes, self.num_frames):
            problems.append(f"info.json counts {self.info.get('total_episodes')} episodes and "
                            f"{self.info.get('total_frames')} frames, the episode rows it "
                            f"counts are {self.num_episodes} with {self.num_frames} frames "
                            f"(episode rows deleted, or info.json edited?)")
        expect_from = 0
        for pos, r in enumerate(self.episodes):
            i = int(r["episode_index"])
            if i != pos:
                problems.append(f"episode indices are not 0..{self.num_episodes - 1}: found {i}"
                                f" at position {pos}")
            n = int(r["length"])
            if (r["dataset_from_index"], r["dataset_to_index"]) != (expect_from,
                                                                    expect_from + n):
                problems.append(f"episode {i}: dataset index range "
                                f"[{r['dataset_from_index']}, {r['dataset_to_index']}) should "
                                f"be [{expect_from}, {expect_from + n})")
            expect_from += n
            try:
                table = self._table(r)
            except DatasetError as e:
                problems.append(str(e))
                continue
            problems += _check_frames(table, i, n, int(r["dataset_from_index"]), want)
            for cam, h, w in self.cameras:
                path, _ = self._video_file(r, cam)
                if not path.is_file():
                    problems.append(f"episode {i}: video {path} is missing")
                elif decode_videos:
                    try:
                        v = self.video(i, cam)
                    except Exception as e:  # noqa: BLE001 - av raises many kinds
                        problems.append(f"episode {i}: video {path} does not decode: {e}")
                        continue
                    if v.shape[0] != n or v.shape[1:3] != (h, w):
                        problems.append(f"episode {i}: video {path} has {v.shape[0]} frames "
                                        f"of {v.shape[1:3]}, expected {n} of {(h, w)}")
        problems += self._check_episode_schemas()
        problems += _check_lerobot_info(self.info)
        if not (self.root / "meta" / "tasks.parquet").is_file():
            problems.append("meta/tasks.parquet is missing")
        if self.num_episodes and not (self.root / "meta" / "stats.json").is_file():
            problems.append("meta/stats.json is missing")
        return problems

    def _check_episode_schemas(self) -> list[str]:
        """The episode files must agree on columns and types: LeRobot reads them as one
        table and fails on any difference (e.g. after episodes written by another tool)."""
        problems: list[str] = []
        items = list(self._episode_schemas.items())
        if not items:
            return problems
        (first, ref), where = items[0], self.root / "meta" / "episodes"
        for path, schema in items[1:]:
            if schema.equals(ref):
                continue
            a, b = set(ref.names), set(schema.names)
            what = []
            if b - a:
                what.append(f"has {_names(b - a)}")
            if a - b:
                what.append(f"lacks {_names(a - b)}")
            typed = [n for n in a & b if not schema.field(n).type.equals(ref.field(n).type)]
            if typed:
                what.append(f"types differ in {_names(set(typed))}")
            problems.append(f"episode metadata {path.relative_to(where)} does not match "
                            f"{first.relative_to(where)}: {'; '.join(what) or 'schema order'} "
                            f"(LeRobot cannot load episode files that differ)")
        return problems

    def uncommitted(self) -> list[Path]:
        """Files of episodes that never committed (a crash while recording or saving):
        frames, videos and episode rows that info.json does not count, and the open
        episode's folder."""
        committed: set[Path] = set()
        for r in self.episodes:
            committed |= {self._data_file(r), self._row_files[int(r["episode_index"])],
                          *(self._video_file(r, c)[0] for c, _, _ in self.cameras)}
        found = [p for pattern in ("data/chunk-*/file-*.parquet",
                                   "videos/*/chunk-*/file-*.mp4",
                                   "meta/episodes/chunk-*/file-*.parquet",
                                   "**/.*.tmp")  # a write a kill cut short
                 for p in self.root.glob(pattern) if p not in committed]
        tmp = self.root / INCOMPLETE
        if tmp.exists():
            found.append(tmp)
        return sorted(found)

    def remove_uncommitted(self) -> list[Path]:
        """Delete what ``uncommitted`` lists; returns it."""
        found = self.uncommitted()
        for p in found:
            if p.is_dir():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)
        return found


def _names(names: set[str], most: int = 4) -> str:
    shown = sorted(names)[:most]
    return ", ".join(shown) + (f" and {len(names) - most} more" if len(names) > most else "")


def _check_lerobot_info(info: dict[str, Any]) -> list[str]:
    """Fields of info.json whose type LeRobot's loader relies on."""
    problems = []
    for key in ("fps", "total_episodes", "total_frames", "total_tasks", "chunks_size"):
        if not isinstance(info.get(key), int) or isinstance(info.get(key), bool):
            problems.append(f"info.json {key} is {info.get(key)!r}: LeRobot expects an int")
    return problems


def _is_list(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t)


_ARROW_NAME = {"float32": "float", "float64": "double", "string": "string"}
"""How pyarrow prints a feature dtype whose name differs from LeRobot's."""


def _columns(table: pa.Table) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for name in table.column_names:
        col = table.column(name).combine_chunks()
        if pa.types.is_fixed_size_list(col.type):
            width = col.type.list_size
            out[name] = col.flatten().to_numpy(zero_copy_only=False).reshape(-1, width)
        elif _is_list(col.type):  # LeRobot's list<float>: every row the same length
            lengths = pc.list_value_length(col).to_numpy(zero_copy_only=False)
            if len(lengths) and (lengths != lengths[0]).any():
                raise DatasetError(f"column {name!r} holds lists of different lengths")
            width = int(lengths[0]) if len(lengths) else 0
            out[name] = col.flatten().to_numpy(zero_copy_only=False).reshape(-1, width)
        else:
            out[name] = col.to_numpy(zero_copy_only=False)
    return out


def _check_frames(table: pa.Table, i: int, n: int, start: int,
                  features: dict[str, dict[str, Any]]) -> list[str]:
    problems = []
    if table.num_rows != n:
        problems.append(f"episode {i}: {table.num_rows} frames on disk, its row says {n}")
    for key, f in features.items():
        if f.get("dtype") in ("video", "image"):  # videos: checked by decoding them
            continue
        if len(f.get("shape") or [1]) > 1:  # LeRobot's multi-dimensional arrays: kept as is
            if key not in table.column_names:
                problems.append(f"episode {i}: column {key!r} is missing")
            continue
        if key not in table.column_names:
            problems.append(f"episode {i}: column {key!r} is missing")
            continue
        t = table.schema.field(key).type
        if pa.types.is_fixed_size_list(t):
            if [t.list_size] != f["shape"]:
                problems.append(f"episode {i}: column {key!r} has width {t.list_size}, "
                                f"expected {f['shape'][0]}")
        elif _is_list(t):
            lengths = pc.list_value_length(table.column(key)).to_numpy(zero_copy_only=False)
            if (lengths != f["shape"][0]).any():
                problems.append(f"episode {i}: column {key!r} has lists of length "
                                f"{sorted(set(lengths.tolist()))[:3]}, expected "
                                f"{f['shape'][0]}")
        elif f["shape"] != [1] or str(t) not in (f["dtype"], _ARROW_NAME.get(f["dtype"])):
            problems.append(f"episode {i}: column {key!r} has type {t}, expected {f['dtype']}")
    missing = [k for k in ("frame_index", "index", "episode_index")
               if k not in table.column_names]
    if missing:  # LeRobot's own columns, declared or not
        problems.append(f"episode {i}: columns {missing} are missing")
    if problems:
        return problems
    cols = _columns(table)
    if not np.array_equal(cols["frame_index"], np.arange(table.num_rows)):
        problems.append(f"episode {i}: frame_index is not 0..{table.num_rows - 1}")
    if not np.array_equal(cols["index"], start + np.arange(table.num_rows)):
        problems.append(f"episode {i}: index does not continue from {start}")
    if not (cols["episode_index"] == i).all():
        problems.append(f"episode {i}: episode_index column disagrees")
    for key, f in features.items():
        if not str(f.get("dtype")).startswith("float") or key not in cols or key == "timestamp":
            continue
        if not np.isfinite(np.asarray(cols[key], dtype=np.float64)).all():
            problems.append(f"episode {i}: {key} holds NaN or inf")
    return problems
