"""Deploy telemetry: what the control loop does, written out by a process of its own.

    runtime.telemetry = Telemetry(n_joints, act_dim)        # the loop's side: shared memory
    sink = RerunTelemetry(runtime.telemetry, joint_names, period, out="t.rrd")  # a process
    ...
    sink.close()

The runtime hands each fact to ``Telemetry`` as it happens, and ``Telemetry`` writes it into a
ring of fixed-width rows in shared memory: a few small array assignments and a counter
increment, no lock, no I/O, no allocation on the loop's thread. The sink process reads the
rings ``rate`` times a second and writes what is new to Rerun; it runs niced. Nothing of it
runs in the loop's process, so it never holds the loop's GIL.

    tick    t, hold, reading q (n), command values (n)          every tick
    step    t, inference [s], gate [s], action (A), applied (A), shield flags (one per layer)
    event   (t, text)  holds (watchdog, stale camera, stop), e-stop, start, reset: a queue

Rerun entities, one named series per joint, action element or layer: ``joints/position``,
``joints/command``, ``hold``, ``timing/period_error_us`` (each tick's spacing less the
period), ``policy/action``, ``policy/applied``, ``shield`` (1 where a layer changed the
action), ``timing/inference_us``, ``timing/gate_us``, and ``events`` (a text log), on the
``time`` timeline (seconds of the loop's monotonic clock since the first tick). A ring the
sink falls a whole lap behind on loses the oldest rows (``RerunTelemetry.dropped``).
"""

from __future__ import annotations

import ctypes
import multiprocessing as mp
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from robot_rl.controllers.shield import LAYERS
from robot_rl.errors import ConfigError
from robot_rl.hardware.robot import JointCommand, JointReading
from robot_rl.sim.rerun_scene import WEB_PORT

CAPACITY = 1 << 16
"""Rows of each ring (over two minutes of ticks at 500 Hz)."""
NICE = 10
"""The sink process's niceness above the loop's."""
START_TIMEOUT = 60.0


class _Ring:
    """``capacity`` rows of ``width`` doubles in shared memory, and a count of rows written."""

    def __init__(self, ctx: Any, width: int, capacity: int):
        self.width, self.capacity = width, capacity
        self.buf = ctx.RawArray(ctypes.c_double, width * capacity)
        self.count = ctx.RawValue(ctypes.c_int64, 0)

    def rows(self) -> np.ndarray:
        return np.frombuffer(self.buf, dtype=np.float64).reshape(self.capacity, self.width)


class Telemetry:
    """The loop's side (module docstring)."""

    def __init__(self, n_joints: int, act_dim: int, layers: Sequence[str] = LAYERS,
                 capacity: int = CAPACITY):
        ctx = mp.get_context("spawn")
        self.n, self.act_dim, self.layers = n_joints, act_dim, tuple(layers)
        self.ticks = _Ring(ctx, 2 + 2 * n_joints, capacity)
        self.steps = _Ring(ctx, 3 + 2 * act_dim + len(self.layers), capacity)
        self.events = ctx.SimpleQueue()
        self._tick_rows, self._step_rows = self.ticks.rows(), self.steps.rows()

    def tick(self, t: float, reading: JointReading | None, sent: JointCommand | None) -> None:
        k = self.ticks.count.value
        row, n = self._tick_rows[k % self.ticks.capacity], self.n
        row[0], row[1] = t, sent is None or sent.hold
        row[2:2 + n] = np.nan if reading is None else reading.q
        row[2 + n:] = np.nan if sent is None else sent.values
        self.ticks.count.value = k + 1

    def step(self, t: float, action: np.ndarray, applied: np.ndarray,
             flags: dict[str, Any], inference: float, gate: float) -> None:
        k = self.steps.count.value
        row, a = self._step_rows[k % self.steps.capacity], self.act_dim
        row[0], row[1], row[2] = t, inference, gate
        row[3:3 + a] = action
        row[3 + a:3 + 2 * a] = applied
        for i, layer in enumerate(self.layers):
            flag = flags.get(layer)
            row[3 + 2 * a + i] = np.nan if flag is None else bool(np.asarray(flag).flat[0])
        self.steps.count.value = k + 1

    def event(self, t: float, text: str) -> None:
        self.events.put((t, text))


class RerunTelemetry:
    """The sink: a process that reads ``telemetry``'s rings into a Rerun recording (the
    .rrd file ``out``, else Rerun's viewer, or its web viewer without a display)."""

    def __init__(self, telemetry: Telemetry, joint_names: Sequence[str], period: float,
                 out: str | Path | None = None, rate: float = 20.0, title: str = "deploy"):
        from robot_rl.sim.rerun_scene import require_rerun

        require_rerun()
        if len(joint_names) != telemetry.n:
            raise ConfigError(f"{len(joint_names)} joint names for {telemetry.n} joints")
        ctx = mp.get_context("spawn")
        self.telemetry = telemetry
        self.state = ctx.RawValue(ctypes.c_int32, 0)
        """0 starting, 1 running, 2 failed, 3 asked to stop."""
        self.written = ctx.RawArray(ctypes.c_int64, 3)
        """Rows written to Rerun (ticks, steps) and rows dropped, as the sink counts them."""
        spec = dict(joints=[str(j) for j in joint_names], layers=list(telemetry.layers),
                    period=period, rate=rate, out=None if out is None else str(out),
                    title=title)
        self.process = ctx.Process(
            target=_sink_main, name="robot-rl-telemetry",
            args=(telemetry.ticks, telemetry.steps, telemetry.events, self.state,
                  self.written, spec), daemon=True)
        self.process.start()
        end = time.monotonic() + START_TIMEOUT
        while self.state.value == 0 and self.process.is_alive() and time.monotonic() < end:
            time.sleep(0.01)
        if self.state.value != 1:
            self.process.kill()
            raise ConfigError(f"the telemetry process did not start (exit status "
                              f"{self.process.exitcode})")

    @property
    def dropped(self) -> int:
        return int(self.written[2])

    @property
    def records(self) -> tuple[int, int]:
        """(ticks, policy steps) written so far."""
        return int(self.written[0]), int(self.written[1])

    def close(self) -> None:
        """Write what is left and end the sink process."""
        if self.state.value == 1:
            self.state.value = 3
        self.process.join(timeout=30)
        if self.process.is_alive():
            self.process.kill()


def rerun_telemetry(runtime: Any, out: str | Path | None, say: Any) -> RerunTelemetry:
    """Give ``runtime`` a ``Telemetry`` and start its Rerun sink (``RerunTelemetry``)."""
    runtime.telemetry = Telemetry(len(runtime.robot.joint_names), runtime.policy.act_dim)
    sink = RerunTelemetry(runtime.telemetry, runtime.robot.joint_names, runtime.period, out,
                          title=f"deploy {runtime.policy.meta['task']}")
    say(f"telemetry into {out} (open it: rerun {out})" if out else
        "telemetry to Rerun's viewer (without a display: its web viewer at "
        f"http://localhost:{WEB_PORT})")
    return sink


# -- the sink process -----------------------------------------------------------------------


def _sink_main(ticks: _Ring, steps: _Ring, events: Any, state: Any, written: Any,
               spec: dict[str, Any]) -> None:
    os.nice(NICE)
    import rerun as rr

    from robot_rl.data.rerun_log import show

    try:
        rec = rr.RecordingStream(f"robot-rl {spec['title']}")
        if spec["out"]:
            rec.save(spec["out"])
        else:  # the parent has said where
            show(rec)
        sink = _Sink(rr, rec, spec)
    except Exception:
        state.value = 2
        raise
    state.value = 1
    read = [0, 0]
    while True:
        stop = state.value != 1
        for i, (ring, write) in enumerate(((ticks, sink.ticks), (steps, sink.steps))):
            got, read[i], lost = _take(ring, read[i])
            written[2] += lost
            if len(got):
                write(got)
                written[i] += len(got)
        while not events.empty():
            sink.event(*events.get())
        if stop:
            break
        time.sleep(1.0 / spec["rate"])
    rec.flush()
    rec.disconnect()  # finalizes an .rrd file (its footer)


def _take(ring: _Ring, read: int) -> tuple[np.ndarray, int, int]:
    """The rows written since ``read`` (copied), the new read count, and rows lost to a lap."""
    count = ring.count.value
    lost = max(0, count - read - ring.capacity)
    start = read + lost
    idx = np.arange(start, count) % ring.capacity
    rows = ring.rows()[idx].copy()
    overrun = max(0, ring.count.value - start - ring.capacity)  # overwritten while copied
    return rows[overrun:], count, lost + overrun


class _Sink:
    """Rows to Rerun columns (in the sink process)."""

    def __init__(self, rr: Any, rec: Any, spec: dict[str, Any]):
        self.rr, self.rec = rr, rec
        self.joints, self.layers = spec["joints"], spec["layers"]
        self.period = spec["period"]
        self.t0: float | None = None
        self.last_tick: float | None = None
        self.named: set[str] = set()

    def _send(self, entity: str, t: np.ndarray, values: np.ndarray,
              names: Sequence[str] | None = None) -> None:
        rr = self.rr
        column = rr.Scalars.columns(scalars=np.ascontiguousarray(values).ravel())
        if values.ndim == 2:
            column = column.partition([values.shape[1]] * len(values))
        self.rec.send_columns(entity, indexes=[rr.TimeColumn("time", duration=t - self.t0)],
                              columns=column)
        if names is not None and entity not in self.named:
            self.rec.log(entity, rr.SeriesLines(names=list(names)), static=True)
            self.named.add(entity)

    def ticks(self, rows: np.ndarray) -> None:
        t = rows[:, 0]
        if self.t0 is None:
            self.t0 = float(t[0])
        n = len(self.joints)
        self._send("joints/position", t, rows[:, 2:2 + n], self.joints)
        self._send("joints/command", t, rows[:, 2 + n:], self.joints)
        self._send("hold", t, rows[:, 1])
        prev = np.concatenate([[np.nan if self.last_tick is None else self.last_tick],
                               t[:-1]])
        self.last_tick = float(t[-1])
        self._send("timing/period_error_us", t, (t - prev - self.period) * 1e6)

    def steps(self, rows: np.ndarray) -> None:
        t = rows[:, 0]
        if self.t0 is None:
            self.t0 = float(t[0])
        a = (rows.shape[1] - 3 - len(self.layers)) // 2
        names = [str(k) for k in range(a)]
        self._send("policy/action", t, rows[:, 3:3 + a], names)
        self._send("policy/applied", t, rows[:, 3 + a:3 + 2 * a], names)
        self._send("shield", t, rows[:, 3 + 2 * a:], self.layers)
        self._send("timing/inference_us", t, rows[:, 1] * 1e6)
        self._send("timing/gate_us", t, rows[:, 2] * 1e6)

    def event(self, t: float, text: str) -> None:
        if self.t0 is None:
            self.t0 = t
        self.rec.set_time("time", duration=t - self.t0)
        self.rec.log("events", self.rr.TextLog(text))
        self.rec.reset_time()
