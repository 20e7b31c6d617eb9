"""What a dataset means when its info.json has no ``robot_rl`` block.

    spec, notes = read_spec(root, info)   # (DatasetSpec or None, what was recovered or lost)

Three cases:

- **Ours, intact**: the block is there; no notes.
- **Ours, edited by LeRobot**: its edit tools (delete, split, merge episodes) write a new
  info.json from LeRobot's own fields, dropping our block, and new episode rows without our
  ``robot_rl/*`` columns, but they copy the feature entries and the frame columns. The task
  and action space are kept in the ``action`` feature's entry
  (``format.ACTION_MEANING``), the observation, action and joint names in the features, the
  task text in tasks.parquet, so the spec is rebuilt from those; lost are the simulated env's
  making (randomization, episode length: such a dataset cannot be replayed in simulation)
  and, per episode, the reset seed, the source and the recording time. Success and
  interventions are in the frames.
- **Foreign** (written by LeRobot for another robot, or edited before robot_rl kept the
  action's meaning in its feature entry): no spec. It can be read, validated against its
  own features and learned from by ``robot-rl bc`` (state -> action), or mapped onto one of
  our tasks with ``robot-rl data import``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from robot_rl.data.format import ACTION_MEANING, IMAGE_PREFIX, DatasetError, DatasetSpec

OUR_FRAME_FEATURES = ("observation.state", "observation.joint_pos", "observation.joint_vel",
                      "action", "next.observation.state")
"""The vector features a robot_rl recording always has."""


def read_spec(root: Path, info: dict[str, Any]) -> tuple[DatasetSpec | None, list[str]]:
    """The dataset's spec (None for a foreign dataset) and notes on what was recovered or
    lost (empty for an intact robot_rl dataset)."""
    if "robot_rl" in info:
        return DatasetSpec.from_json(info["robot_rl"]), []
    feats: dict[str, Any] = info.get("features") or {}
    meaning = (feats.get("action") or {}).get(ACTION_MEANING)
    if not isinstance(meaning, dict) or any(k not in feats for k in OUR_FRAME_FEATURES):
        use = (f"`robot-rl data import {root} --task TASK --out DIR` maps a real arm's "
               f"joint data onto a task, `robot-rl bc --demos {root}` learns state -> action "
               f"from it as it is")
        if all(k in feats for k in OUR_FRAME_FEATURES):
            return None, [f"its columns are robot_rl's, but info.json has no robot_rl block "
                          f"and its action feature does not say the task and action space "
                          f"(edited by a LeRobot tool before robot_rl kept them there): they "
                          f"cannot be recovered, nor how the env was made; {use}"]
        return None, [f"not a robot_rl recording (info.json has no robot_rl block): {use}"]
    texts = task_texts(root)
    try:
        spec = DatasetSpec(
            fps=float(info["fps"]), robot_type=str(info.get("robot_type") or ""),
            task=str(meaning["task"]), task_text=texts[0] if texts else str(meaning["task"]),
            obs_names=feature_names(feats, "observation.state"),
            action_names=feature_names(feats, "action"),
            joint_names=feature_names(feats, "observation.joint_pos"),
            action_space=dict(meaning["action_space"]), cameras=cameras(feats), env={},
            applied_action="action.applied" in feats,
            keyframe_interval=recorded_keyframe_interval(feats))
    except (KeyError, TypeError, ValueError) as e:
        raise DatasetError(f"{root}: info.json lost its robot_rl block and what is left to "
                           f"rebuild it from is malformed: {e!r}") from None
    return spec, [
        "info.json has no robot_rl block (rewritten by a LeRobot edit tool?): the task, "
        "action space and observation layout were recovered from its features; lost: how "
        "the simulated env was made (randomization, episode length), so its episodes cannot "
        "be replayed in simulation"]


def lost_episode_columns(rows: list[dict[str, Any]]) -> list[str]:
    """A note if the episode rows lack our per-episode columns (a LeRobot edit tool
    rewrote them); [] otherwise."""
    if not rows or any(k.startswith("robot_rl/") for k in rows[0]):
        return []
    return ["the episode rows have no robot_rl columns (rewritten by a LeRobot edit tool?): "
            "success and interventions are counted from the frames; lost: each episode's "
            "reset seed, source (teleop device, policy) and recording time"]


def cameras(features: dict[str, Any]) -> tuple[tuple[str, int, int], ...]:
    """(name, height, width) of each video feature; a name is the key less
    ``observation.images.`` where it has that prefix, else the whole key."""
    out = []
    for key, f in features.items():
        if f.get("dtype") != "video":
            continue
        h, w = _video_size(f)
        out.append((key[len(IMAGE_PREFIX):] if key.startswith(IMAGE_PREFIX) else key, h, w))
    return tuple(out)


def _video_size(feature: dict[str, Any]) -> tuple[int, int]:
    """(height, width) of a video feature: from its names where they say which axis is
    which (LeRobot writes [h, w, c] with names height, width, channels), else [h, w, c]."""
    shape, names = list(feature.get("shape") or []), feature.get("names")
    if isinstance(names, list) and "height" in names and "width" in names:
        return int(shape[names.index("height")]), int(shape[names.index("width")])
    if len(shape) == 3 and shape[0] in (1, 3, 4):  # channels first
        return int(shape[1]), int(shape[2])
    return int(shape[0]), int(shape[1])


def task_texts(root: Path) -> list[str]:
    """The task strings of meta/tasks.parquet, by task_index ([] if it is missing)."""
    path = root / "meta" / "tasks.parquet"
    if not path.is_file():
        return []
    try:
        t = pq.read_table(path)
    except (pa.ArrowInvalid, OSError):
        return []
    # ours names the column; LeRobot's edit tools write it as pandas' unnamed index
    col = "task" if "task" in t.column_names else next(
        (n for n in t.column_names if n.startswith("__index_level_")), None)
    if col is None:
        return []
    texts = t.column(col).to_pylist()
    if "task_index" in t.column_names:
        order = t.column("task_index").to_pylist()
        texts = [s for _, s in sorted(zip(order, texts, strict=True))]
    return [str(s) for s in texts]


def feature_names(feats: dict[str, Any], key: str) -> tuple[str, ...]:
    """One name per element of a vector feature (``key.i`` where info.json names none)."""
    f = feats[key]
    names = f.get("names")
    if isinstance(names, dict):  # LeRobot's older {"motors": [...]} form
        names = next(iter(names.values()), None)
    width = int((f.get("shape") or [0])[0])
    if not isinstance(names, list) or len(names) != width:
        return tuple(f"{key}.{i}" for i in range(width))
    return tuple(str(n) for n in names)


def recorded_keyframe_interval(feats: dict[str, Any]) -> int | None:
    """The videos' keyframe interval as info.json records it (``video.g`` of the first
    video feature that has one); None where none does."""
    for f in feats.values():
        g = (f.get("info") or {}).get("video.g") if f.get("dtype") == "video" else None
        if g is not None:
            return int(g)
    return None
