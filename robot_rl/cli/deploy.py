"""``robot-rl deploy``: run an exported policy on the simulated arm or through ROS 2."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
from pathlib import Path
from typing import Annotated, Any, Literal

import tyro
from rich.console import Console

from robot_rl.errors import ConfigError
from robot_rl.hardware.configs import DeployConfig, SimCameraConfig, SimRobotConfig
from robot_rl.hardware.summary import print_summary


@dataclasses.dataclass(kw_only=True)
class DeployCommandConfig:
    """Run an exported policy on a robot at a fixed rate, behind the gate and the shield.

    Examples:
      robot-rl deploy runs/demo/reach/export --robot sim --duration 10
      robot-rl deploy runs/pixel_student --robot sim --episodes 20   (push through cameras)
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
    """Seconds to run (default: until Ctrl-C); with --episodes, seconds per episode (default:
    the task's episode length)."""
    episodes: int | None = None
    """Run this many episodes on the simulated arm, each in a new scene drawn as the task's
    resets draw it (objects, goal), each for --duration (default: the task's episode length)
    and judged at its end, as training judges an episode; prints the success rate and when
    each first reached the goal. A policy that sees cameras (a pixel student) gets them rendered
    from the simulated arm's scene (--camera.*)."""
    camera: SimCameraConfig = dataclasses.field(default_factory=SimCameraConfig)
    """The simulated cameras: frame rate, latency, dropped frames (policies that see
    cameras)."""
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
    telemetry: Literal["none", "rerun"] = "none"
    """rerun: stream the loop's telemetry to Rerun from a thread outside the loop (joint
    positions and commands, the policy's actions, each shield layer's interventions, period
    error, inference and gate time, holds and e-stops): into --telemetry-out, else Rerun's
    viewer (its web viewer without a display)."""
    telemetry_out: Path | None = None
    """With --telemetry rerun: save the recording as this .rrd file."""
    view: bool = False
    """Watch the simulated arm in MuJoCo's viewer as the loop reads it (its joints, the goal
    and the shield's workspace box), from a thread of the viewer's own (needs a display: a
    desktop or xvfb-run)."""


def deploy_cmd(cfg: DeployCommandConfig) -> None:
    console = Console()
    if cfg.duration is not None and not cfg.duration > 0:
        raise ConfigError("--duration must be positive")
    if cfg.telemetry_out is not None and cfg.telemetry != "rerun":
        raise ConfigError("--telemetry-out needs --telemetry rerun")
    if cfg.ros or cfg.robot == "ros":
        if cfg.episodes is not None:
            raise ConfigError("--episodes runs on the simulated arm in this process (--robot "
                              "sim without --ros)")
        from robot_rl.hardware.ros.launcher import launch_nodes

        code = launch_nodes(cfg.artifact, with_sim=cfg.robot == "sim", duration=cfg.duration,
                            params_file=cfg.ros_params_file, domain_id=cfg.domain_id,
                            rate_hz=None, console=console)
        if code:
            raise SystemExit(code)
        return
    from robot_rl.export import load_policy

    policy = load_policy(cfg.artifact, backend=cfg.backend, seed=cfg.deploy.seed)
    if cfg.episodes is not None and cfg.episodes < 1:
        raise ConfigError("--episodes must be >= 1")
    summary = _run_sim(cfg, policy, console)
    print_summary(console, summary)
    if cfg.summary_json is not None:
        cfg.summary_json.write_text(json.dumps(summary, indent=2, default=float) + "\n")


def _run_sim(cfg: DeployCommandConfig, policy: Any, console: Console) -> dict[str, Any]:
    """The policy on the simulated arm (in its task's scene, with cameras, for episodes or a
    policy that sees cameras); returns the runtime's summary."""
    from robot_rl.hardware.cameras.sim_camera import SimArmCameras
    from robot_rl.hardware.observation import task_config_from_meta
    from robot_rl.hardware.runtime import DeployRuntime
    from robot_rl.hardware.sim_robot import SimRobot
    from robot_rl.hardware.sim_robot_process import SimRobotProcess
    from robot_rl.hardware.sim_task import SimTaskEpisodes, run_episodes

    sim = cfg.sim = sim_arm(cfg.sim, policy.meta)
    task_cfg = task_config_from_meta(policy.meta)
    sees = task_cfg.cameras if policy.images else None
    scene = task_cfg if sees is not None or cfg.episodes is not None else None
    log = lambda m: console.print(f"[yellow]deploy:[/] {m}")  # noqa: E731
    with contextlib.ExitStack() as stack:
        cameras = None
        if cfg.sim_process:
            robot: Any = stack.enter_context(SimRobotProcess(
                sim, scene=scene, cameras=sees, camera_cfg=cfg.camera))
            if sees is not None:
                cameras = robot.camera_dict()
        else:
            robot = stack.enter_context(SimRobot(sim, scene=scene))
            if sees is not None:
                cameras = stack.enter_context(SimArmCameras(robot, sees, cfg.camera)).as_dict()
        runtime = DeployRuntime(policy, robot, cfg.deploy, log=log, cameras=cameras)
        if cfg.view:
            stack.callback(_view_arm(cfg, runtime, task_cfg).close)
        if cfg.telemetry == "rerun":
            from robot_rl.hardware.telemetry import rerun_telemetry

            stack.callback(rerun_telemetry(runtime, cfg.telemetry_out, console.print).close)
        goal = runtime.goal
        seen = "" if sees is None else (
            f", cameras {', '.join(sees.names)} at {sees.width}x{sees.height} "
            f"{cfg.camera.fps:g} fps (latency {cfg.camera.latency * 1e3:g} ms, drops "
            f"{cfg.camera.drop_prob:.0%})")
        console.print(f"deploy {policy.meta['task']} on the simulated {sim.robot} "
                      f"({sim.interface} interface): loop {cfg.deploy.rate_hz:g} Hz, policy "
                      f"{cfg.deploy.rate_hz / runtime.decimation:g} Hz, gate "
                      f"{'on' if runtime.use_gate else 'off'}{seen}"
                      + ("" if goal is None or cfg.episodes else f", goal {_vec(goal)}")
                      + (f", {cfg.episodes} episodes" if cfg.episodes else
                         ", until Ctrl-C" if cfg.duration is None else
                         f", {cfg.duration:g} s"), highlight=False)
        if cfg.episodes is None:
            summary = runtime.run(cfg.duration)
            if goal is not None:
                summary["ee_goal_distance_m"] = float(math.dist(robot.ee_pos(), goal))
            return summary

        def report(i: int, r: Any) -> None:
            reached = ("never reached" if r.first_success is None else
                       f"first reached after {r.first_success:.1f} s")
            console.print(f"episode {i + 1}/{cfg.episodes}: "
                          + (f"success at the end of {r.seconds:.1f} s ({reached})" if r.success
                             else f"failure at the end of {r.seconds:.1f} s ({reached})"
                             if r.started else "never started (no fresh joint states or frames)")
                          + (f", {r.holds} hold(s)" if r.holds else ""), highlight=False)

        results = run_episodes(runtime, robot, SimTaskEpisodes(task_cfg, cfg.deploy.seed),
                               cfg.episodes, cfg.duration, seed=cfg.deploy.seed,
                               on_episode=report)
        summary = runtime.summary()
        summary["episodes"] = [dataclasses.asdict(r) for r in results]
        summary["episode_success_rate"] = sum(r.success for r in results) / len(results)
        return summary


def sim_arm(sim: SimRobotConfig, meta: dict[str, Any]) -> SimRobotConfig:
    """The simulated arm's config for an artifact: its own arm (``--sim.robot`` left at its
    default follows the artifact; another arm is refused)."""
    arm = meta["robot"]["name"]
    if sim.robot == arm:
        return sim
    if sim.robot != SimRobotConfig().robot:
        raise ConfigError(f"--sim.robot {sim.robot}: the policy was trained on {arm}, whose "
                          f"joints it commands")
    return dataclasses.replace(sim, robot=arm)


def _view_arm(cfg: DeployCommandConfig, runtime: Any, task_cfg: Any) -> Any:
    """A live view of the arm as the runtime reads it (the scene's objects are not read)."""
    from robot_rl.hardware.sim_robot import build_model
    from robot_rl.robots import get_robot
    from robot_rl.sim.view import ArmView

    spec = get_robot(cfg.sim.robot)

    def q() -> Any:
        r = runtime.reading
        return None if r is None else r.q

    s = task_cfg.safety
    return ArmView(build_model(cfg.sim, spec), spec.joint_names, q, lambda: runtime.goal,
                   workspace=(s.workspace_lo, s.workspace_hi),
                   title=f"robot-rl deploy {runtime.policy.meta['task']} (simulated arm)")


def _vec(v: Any) -> str:
    return "(" + ", ".join(f"{x:.3f}" for x in v) + ")"
