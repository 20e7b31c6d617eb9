"""Datasets in Rerun (``robot-rl data view``): every frame on two timelines, entity by entity.

    rec = rerun_recording("robot-rl data view")          # rerun-sdk (the ``view`` extra)
    rec.save("push.rrd")
    frames = log_dataset(rec, Dataset("data/push"), episodes=[0, 1])

Timelines: ``frame`` (the dataset's global frame ``index``) and ``time`` (the episodes laid
end to end: each frame's timestamp plus the length of the episodes logged before it, so the
axis only goes forward). Entities, one scalar series each:

    episode                         the frame's episode index
    joint_pos/{joint}, joint_vel/{joint}    the measured joint state [rad, rad/s]
    action/{name}                   the commanded action (policy, person or expert)
    action_applied/{name}           what the shield's action layers let through
    reward, cost                    the step's reward and safety cost
    success, done, intervention     0/1 flags
    cameras/{camera}                the camera's frames (JPEG-compressed images)
    reward_terms/{name}, cost_terms/{name}, safety/{layer}
                                    what the dataset does not store, from a replay of the
                                    episode in simulation (``extra``; recordings made in sim)

Scalars go in with ``send_columns`` (one call per entity and episode); camera frames one
image per frame.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from robot_rl.data.reader import Dataset
from robot_rl.errors import ConfigError
from robot_rl.sim.rerun_scene import GRPC_PORT, WEB_PORT, has_display, require_rerun, serve_web

SCALAR_COLUMNS = {"reward": "next.reward", "cost": "next.cost", "success": "next.success",
                  "done": "next.done", "intervention": "intervention"}
"""Entity -> dataset column of the per-frame scalars."""
JPEG_QUALITY = 85


def rerun_recording(application: str) -> Any:
    """A new Rerun recording stream of ``application`` (not the global one)."""
    rr = require_rerun()
    return rr.RecordingStream(application)


def entity_names(ds: Dataset) -> dict[str, list[str]]:
    """Per vector column, the names of its elements (from the dataset's features)."""
    out = {}
    for key in ("observation.joint_pos", "observation.joint_vel", "action", "action.applied"):
        feature = ds.features.get(key)
        if feature is None:
            continue
        names = feature.get("names")
        if isinstance(names, dict):  # LeRobot's {"motors": [...]} form
            names = next(iter(names.values()))
        width = int(feature["shape"][0])
        out[key] = [str(n) for n in names] if names and len(names) == width else \
            [str(i) for i in range(width)]
    return out


VECTORS = {"observation.joint_pos": "joint_pos", "observation.joint_vel": "joint_vel",
           "action": "action", "action.applied": "action_applied"}


def log_dataset(rec: Any, ds: Dataset, episodes: Sequence[int] | None = None,
                cameras: bool = True, progress: Any = None,
                extra: Callable[[int], dict[str, np.ndarray]] | None = None) -> int:
    """Log ``episodes`` (default all) of ``ds`` into ``rec``; returns the frames logged.
    ``progress(done, total)`` is called after each episode; ``extra(episode)`` gives more
    per-frame series of an episode ({entity: (n,) values}, e.g. a replay's reward and cost
    terms and shield flags), logged on the same timelines."""
    rr = require_rerun()
    chosen = list(range(ds.num_episodes)) if episodes is None else list(episodes)
    for e in chosen:
        if not 0 <= e < ds.num_episodes:
            raise ConfigError(f"{ds.root} has episodes 0..{ds.num_episodes - 1}, not {e}")
    names = entity_names(ds)
    fps = ds.fps or 1.0
    offset, frames = 0.0, 0
    for k, e in enumerate(chosen):
        cols = ds.episode(e)
        n = len(cols["index"])
        stamps = np.asarray(cols["timestamp"], dtype=np.float64)
        t = offset + stamps - stamps[0]
        indexes = [rr.TimeColumn("frame", sequence=np.asarray(cols["index"], np.int64)),
                   rr.TimeColumn("time", duration=t)]
        rec.send_columns("episode", indexes=indexes,
                         columns=rr.Scalars.columns(scalars=np.full(n, float(e))))
        for key, prefix in VECTORS.items():
            if key not in cols:
                continue
            values = np.asarray(cols[key], dtype=np.float64).reshape(n, -1)
            for j, name in enumerate(names[key]):
                rec.send_columns(f"{prefix}/{name}", indexes=indexes,
                                 columns=rr.Scalars.columns(scalars=values[:, j]))
        for entity, key in SCALAR_COLUMNS.items():
            if key in cols:
                rec.send_columns(entity, indexes=indexes, columns=rr.Scalars.columns(
                    scalars=np.asarray(cols[key], dtype=np.float64)))
        for entity, values in (extra(e) if extra is not None else {}).items():
            if len(values) != n:
                raise ConfigError(f"episode {e}: {entity} has {len(values)} values for {n} "
                                  f"frames")
            rec.send_columns(entity, indexes=indexes, columns=rr.Scalars.columns(
                scalars=np.asarray(values, dtype=np.float64)))
        if cameras:
            for camera, _, _ in ds.cameras:
                video = ds.video(e, camera)
                for i in range(min(n, len(video))):
                    rec.set_time("frame", sequence=int(cols["index"][i]))
                    rec.set_time("time", duration=float(t[i]))
                    rec.log(f"cameras/{camera}",
                            rr.Image(video[i]).compress(jpeg_quality=JPEG_QUALITY))
                rec.reset_time()
        offset = float(t[-1]) + 1.0 / fps
        frames += n
        if progress is not None:
            progress(k + 1, len(chosen))
    return frames



def show(rec: Any, web_port: int = WEB_PORT, grpc_port: int = GRPC_PORT,
         say: Any = None) -> None:
    """Send ``rec`` to a viewer as it is logged: Rerun's own viewer where there is a display,
    else its web viewer, served on ``web_port`` (reading the recording on ``grpc_port``)."""
    say = say or (lambda _m: None)
    if has_display():
        rec.spawn(port=grpc_port)
        say("sent to Rerun's viewer")
        return
    uri = serve_web(rec, web_port, grpc_port)
    say(f"no display: Rerun's web viewer is at http://localhost:{web_port} (reading {uri}); "
        f"over SSH, forward both ports: ssh -L {web_port}:localhost:{web_port} "
        f"-L {grpc_port}:localhost:{grpc_port} HOST")


class EnvRerunLog:
    """Log one env of a ``BatchedEnv`` into Rerun as it is stepped (``robot-rl eval
    --rerun``): ``watch()`` wraps that env instance's ``step``. Each step: the joint state
    it started from, the commanded and the applied action, reward and cost with their
    terms, success, and each shield layer's intervention flag (``safety/{layer}``), on the
    ``step`` and ``time`` timelines; ``episode`` counts the env's episodes. Steps are
    buffered and sent as columns at each of the env's episode ends (and at ``close``)."""

    def __init__(self, rec: Any, env: Any, index: int = 0):
        if not 0 <= index < env.num_envs:
            raise ConfigError(f"log env {index} of {env.num_envs}")
        self.rr = require_rerun()
        self.rec, self.env, self.index = rec, env, index
        self.steps = 0
        self.episode = 0
        self._rows: dict[str, list[float]] = {}
        self._t: list[int] = []
        self.joints = [str(j) for j in env.robot.joint_names]

    def watch(self) -> None:
        """Log every ``step`` of the env (this instance only)."""
        step = self.env.step

        def logged_step(action: Any, *args: Any, **kwargs: Any) -> Any:
            i = self.index
            q = self.env.state.joint_pos[i].detach().cpu().numpy().astype(np.float64)
            qd = self.env.state.joint_vel[i].detach().cpu().numpy().astype(np.float64)
            out = step(action, *args, **kwargs)
            _, reward, cost, terminated, truncated, info = out
            row = self._row(q, qd, action, reward, cost, info)
            self._add(row)
            if bool(terminated[i] | truncated[i]):
                self.flush()
                self.episode += 1
            return out

        self.env.step = logged_step

    def _row(self, q: np.ndarray, qd: np.ndarray, action: Any, reward: Any, cost: Any,
             info: dict) -> dict[str, float]:
        i = self.index

        def val(x: Any) -> float:
            return float(x[i])

        row = {"episode": float(self.episode), "reward": val(reward), "cost": val(cost),
               "success": val(info["success"])}
        row.update({f"joint_pos/{j}": float(v) for j, v in zip(self.joints, q, strict=True)})
        row.update({f"joint_vel/{j}": float(v) for j, v in zip(self.joints, qd, strict=True)})
        a = np.asarray(action[i].detach().cpu() if hasattr(action, "detach") else action[i])
        row.update({f"action/{k}": float(v) for k, v in enumerate(a)})
        applied = info["applied_action"][i].detach().cpu().numpy()
        row.update({f"action_applied/{k}": float(v) for k, v in enumerate(applied)})
        for group in ("reward_terms", "cost_terms"):
            row.update({f"{group}/{k}": val(v) for k, v in info.get(group, {}).items()})
        row.update({f"safety/{k}": val(v) for k, v in info.get("safety", {}).items()})
        return row

    def _add(self, row: dict[str, float]) -> None:
        for k, v in row.items():
            self._rows.setdefault(k, [float("nan")] * len(self._t)).append(v)
        self._t.append(self.steps)
        for values in self._rows.values():  # a key this step lacks: NaN
            if len(values) < len(self._t):
                values.append(float("nan"))
        self.steps += 1

    def flush(self) -> None:
        """Send the buffered steps."""
        if not self._t:
            return
        rr = self.rr
        steps = np.asarray(self._t, dtype=np.int64)
        indexes = [rr.TimeColumn("step", sequence=steps),
                   rr.TimeColumn("time", duration=steps * float(self.env.control_dt))]
        for k, values in self._rows.items():
            self.rec.send_columns(k, indexes=indexes,
                                  columns=rr.Scalars.columns(scalars=np.asarray(values)))
        self._rows, self._t = {}, []

    def close(self) -> None:
        self.flush()
        self.rec.flush()
        self.rec.disconnect()  # finalizes an .rrd file (its footer)
