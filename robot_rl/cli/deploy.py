"""``robot-rl deploy``: run an exported policy on the simulated arm or through ROS 2."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Annotated, Any, Literal

import tyro
from rich.console import Console
from rich.table import Table

from robot_rl.errors import ConfigError
from robot_rl.hardware.runtime import DeployConfig
from robot_rl.hardware.sim_robot import SimRobotConfig


@dataclasses.dataclass(kw_only=True)
class DeployCommandConfig:
    """Run an exported policy on a robot at a fixed rate, behind the gate and the shield.

    Examples:
      robot-rl deploy runs/demo/reach/artifact --robot sim --duration 10
      robot-rl deploy ARTIFACT --robot sim --ros            (sim_robot_node + policy_node)
      robot-rl deploy ARTIFACT --robot ros --ros-params-file launch/config/arm7.yaml
    """

    artifact: Annotated[Path, tyro.conf.Positional]
    """Exported artifact folder (policy.json, policy.onnx, ...)."""
    robot: Literal["sim", "ros"] = "sim"
    """sim: the built-in arm simulated in real time; ros: an arm behind ros2_control topics
    (implies --ros)."""
    ros: bool = False
    """Run the ROS 2 nodes (policy_node, and sim_robot_node for --robot sim) as processes,
    as ``ros2 launch robot_rl sim_deploy.launch.py`` would; their rates, topics and gate
    come from the parameters file (--ros-params-file), not from --deploy.*."""
    duration: float | None = None
    """Seconds to run (default: until Ctrl-C)."""
    deploy: DeployConfig = dataclasses.field(default_factory=DeployConfig)
    """Loop rate, gate, watchdog and goal."""
    sim: SimRobotConfig = dataclasses.field(default_factory=SimRobotConfig)
    """The simulated arm: interface, latency, noise, delay, held-out dynamics."""
    sim_process: bool = True
    """Simulate the arm in a process of its own, as a real arm's driver runs
    (--no-sim-process: on a thread of this process, sharing its GIL with the loop)."""
    backend: Literal["onnx", "torchscript"] = "onnx"
    """Inference backend of the artifact."""
    ros_params_file: Path | None = None
    """ROS 2 parameters YAML for the nodes (default: the built-in arm's)."""
    domain_id: int | None = None
    """ROS_DOMAIN_ID for the nodes (default: the environment's)."""
    summary_json: Path | None = None
    """Also write the timing summary here."""


def deploy_cmd(cfg: DeployCommandConfig) -> None:
    console = Console()
    if cfg.duration is not None and not cfg.duration > 0:
        raise ConfigError("--duration must be positive")
    if cfg.ros or cfg.robot == "ros":
        from robot_rl.hardware.ros.launcher import launch_nodes

        code = launch_nodes(cfg.artifact, with_sim=cfg.robot == "sim", duration=cfg.duration,
                            params_file=cfg.ros_params_file, domain_id=cfg.domain_id,
                            rate_hz=None, console=console)
        if code:
            raise SystemExit(code)
        return
    from robot_rl.export import load_policy
    from robot_rl.hardware.runtime import DeployRuntime
    from robot_rl.hardware.sim_robot import SimRobot
    from robot_rl.hardware.sim_robot_process import SimRobotProcess

    policy = load_policy(cfg.artifact, backend=cfg.backend, seed=cfg.deploy.seed)
    sim = cfg.sim
    with (SimRobotProcess(sim) if cfg.sim_process else SimRobot(sim)) as robot:
        runtime = DeployRuntime(policy, robot, cfg.deploy, log=lambda m: console.print(
            f"[yellow]deploy:[/] {m}"))
        goal = runtime.goal
        console.print(f"deploy {policy.meta['task']} on the simulated {sim.robot} "
                      f"({sim.interface} interface): loop {cfg.deploy.rate_hz:g} Hz, policy "
                      f"{cfg.deploy.rate_hz / runtime.decimation:g} Hz, gate "
                      f"{'on' if runtime.use_gate else 'off'}"
                      + ("" if goal is None else f", goal {_vec(goal)}")
                      + (", until Ctrl-C" if cfg.duration is None else
                         f", {cfg.duration:g} s"))
        summary = runtime.run(cfg.duration)
        if goal is not None:
            summary["ee_goal_distance_m"] = float(math.dist(robot.ee_pos(), goal))
    print_summary(console, summary)
    if cfg.summary_json is not None:
        cfg.summary_json.write_text(json.dumps(summary, indent=2, default=float) + "\n")


def print_summary(console: Console, s: dict[str, Any]) -> None:
    """The runtime's exit summary as a table."""
    table = Table(title="deploy summary", show_header=False, box=None)
    table.add_column(style="bold")
    table.add_column()

    def pct(key: str) -> str:
        p50, p99, mx = s.get(key, (math.nan,) * 3)
        return f"p50 {p50:.1f}  p99 {p99:.1f}  max {mx:.1f} µs"

    table.add_row("ticks / policy steps", f"{s['ticks']} / {s['policy_steps']} "
                  f"({s['rate_hz']:g} Hz / {s['policy_hz']:g} Hz)")
    if "period_error_us" in s:
        table.add_row("period error", pct("period_error_us"))
        table.add_row("overruns / skipped ticks", f"{s['overruns']} / {s.get('skipped_ticks', 0)}")
    table.add_row("tick compute", pct("compute_us"))
    table.add_row("policy inference", pct("inference_us"))
    if s.get("gate"):
        table.add_row("gate", pct("gate_us") + f"  rejections {s['gate_rejections']}, "
                      f"holds {s['gate_holds']}")
    table.add_row("hold ticks", str(s["hold_ticks"]))
    table.add_row("policy steps waited for", str(s.get("policy_waits", 0)))
    table.add_row("watchdog trips / e-stops", f"{s['watchdog_trips']} / {s['estops']}")
    table.add_row("bad readings dropped", str(s["bad_readings"]))
    shield = ", ".join(f"{k} {v}" for k, v in s["shield"].items() if v) or "none"
    table.add_row("shield interventions", shield)
    table.add_row("task success (last step)", str(s["success"]))
    if "ee_goal_distance_m" in s:
        table.add_row("end effector to goal", f"{s['ee_goal_distance_m'] * 100:.1f} cm")
    console.print(table)


def _vec(v: Any) -> str:
    return "(" + ", ".join(f"{x:.3f}" for x in v) + ")"
