"""Replaying a recorded arm in the batched simulator, many parameter sets at once.

    replay = Replay(streams, robot, ReplayConfig())
    cost = replay.cost({"link_mass": values (C, n), ...}, delay (C,))     # (C,)

The recording (``ArmStreams``: joint states, and the position commands sent) is cut into
segments of ``segment`` seconds. Each segment starts from the recorded joint state at its
start and is replayed open loop: the commands as sent, each acting ``delay`` physics steps
after its send time, through the arm's position servo. C candidate parameter sets times S
segments run as one batch of C * S simulations (CPU threads or Warp), so a generation of the
optimizer is one pass.

Timing convention (the simulated arm's, ``hardware.sim_robot``): a joint reading stamped s is
the state after the physics step that starts at s, and its effort is the actuator force of
that step. A command sent at c acts from the first step starting at or after c + delay * dt.
On a real arm, any fixed offset between its stamps and this convention shows up in the delay.

The cost compares the replayed joint positions (and efforts, where recorded) with the
recording at every reading, each joint's error divided by its recorded signal's spread.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np
import torch

from robot_rl.errors import ConfigError
from robot_rl.hardware.configs import SimRobotConfig
from robot_rl.hardware.sim_robot import build_model
from robot_rl.recording.arm_import import ArmStreams
from robot_rl.robots import RobotSpec
from robot_rl.sim.backends import make_backend
from robot_rl.sim.backends.base import Backend
from robot_rl.sim.configs import PARAMS
from robot_rl.sim.identified import ArmParamIndex, nominal_values, write
from robot_rl.sysid.configs import ReplayConfig

TIME_TOL = 1e-6
"""Seconds by which a time may miss its physics step (rounding)."""


@dataclasses.dataclass
class Trajectories:
    """What a replay produced at the recording's readings: (C, S, R, n) each, R readings per
    segment (``Replay.mask`` (S, R): the real ones; segments differ in how many they hold)."""

    q: torch.Tensor
    effort: torch.Tensor | None


class Replay:
    """A recording, ready to replay under candidate parameters (module docstring)."""

    def __init__(self, streams: ArmStreams | Sequence[ArmStreams], robot: RobotSpec,
                 cfg: ReplayConfig | None = None, *, backend: str = "cpu", device: str = "cpu",
                 nthread: int | None = None):
        self.cfg = cfg = cfg or ReplayConfig()
        cfg.validate()
        self.robot = robot
        recordings = [streams] if isinstance(streams, ArmStreams) else list(streams)
        if not recordings:
            raise ConfigError("no recording to replay")
        n = robot.num_joints
        for s in recordings:
            if s.q.ndim != 2 or s.q.shape[1] != n or s.cmd.ndim != 2 or s.cmd.shape[1] != n:
                raise ConfigError(f"a recording has {s.q.shape[-1]} joint positions and "
                                  f"{s.cmd.shape[-1]} commands per sample; robot "
                                  f"{robot.name!r} has {n} joints")
            if len(s.cmd_t) == 0:
                raise ConfigError("a recording holds no commands")
        with_effort = all(s.effort is not None for s in recordings) and cfg.effort_weight > 0
        self.model = build_model(SimRobotConfig(robot=robot.name, physics_dt=cfg.physics_dt),
                                 robot)
        m, dt = self.model, cfg.physics_dt
        self.steps = k = int(round(cfg.segment / dt))
        act = [m.actuator(a).id for a in robot.actuator_names]
        ctrl_lo, ctrl_hi = m.actuator_ctrlrange[act, 0], m.actuator_ctrlrange[act, 1]
        # per segment: the readings inside it and the physics step each follows, its start
        # state, and the commands acting at each step for every delay
        segs: list[tuple[np.ndarray, np.ndarray, ArmStreams, int]] = []
        tables = []
        for s in recordings:
            starts = _segment_starts(s.js_t, cfg.segment)
            for i0 in starts:
                t_rel = s.js_t - s.js_t[i0]
                inside = np.flatnonzero((t_rel > TIME_TOL) & (t_rel <= k * dt + TIME_TOL))
                step = np.clip(np.round(t_rel[inside] / dt).astype(np.int64), 1, k) - 1
                segs.append((inside, step, s, i0))
                grid = s.js_t[i0] + dt * np.arange(1, k + 1)  # (K,) the steps' start times
                per_delay = []
                for d in range(cfg.max_delay + 1):
                    c = np.searchsorted(s.cmd_t, grid - d * dt + TIME_TOL, side="right") - 1
                    per_delay.append(np.clip(s.cmd[np.maximum(c, 0)], ctrl_lo, ctrl_hi))
                tables.append(np.stack(per_delay))  # (D + 1, K, n)
        if not segs:
            longest = max(s.js_t[-1] - s.js_t[0] for s in recordings)
            raise ConfigError(f"the longest recording spans {longest:.2f} s, shorter than one "
                              f"segment ({cfg.segment} s)")
        self.segments = len(segs)
        r = max(len(i) for i, *_ in segs)
        self.mask = torch.zeros(len(segs), r, dtype=torch.bool)
        self._step = torch.zeros(len(segs), r, dtype=torch.long)
        self.q_rec = torch.zeros(len(segs), r, n, dtype=torch.float64)
        self.effort_rec = torch.zeros_like(self.q_rec) if with_effort else None
        for j, (i, st, s, _) in enumerate(segs):
            self.mask[j, :len(i)] = True
            self._step[j, :len(i)] = torch.from_numpy(st)
            self.q_rec[j, :len(i)] = torch.from_numpy(s.q[i])
            if self.effort_rec is not None:
                self.effort_rec[j, :len(i)] = torch.from_numpy(np.asarray(s.effort)[i])
        self.q0 = torch.from_numpy(np.stack([s.q[i0] for *_, s, i0 in segs]))
        self.qd0 = torch.from_numpy(np.stack([s.qd[i0] for *_, s, i0 in segs]))
        self.ctrl = torch.from_numpy(np.stack(tables, axis=1))  # (D + 1, S, K, n)
        mv = self.mask[..., None]
        self._scale_q = _spread(self.q_rec, mv)
        self._scale_e = None if self.effort_rec is None else _spread(self.effort_rec, mv)
        self._backend_args = dict(name=backend, device=device, nthread=nthread)
        self._backend: Backend | None = None
        self._capacity = 0
        self.index = ArmParamIndex.of(m, robot)
        self._jq = torch.tensor([int(m.joint(j).qposadr[0]) for j in robot.joint_names])
        self._dofs = torch.from_numpy(self.index.dofs)
        self._act = torch.from_numpy(self.index.actuators)
        g = robot.gripper
        self._grip = None if g is None else (int(m.actuator(g.actuator).id),
                                             float(g.closed_ctrl))
        """The gripper's actuator and its closed control (None: no gripper)."""
        frc = m.actuator_forcerange[self.index.actuators]
        limited = m.actuator_forcelimited[self.index.actuators].astype(bool)
        self._frc_lo = torch.from_numpy(np.where(limited, frc[:, 0], -np.inf))
        self._frc_hi = torch.from_numpy(np.where(limited, frc[:, 1], np.inf))
        self.simulated_steps = 0
        """Physics steps simulated so far, over all simulations (for rates)."""

    def narrowed(self, segments: int) -> Replay:
        """This replay on at most ``segments`` of its segments, evenly spread (a cheaper
        cost for a coarse search; the same normalization)."""
        if segments >= self.segments:
            return self
        keep = torch.from_numpy(np.unique(np.linspace(0, self.segments - 1, segments)
                                          .round().astype(np.int64)))
        out = copy.copy(self)
        out.segments = len(keep)
        out.mask, out._step, out.q_rec = self.mask[keep], self._step[keep], self.q_rec[keep]
        out.effort_rec = None if self.effort_rec is None else self.effort_rec[keep]
        out.q0, out.qd0, out.ctrl = self.q0[keep], self.qd0[keep], self.ctrl[:, keep]
        out._backend, out._capacity = None, 0
        return out

    # -- evaluation ------------------------------------------------------------------------

    def run(self, values: Mapping[str, torch.Tensor], delay: torch.Tensor) -> Trajectories:
        """Replay every segment under C parameter sets: ``values[param]`` (C, n) for the
        parameters given (the others nominal), ``delay`` (C,) physics steps."""
        c = int(delay.shape[0])
        for p, v in values.items():
            if p not in PARAMS or tuple(v.shape) != (c, self.robot.num_joints):
                raise ConfigError(f"values[{p!r}] must be ({c}, {self.robot.num_joints}) for "
                                  f"a parameter of {list(PARAMS)}")
        if int(delay.min()) < 0 or int(delay.max()) > self.cfg.max_delay:
            raise ConfigError(f"delays must be within 0..{self.cfg.max_delay} physics steps")
        S, K = self.segments, self.steps
        E = c * S
        b = self._backend_for(E)
        ids = torch.arange(E)
        b.reset(ids)
        envs = slice(0, E)
        per_env = {p: v.to(torch.float64).repeat_interleave(S, dim=0)
                   for p, v in values.items()}
        derived = write(b.model_field, self._nominal, self.index,
                        {**self._unit(E), **per_env}, envs)
        if derived:
            b.commit_model(ids)
        jq, dofs, act = self._jq, self._dofs, self._act
        seg = torch.arange(S).repeat(c)  # (E,) each simulation's segment
        d = delay.to(torch.long).repeat_interleave(S)
        b.qpos[:E, jq] = self.q0[seg].to(b.dtype)
        b.qvel[:E, dofs] = self.qd0[seg].to(b.dtype)
        if self._grip is not None:
            grip, closed = self._grip
            b.ctrl[:E, grip] = closed
        b.forward(ids)
        ctrl = self.ctrl[d, seg].to(b.dtype)  # (E, K, n)
        q_out = torch.empty(E, K, len(jq), dtype=b.dtype)
        want_effort = self.effort_rec is not None
        e_out = torch.empty_like(q_out) if want_effort else None
        if want_effort:
            gain = b.model_field("actuator_gainprm")[:E, act, 0]
            b1 = b.model_field("actuator_biasprm")[:E, act, 1]
            b2 = b.model_field("actuator_biasprm")[:E, act, 2]
        for k in range(K):
            u = ctrl[:, k]
            b.ctrl[:E, act] = u
            if e_out is not None:
                force = gain * u + b1 * b.qpos[:E, jq] + b2 * b.qvel[:E, dofs]
                e_out[:, k] = torch.clamp(force, self._frc_lo, self._frc_hi)
            b.step(1, current_sensors=False)
            q_out[:, k] = b.qpos[:E, jq]
        self.simulated_steps += E * K
        at = self._step[None].expand(c, S, -1).reshape(E, -1)  # (E, R)
        pick = at[..., None].expand(-1, -1, len(jq))
        q = torch.gather(q_out, 1, pick).reshape(c, S, -1, len(jq))
        e = None if e_out is None else torch.gather(e_out, 1, pick).reshape(c, S, -1, len(jq))
        return Trajectories(q=q, effort=e)

    def cost(self, values: Mapping[str, torch.Tensor], delay: torch.Tensor) -> torch.Tensor:
        """(C,) the replay's mismatch with the recording under each parameter set: mean
        squared position error per joint over its recorded spread, plus ``effort_weight``
        times the same for efforts."""
        tr = self.run(values, delay)
        return self.cost_of(tr)

    def cost_of(self, tr: Trajectories) -> torch.Tensor:
        """(C,) ``cost`` of trajectories ``run`` returned."""
        count = int(self.mask.sum()) * tr.q.shape[-1]
        return (self.residuals(tr) ** 2).sum(1) / count

    def residuals(self, tr: Trajectories) -> torch.Tensor:
        """(C, N) the errors whose mean square is the cost: each reading's position error
        per joint over its spread, then (where recorded) the efforts' likewise, times the
        square root of ``effort_weight``."""
        m = self.mask
        rq = ((tr.q - self.q_rec) / self._scale_q)[:, m]  # (C, readings, n)
        parts = [rq.reshape(len(rq), -1)]
        if tr.effort is not None and self.effort_rec is not None and self._scale_e is not None:
            re = ((tr.effort - self.effort_rec) / self._scale_e)[:, m]
            parts.append(self.cfg.effort_weight ** 0.5 * re.reshape(len(re), -1))
        return torch.cat(parts, dim=1)

    def nominal_friction(self) -> np.ndarray:
        """(n,) the model's own dry friction of the arm joints [Nm]."""
        return self.model.dof_frictionloss[self.index.dofs].copy()

    def rms_q(self, tr: Trajectories) -> torch.Tensor:
        """(C,) root-mean-square joint position error over all readings [rad]."""
        m = self.mask[None, ..., None].to(tr.q.dtype)
        count = m.sum() * tr.q.shape[-1]
        return ((((tr.q - self.q_rec) ** 2) * m).sum((1, 2, 3)) / count).sqrt()

    # -- internals -------------------------------------------------------------------------

    def _unit(self, e: int) -> dict[str, torch.Tensor]:
        """Nominal values of every parameter for ``e`` simulations (scales 1, the model's
        own friction), so a candidate's unlisted parameters are nominal whatever the last
        batch wrote."""
        n = self.robot.num_joints
        out = {p: torch.ones(e, n, dtype=torch.float64) for p in PARAMS if p != "frictionloss"}
        out["frictionloss"] = self._friction0.expand(e, n).clone()
        return out

    def _backend_for(self, e: int) -> Backend:
        """A backend of at least ``e`` simulations (made again, larger, when a batch
        outgrows it)."""
        if self._backend is None or e > self._capacity:
            a = self._backend_args
            nthread = a["nthread"]
            self._backend = b = make_backend(str(a["name"]), self.model, e,
                                             device=str(a["device"]),
                                             nthread=None if nthread is None else int(nthread),
                                             what="the sysid replay")
            self._capacity = e
            # read from the backend's own fields: its device and dtype (Warp: float32)
            self._nominal = nominal_values(b.model_field, self.index, tuple(PARAMS))
            self._friction0 = self._nominal["dof_frictionloss"][None].clone()
        return self._backend


def _segment_starts(t: np.ndarray, segment: float) -> list[int]:
    """Indices of the readings that start each whole segment."""
    starts, i = [], 0
    while i < len(t) and t[-1] - t[i] >= segment - TIME_TOL:
        starts.append(i)
        i = int(np.searchsorted(t, t[i] + segment - TIME_TOL, side="left"))
    return starts


def _spread(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(n,) each joint's standard deviation over the real readings (at least 1e-6)."""
    m = mask.to(x.dtype)
    count = m.sum((0, 1))
    mean = (x * m).sum((0, 1)) / count
    var = (((x - mean) ** 2) * m).sum((0, 1)) / count
    return var.sqrt().clamp(min=1e-6)
