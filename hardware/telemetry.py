"""Deploy telemetry: what the control loop does, streamed from outside its thread.

    runtime.telemetry = Telemetry()                          # the loop's side: appends only
    sink = RerunTelemetry(runtime.telemetry, rec, joint_names, period)   # a thread of its own
    ...
    sink.close()

The runtime hands each fact to ``Telemetry`` as it happens: one bounded-deque append of
references to arrays it made anyway (no copy, no lock, no I/O on the loop's thread). The sink
thread drains the deque ``TelemetryConfig.rate`` times a second and writes what it took:

    tick    (t, reading q (n,), command values (n,), hold)      every tick
    step    (t, action (A,), applied (A,), {shield layer: acted}, inference [s], gate [s])
    event   (t, text)       holds (watchdog, stale camera, stop), e-stop, start, reset

Rerun entities: ``joints/{joint}/position`` and ``/command``, ``hold``,
``timing/period_error_us`` (each tick's spacing less the period), ``policy/action/{k}``,
``policy/applied/{k}``, ``shield/{layer}`` (1 where the layer changed the action),
``timing/inference_us``, ``timing/gate_us``, and ``events`` (a text log), on the ``time``
timeline (seconds of the loop's monotonic clock since the first tick). A full deque drops the
oldest records (``Telemetry.dropped`` counts them), never blocks the loop.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from robot_rl.hardware.robot import JointCommand, JointReading

WEB_PORT, GRPC_PORT = 9090, 9876
"""Rerun's web viewer and its recording server, where there is no display."""
MAXLEN = 200_000
"""Records the deque holds before it drops the oldest (minutes of ticks at 1 kHz)."""


class Telemetry:
    """The loop's side: appends records (see module docstring)."""

    def __init__(self, maxlen: int = MAXLEN):
        self.queue: collections.deque[tuple[Any, ...]] = collections.deque(maxlen=maxlen)
        self.appended = 0
        self.taken = 0

    def tick(self, t: float, reading: JointReading | None, sent: JointCommand | None) -> None:
        self.queue.append(("tick", t, None if reading is None else reading.q,
                           None if sent is None else sent.values,
                           sent is None or sent.hold))
        self.appended += 1

    def step(self, t: float, action: np.ndarray, applied: np.ndarray,
             flags: dict[str, Any], inference: float, gate: float) -> None:
        self.queue.append(("step", t, action, applied, flags, inference, gate))
        self.appended += 1

    def event(self, t: float, text: str) -> None:
        self.queue.append(("event", t, text))
        self.appended += 1

    def drain(self) -> list[tuple[Any, ...]]:
        """Take every record there is (the sink's side)."""
        out = []
        q = self.queue
        while q:
            try:
                out.append(q.popleft())
            except IndexError:
                break
        self.taken += len(out)
        return out

    @property
    def dropped(self) -> int:
        """Records the full deque dropped (approximate while the loop appends)."""
        return max(0, self.appended - len(self.queue) - self.taken)


class RerunTelemetry:
    """The sink: a thread that drains ``telemetry`` into the Rerun recording ``rec``."""

    def __init__(self, telemetry: Telemetry, rec: Any, joint_names: Sequence[str],
                 period: float, rate: float = 20.0):
        from robot_rl.sim.rerun_scene import require_rerun

        self.rr = require_rerun()
        self.telemetry, self.rec = telemetry, rec
        self.joints = [str(j) for j in joint_names]
        self.period, self.rate = period, rate
        self.t0: float | None = None
        self._last_tick: float | None = None
        self.records = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="telemetry", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(1.0 / self.rate):
            self.write(self.telemetry.drain())
        self.write(self.telemetry.drain())

    def write(self, records: list[tuple[Any, ...]]) -> None:
        """Log ``records`` (columns per entity: one Rerun call each)."""
        if not records:
            return
        self.records += len(records)
        if self.t0 is None:
            self.t0 = records[0][1]
        ticks = [r for r in records if r[0] == "tick"]
        steps = [r for r in records if r[0] == "step"]
        events = [r for r in records if r[0] == "event"]
        if ticks:
            self._ticks(ticks)
        if steps:
            self._steps(steps)
        rr = self.rr
        for _, t, text in events:
            self.rec.set_time("time", duration=t - self.t0)
            self.rec.log("events", rr.TextLog(text))
        if events:
            self.rec.reset_time()

    def _time(self, records: list[tuple[Any, ...]]) -> list[Any]:
        t = np.array([r[1] for r in records], dtype=np.float64) - float(self.t0 or 0.0)
        return [self.rr.TimeColumn("time", duration=t)]

    def _ticks(self, ticks: list[tuple[Any, ...]]) -> None:
        rr, send = self.rr, self.rec.send_columns
        idx = self._time(ticks)
        n = len(self.joints)
        q = np.array([r[2] if r[2] is not None else np.full(n, np.nan) for r in ticks])
        cmd = np.array([r[3] if r[3] is not None else np.full(n, np.nan) for r in ticks])
        for j, name in enumerate(self.joints):
            send(f"joints/{name}/position", indexes=idx,
                 columns=rr.Scalars.columns(scalars=q[:, j]))
            send(f"joints/{name}/command", indexes=idx,
                 columns=rr.Scalars.columns(scalars=cmd[:, j]))
        send("hold", indexes=idx, columns=rr.Scalars.columns(
            scalars=np.array([float(r[4]) for r in ticks])))
        t = np.array([r[1] for r in ticks])
        prev = np.concatenate([[self._last_tick if self._last_tick is not None else np.nan],
                               t[:-1]])
        err = (t - prev - self.period) * 1e6
        self._last_tick = float(t[-1])
        send("timing/period_error_us", indexes=idx, columns=rr.Scalars.columns(scalars=err))

    def _steps(self, steps: list[tuple[Any, ...]]) -> None:
        rr, send = self.rr, self.rec.send_columns
        idx = self._time(steps)
        a = np.array([np.asarray(r[2], dtype=np.float64) for r in steps])
        applied = np.array([np.asarray(r[3], dtype=np.float64) for r in steps])
        for k in range(a.shape[1]):
            send(f"policy/action/{k}", indexes=idx, columns=rr.Scalars.columns(scalars=a[:, k]))
            send(f"policy/applied/{k}", indexes=idx,
                 columns=rr.Scalars.columns(scalars=applied[:, k]))
        for layer in steps[0][4]:
            send(f"shield/{layer}", indexes=idx, columns=rr.Scalars.columns(
                scalars=np.array([float(bool(np.asarray(r[4][layer]).reshape(-1)[0]))
                                  for r in steps])))
        send("timing/inference_us", indexes=idx, columns=rr.Scalars.columns(
            scalars=np.array([r[5] * 1e6 for r in steps])))
        send("timing/gate_us", indexes=idx, columns=rr.Scalars.columns(
            scalars=np.array([r[6] * 1e6 for r in steps])))

    def close(self) -> None:
        """Write what is left and stop."""
        self._stop.set()
        self._thread.join(timeout=10.0)
        self.rec.flush()


def rerun_telemetry(runtime: Any, out: str | Path | None, say: Any) -> RerunTelemetry:
    """Give ``runtime`` a ``Telemetry`` and start its Rerun sink: into the .rrd file ``out``,
    else Rerun's viewer (its web viewer without a display). Close the sink when done."""
    from robot_rl.data.rerun_log import rerun_recording, show

    rec = rerun_recording(f"robot-rl deploy {runtime.policy.meta['task']}")
    if out:
        rec.save(str(out))
        say(f"telemetry into {out} (open it: rerun {out})")
    else:
        show(rec, WEB_PORT, GRPC_PORT, say)
    runtime.telemetry = Telemetry()
    return RerunTelemetry(runtime.telemetry, rec, runtime.robot.joint_names, runtime.period)
