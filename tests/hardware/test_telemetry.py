"""Deploy telemetry: the runtime's ticks, policy steps and events, drained by the Rerun sink
thread and read back with Rerun's dataframe reader against what the runtime did."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

rr = pytest.importorskip("rerun")

from robot_rl.export import load_policy  # noqa: E402
from robot_rl.hardware.configs import DeployConfig  # noqa: E402
from robot_rl.hardware.runtime import DeployRuntime  # noqa: E402
from robot_rl.hardware.telemetry import RerunTelemetry, Telemetry  # noqa: E402

GOAL = (0.5, -0.1, 0.3)


@pytest.mark.slow
def test_telemetry_holds_every_tick_step_and_event(reach_artifact: Path, scripted_robot,  # type: ignore[no-untyped-def]
                                                   tmp_path: Path) -> None:
    r = scripted_robot
    rt = DeployRuntime(load_policy(reach_artifact), r, DeployConfig(
        goal=GOAL, rate_hz=100, sliced_policy=False))
    rt.telemetry = Telemetry(len(r.joint_names), rt.policy.act_dim)
    sink = RerunTelemetry(rt.telemetry, r.joint_names, rt.period, out=tmp_path / "tel.rrd",
                          rate=50.0)
    q0 = np.asarray(r.spec.home, dtype=float)
    qs, sent = [], []
    t = 0.0
    for k in range(12):  # 100 Hz ticks, a policy step every 2 (the policy's 50 Hz)
        t = k * rt.period + (0.003 if k == 6 else 0.0)  # tick 6 is 3 ms late
        q = q0 + 0.001 * k
        r.set(q, stamp=t)
        cmd = rt.tick(r.observe(), now=t)
        qs.append(q)
        sent.append(cmd.values.copy())
    rt.estop("test")
    rt.tick(None, now=t + rt.period)
    sink.close()
    assert sink.dropped == 0 and sink.records == (13, rt.stats.policy_steps)
    import rerun.chunk as rc

    got = rc.RrdReader(tmp_path / "tel.rrd").stream().collect().reader(index="time") \
        .to_arrow_table().to_pydict()
    times = np.array([d.total_seconds() for d in got["time"]])
    col = lambda k: got[f"/{k}:Scalars:scalars"]  # noqa: E731
    pos = [v for v in col("joints/position") if v is not None]
    assert len(pos) == 13 and len(pos[0]) == 7  # every tick (the last: no new reading)
    np.testing.assert_allclose(pos[:12], qs)
    cmd = [v for v in col("joints/command") if v is not None]
    np.testing.assert_allclose(cmd[:12], sent)
    assert times[0] == 0.0
    err = [v[0] for v in col("timing/period_error_us") if v is not None]
    assert np.isnan(err[0]) and abs(err[6] - 3000.0) < 1.0 and abs(err[7] + 3000.0) < 1.0
    inference = [v[0] for v in col("timing/inference_us") if v is not None]
    assert len(inference) == rt.stats.policy_steps == 6 and min(inference) > 0
    shield = [v for v in col("shield") if v is not None]
    assert len(shield) == 6 and len(shield[0]) == len(rt.stats.shield)
    hold = [v[0] for v in col("hold") if v is not None]
    assert hold[-1] == 1.0 and hold[3] == 0.0  # running, then held by the e-stop
    events = [v for v in got["/events:TextLog:text"] if v is not None]
    texts = [e[0] for e in events]
    assert texts[0] == "running" and "e-stop: test" in texts


@pytest.mark.slow
def test_the_policy_node_streams_telemetry(reach_artifact: Path, tmp_path: Path) -> None:
    """policy_node with telemetry:=rerun over loopback DDS (sim_robot_node as the arm): the
    .rrd it leaves at shutdown holds its ticks, policy steps and the start."""
    pytest.importorskip("rclpy")
    import time

    import rerun.chunk as rc

    from tests.hardware.test_ros_nodes import _domain_id, _start, _stop

    domain = _domain_id()
    out = tmp_path / "node.rrd"
    sim = _start("sim_robot_node", {}, domain)
    # a loaded 2-core host can starve /joint_states for more than the default 3 periods
    # (15 ms), and a hold after the autostart waits for ~/start (in the full suite the node
    # once streamed 13 steps in 60 s): a generous watchdog, as the robot actor's ROS test
    node = _start("policy_node", {"artifact": reach_artifact, "autostart": True,
                                  "goal": str(list(GOAL)), "telemetry": "rerun",
                                  "telemetry_out": out, "watchdog_periods": "20"}, domain)
    try:
        def steps() -> int:
            if not out.exists():
                return 0
            try:
                t = rc.RrdReader(out).stream().collect().reader(index="time").to_arrow_table()
            except Exception:  # the file is still being written
                return 0
            name = "/timing/inference_us:Scalars:scalars"
            return 0 if name not in t.column_names else \
                sum(v is not None for v in t.column(name).to_pylist())
        end = time.monotonic() + 60
        while steps() < 20 and time.monotonic() < end:
            time.sleep(0.5)
    finally:
        log = _stop(node)
        print(_stop(sim)[-2000:])
    assert "telemetry into" in log, log
    got = rc.RrdReader(out).stream().collect().reader(index="time").to_arrow_table().to_pydict()
    ticks = [v for v in got["/joints/position:Scalars:scalars"] if v is not None]
    steps_ = [v for v in got["/timing/inference_us:Scalars:scalars"] if v is not None]
    # 200 Hz ticks, 50 Hz steps; the node's log says why if it acted less (a hold)
    assert len(steps_) >= 20 and len(ticks) >= 4 * len(steps_) - 8, log[-2000:]
    texts = [v[0] for v in got["/events:TextLog:text"] if v is not None]
    assert "running" in texts


def test_a_ring_the_sink_falls_a_lap_behind_on_keeps_the_newest_rows() -> None:
    from robot_rl.hardware.robot import JointCommand, JointReading
    from robot_rl.hardware.telemetry import _take

    tel = Telemetry(2, 1, capacity=8)
    for k in range(20):
        tel.tick(float(k), JointReading(np.array([k, -k], float), np.zeros(2), float(k)),
                 JointCommand.position(np.array([k + 0.5, 0.0])))
    rows, read, lost = _take(tel.ticks, 0)
    assert read == 20 and lost == 12
    np.testing.assert_array_equal(rows[:, 0], np.arange(12, 20))  # the newest 8, in order
    np.testing.assert_array_equal(rows[:, 2], np.arange(12, 20))  # q[0]
    np.testing.assert_array_equal(rows[:, 4], np.arange(12, 20) + 0.5)  # command[0]
    rows, read, lost = _take(tel.ticks, 20)
    assert len(rows) == 0 and read == 20 and lost == 0
