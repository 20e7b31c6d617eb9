"""Deploy loop timing: the runtime against the simulated arm, and the ROS 2 path.

    python benchmarks/deploy_loop.py [--duration 60] [--rates 500 1000] [--ros-duration 30]

Policy: a 64x64 student with observation normalization (cloned from the reach expert in
ee_delta actions, so the operational-space controller and the shield's torque layers run
every tick), the safety-critic gate over 8 candidates (a 2 x 256x256 critic ensemble,
untrained, threshold never reached: its cost is what is measured), the full shield, and the
OSC torque law on the effort interface of the simulated arm stepping in real time in a
process of its own (SimRobotProcess), as a real arm's driver runs.

Rows, measured in one run on this machine:
  ours          DeployRuntime.run: deadline sleeping with 1 µs timer slack, the policy step
                sliced into the idle time between ticks
  ours, inline  the same with the whole policy step inside the tick it is due in
  naive sleep   the inline tick in a loop of time.sleep(period - elapsed) (typical scripts)
  OS floor      the deadline loop with no simulated arm and no work but one call of the
                policy network per tick: the best this host's timer can do, and what one
                network call costs when it follows a sleep on this host

The ROS row runs sim_robot_node + policy_node (reach student, position interface) as
processes at 200 Hz and reports JointState receipt -> command publish latency.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import tyro
from rich.console import Console
from rich.table import Table

from robot_rl.controllers import EEDeltaConfig, OSCConfig
from robot_rl.distill import clone_expert
from robot_rl.distill.configs import DaggerConfig, DistillConfig
from robot_rl.export import load_policy
from robot_rl.export.artifact import artifact_meta, export_artifact
from robot_rl.export.modules import DeployCost
from robot_rl.hardware.configs import DeployConfig, SimRobotConfig
from robot_rl.hardware.runtime import DeployRuntime
from robot_rl.hardware.sim_robot_process import SimRobotProcess
from robot_rl.hardware.timing import Rate, Samples
from robot_rl.nets import EnsembleCritic

GOAL = (0.5, -0.15, 0.3)


@dataclasses.dataclass
class Args:
    duration: float = 60.0
    """Seconds of the runtime at each rate."""
    peer_duration: float = 20.0
    """Seconds of the naive loop and the OS floor at each rate."""
    rates: tuple[float, ...] = (500.0, 1000.0)
    ros_duration: float = 30.0
    """Seconds of the ROS 2 path (0: skip)."""
    ros_rate: float = 200.0


def _artifacts(folder: Path) -> tuple[Path, Path]:
    cfg = DistillConfig(run=Path("-"),
                        dagger=DaggerConfig(iterations=4, grad_steps=300, num_envs=16, dr="off",
                                            progress=False))
    osc_student, env = clone_expert("reach", cfg,
                                    action=EEDeltaConfig(gripper=False, rotation=False),
                                    controller=OSCConfig())  # ee_delta's default is diff_ik
    critic = EnsembleCritic(2, env.obs_dim, env.act_dim, (256, 256))
    safety = {"mode": "gate", "threshold": 1e9, "candidates": 8, "candidate_noise": 0.3,
              "fallback": "least_cost", "pessimism": 1.0, "gamma": 0.9}
    osc = export_artifact(folder / "reach_osc", osc_student,
                          artifact_meta(env, osc_student, safety, {"source": "bench"}),
                          cost=DeployCost(osc_student.norm, critic, 1.0))
    joint_student, env = clone_expert("reach", cfg)
    joint = export_artifact(folder / "reach_joint", joint_student,
                            artifact_meta(env, joint_student, None, {"source": "bench"}))
    return osc, joint


def _arm(rate: float) -> SimRobotConfig:
    """The simulated arm, its physics (and so its sensing) at least as fast as the loop."""
    return SimRobotConfig(interface="effort", physics_dt=min(0.002, 1.0 / rate))


def _ours(artifact: Path, rate: float, duration: float, sliced: bool = True) -> dict:
    with SimRobotProcess(_arm(rate)) as robot:
        rt = DeployRuntime(load_policy(artifact), robot,
                           DeployConfig(rate_hz=rate, goal=GOAL, sliced_policy=sliced))
        # An operator restarts after a watchdog hold (a starved simulated arm on this 2-core
        # host); the trips are counted and reported.
        out = rt.run(duration, on_tick=_restart_after_trip)
        out["goal_cm"] = float(np.linalg.norm(robot.ee_pos() - GOAL) * 100)
    return out


def _restart_after_trip(rt: DeployRuntime) -> None:
    if rt.mode == "idle":
        rt.start()


def _naive(artifact: Path, rate: float, duration: float) -> dict:
    with SimRobotProcess(_arm(rate)) as robot:
        rt = DeployRuntime(load_policy(artifact), robot,
                           DeployConfig(rate_hz=rate, goal=GOAL, sliced_policy=False))
        period, err = 1.0 / rate, Samples()
        start = prev = time.monotonic()
        overruns = 0
        while time.monotonic() - start < duration:
            t0 = time.monotonic()
            if rt.stats.ticks:
                err.add(abs(t0 - prev - period))
            prev = t0
            rt.tick(robot.observe(), t0)
            spent = time.monotonic() - t0
            overruns += spent > period
            if spent < period:
                time.sleep(period - spent)
        rt.close()
    return {"period_error_us": err.percentiles(1e6), "overruns": overruns}


def _floor(artifact: Path, rate: float, duration: float) -> dict:
    """The deadline loop with nothing in it but one call of the policy network per tick: the
    wake-up error and the in-loop inference time this host allows, with no arm, no controller
    and no gate competing for the core and its caches."""
    policy = load_policy(artifact)
    obs = np.zeros(policy.obs_dim, np.float32)
    policy(obs)
    r, err, inf, period = Rate(rate), Samples(), Samples(), 1.0 / rate
    start = prev = time.monotonic()
    while time.monotonic() - start < duration:
        r.sleep()
        t0 = time.monotonic()
        err.add(abs(t0 - prev - period))
        prev = t0
        policy(obs)
        inf.add(time.monotonic() - t0)
    return {"period_error_us": err.percentiles(1e6), "inference_us": inf.percentiles(1e6)}


def _ros(artifact: Path, rate: float, duration: float, folder: Path) -> dict:
    from robot_rl.hardware.ros.launcher import default_params_file, node_command

    env = dict(os.environ, ROS_DOMAIN_ID=str(150 + os.getpid() % 50))
    stats = folder / "ros_stats.json"
    procs = [subprocess.Popen(node_command("sim_robot_node", default_params_file(), {}),
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
             subprocess.Popen(node_command("policy_node", default_params_file(), {
                 "artifact": artifact, "autostart": True, "rate_hz": rate,
                 "goal": str(list(GOAL)), "stats_file": stats}), env=env,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    time.sleep(duration)
    for p in reversed(procs):
        p.send_signal(signal.SIGINT)
        p.wait(timeout=20)
    return json.loads(stats.read_text())


def _warm_inference(artifact: Path, n: int = 5000) -> tuple[float, float, float]:
    """The policy called back to back (caches and clocks warm), as in the issue-4 table."""
    policy = load_policy(artifact)
    obs, t = np.zeros(policy.obs_dim, np.float32), Samples()
    for _ in range(500):
        policy(obs)
    for _ in range(n):
        t0 = time.perf_counter()
        policy(obs)
        t.add(time.perf_counter() - t0)
    return t.percentiles(1e6)


def _pct(x: tuple[float, float, float]) -> str:
    return f"{x[0]:.0f} / {x[1]:.0f} / {x[2]:.0f}"


def main(args: Args) -> None:
    console = Console(width=max(Console().width, 150))
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        console.print("cloning the reach expert into two students (ee_delta/OSC and "
                      "joint_delta)...")
        osc, joint = _artifacts(folder)
        table = Table(title="deploy loop on the simulated arm (2-core host, µs)")
        for col in ("rate", "loop", "period error p50 / p99 / max", "overruns / ticks",
                    "watchdog trips / hold ticks", "inference p50 / p99", "gate p50 / p99",
                    "tick p50 / p99 / max", "goal dist"):
            table.add_column(col)
        for rate in args.rates:
            console.print(f"{rate:g} Hz: runtime {args.duration:g} s; inline, naive loop and "
                          f"OS floor {args.peer_duration:g} s each...")
            ours = _ours(osc, rate, args.duration)
            inline = _ours(osc, rate, args.peer_duration, sliced=False)
            naive = _naive(osc, rate, args.peer_duration)
            floor = _floor(osc, rate, args.peer_duration)
            for name, r in (("ours", ours), ("ours, inline", inline)):
                inf, gate, tick = r["inference_us"], r["gate_us"], r["compute_us"]
                table.add_row(f"{rate:g} Hz" if name == "ours" else "", name,
                              _pct(r["period_error_us"]), f"{r['overruns']} / {r['ticks']}",
                              f"{r['watchdog_trips']} / {r['hold_ticks']}",
                              f"{inf[0]:.0f} / {inf[1]:.0f}",
                              f"{gate[0]:.0f} / {gate[1]:.0f}", _pct(tick),
                              f"{r['goal_cm']:.1f} cm")
            table.add_row("", "naive sleep", _pct(naive["period_error_us"]),
                          str(naive["overruns"]), "", "", "", "", "")
            inf = floor["inference_us"]
            table.add_row("", "OS floor", _pct(floor["period_error_us"]), "", "",
                          f"{inf[0]:.0f} / {inf[1]:.0f}", "", "", "")
        console.print(table)
        warm = _warm_inference(osc)
        console.print(f"policy inference back to back (warm): p50 {warm[0]:.1f} µs, p99 "
                      f"{warm[1]:.1f} µs; in the loop each call follows a sleep, and this "
                      f"host's cold caches and clocks cost the difference")
        if args.ros_duration > 0:
            console.print(f"ROS 2 path: sim_robot_node + policy_node at {args.ros_rate:g} Hz "
                          f"for {args.ros_duration:g} s...")
            s = _ros(joint, args.ros_rate, args.ros_duration, folder)
            t = Table(title=f"ROS 2 path at {args.ros_rate:g} Hz (µs)")
            for col in ("JointState receipt -> command publish p50 / p99 / max",
                        "header stamp -> publish p50 / p99", "target p99",
                        "ticks (mean rate)", "watchdog trips"):
                t.add_column(col)
            lat, st = s["receipt_to_publish_us"], s["stamp_to_publish_us"]
            t.add_row(_pct(lat), f"{st[0]:.0f} / {st[1]:.0f}", "<= 2000",
                      f"{s['ticks']} ({s['tick_rate_hz']:.1f} Hz)",
                      str(s["watchdog_trips"]))
            console.print(t)


if __name__ == "__main__":
    main(tyro.cli(Args))
    sys.exit(0)
