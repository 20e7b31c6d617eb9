"""``robot-rl sysid record | fit | gap``: identify the arm's dynamics from its own recordings,
and predict what they do to a policy."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

import tyro
from rich.console import Console
from rich.table import Table

from robot_rl.errors import ConfigError
from robot_rl.hardware.configs import SimRobotConfig
from robot_rl.sysid.configs import FitConfig, RecordConfig, ReplayConfig
from robot_rl.work_progress import WorkProgress


@dataclasses.dataclass(kw_only=True)
class SysidRecordConfig:
    """Play an excitation trajectory (multisine around home, then steps) on the arm through
    the safety shield, and record every command sent and every joint reading into a dataset
    (one episode per call; a second call appends).

    Examples:
      robot-rl sysid record --out data/arm_sysid
      robot-rl sysid record --out data/held_out --sim.mass-scale 1.3 --sim.actuation-delay 0.004
      robot-rl sysid record --out data/held_out --ros --sim.mass-scale 1.3   (through ROS 2)
      robot-rl sysid record --out data/my_arm --robot ros --ros-params-file my_arm.yaml
    """

    out: Path
    """Dataset folder (created, or appended to)."""
    robot: Literal["sim", "ros"] = "sim"
    """sim: the built-in arm simulated in real time (--sim.*: its held-out dynamics); ros: an
    arm behind ros2_control topics (implies --ros; the arm moves home and plays the
    excitation as soon as its JointStates arrive). An arm's own logs can also be fitted
    directly from its rosbag2 recordings (robot-rl sysid fit BAG...)."""
    ros: bool = False
    """Record through ROS 2: sysid_node (and, with --robot sim, sim_robot_node) as processes,
    as ``ros2 launch robot_rl sysid.launch.py`` starts them; topics and joint names come
    from the parameters file (--ros-params-file)."""
    ros_params_file: Path | None = None
    """Parameters YAML of the nodes (default: the built-in arm's launch/config/arm7.yaml)."""
    domain_id: int | None = None
    """ROS_DOMAIN_ID of the nodes (default: the environment's)."""
    record: RecordConfig = dataclasses.field(default_factory=RecordConfig)
    """The excitation (duration, rate, band, amplitude, speed, steps) and the shield."""
    sim: SimRobotConfig = dataclasses.field(default_factory=SimRobotConfig)
    """The simulated arm: latency, noise, delay, held-out dynamics."""
    sim_process: bool = True
    """Simulate the arm in a process of its own, as a real arm's driver runs."""


@dataclasses.dataclass(kw_only=True)
class SysidFitConfig:
    """Fit the arm's dynamics (link masses, joint damping, armature, dry friction, actuator
    gains, command delay) to recordings by CMA-ES over batched replays, and write the
    parameter file that make_env and robot-rl train take (--env.identified FILE).

    Examples:
      robot-rl sysid fit data/arm_sysid --out arm7_identified.json
      robot-rl sysid fit data/arm_sysid --fit.params link_mass actuator_gain --fit.shared link_mass
      robot-rl sysid fit run1/ run2/ --joint-states /joint_states       (rosbag2 / MCAP bags)
    """

    data: Annotated[tuple[Path, ...], tyro.conf.Positional]
    """Recording datasets (robot-rl sysid record) or rosbag2/MCAP bags of the arm's joint
    states (with efforts, where it reports them) and position commands."""
    robot: str = "arm7"
    """Registry name of the robot the recordings are of."""
    out: Path = Path("identified.json")
    """Parameter file to write."""
    fit: FitConfig = dataclasses.field(default_factory=FitConfig)
    """What is fitted, and how hard CMA-ES tries."""
    replay: ReplayConfig = dataclasses.field(default_factory=ReplayConfig)
    """How the recordings are replayed (segment length, largest delay, effort weight)."""
    episodes: tuple[int, ...] | None = None
    """Episodes of a recording dataset to use (default: all)."""
    joint_states: str = "/joint_states"
    """Bags: the JointState topic."""
    commands: str = "/forward_position_controller/commands"
    """Bags: the Float64MultiArray topic of joint position commands."""
    joint_names: tuple[str, ...] = ()
    """Bags: the joints as the driver names them in the JointStates, one per arm joint in
    the arm's order (a profile's joint_names, e.g. fr3_joint1 ...; default: the arm's own)."""
    angle_unit: Literal["rad", "deg", "normalized"] = "rad"
    """Bags: the unit of positions in them (a profile's position_unit; normalized: LeRobot's
    -100 .. 100 across each joint's range)."""
    backend: Literal["cpu", "warp"] = "cpu"
    """Simulator of the replays (warp: MuJoCo Warp on --device)."""
    device: str = "cpu"
    """Device of the warp backend (cuda, cuda:N, or cpu)."""


@dataclasses.dataclass(kw_only=True)
class SysidGapConfig:
    """Predict a policy's sim-to-real gap before it runs on the arm: the same evaluation
    episodes in simulation on the identified arm and on the nominal one, without domain
    randomization: success, return, cost, and how often each shield layer steps in.

    Example: robot-rl sysid gap runs/reach__sac__0__20261125-101500 arm7_identified.json
    """

    path: Annotated[Path, tyro.conf.Positional]
    """Run directory or checkpoint (robot-rl train), or exported artifact (policy.json)."""
    params: Annotated[Path, tyro.conf.Positional]
    """Identified-dynamics file (robot-rl sysid fit)."""
    episodes: int = 32
    """Episodes on each arm."""
    num_envs: int = 16
    """Parallel envs."""
    seed: int = 100
    """Seed of the evaluation episodes (the same on both arms)."""


def record_cmd(cfg: SysidRecordConfig) -> None:
    from robot_rl.hardware.sim_robot import SimRobot
    from robot_rl.hardware.sim_robot_process import SimRobotProcess
    from robot_rl.sysid.dataset import save_recording
    from robot_rl.sysid.record import record_steady

    console = Console()
    if cfg.ros or cfg.robot == "ros":
        _record_ros(cfg, console)
        return
    say = lambda m: console.print(f"[yellow]sysid record:[/] {m}")  # noqa: E731
    arm: Any = SimRobotProcess(cfg.sim) if cfg.sim_process else SimRobot(cfg.sim)
    with arm as robot:  # record_excitation refuses an interface other than position
        rec = record_steady(robot, cfg.record, log=say)
    index = save_recording(rec, cfg.out)
    s = rec.streams
    console.print(
        f"recorded episode {index} into {cfg.out}: {len(s.js_t)} joint readings and "
        f"{len(s.cmd_t)} commands over {rec.seconds:.1f} s; reading age on arrival "
        f"{1e3 * rec.sensing_latency:.2f} ms (median); the shield changed {rec.shield_moved} "
        f"commands; {rec.late_ticks} late ticks; {rec.gaps} late readings", markup=False)


NODE_EXCITATION = ("rate", "duration", "amplitude", "speed", "step_size", "seed")
"""The excitation's fields sysid_node takes as parameters (``rate`` as ``rate_hz``)."""


def _record_ros(cfg: SysidRecordConfig, console: Console) -> None:
    """sysid_node (after sim_robot_node, with --robot sim) as processes, until it has saved
    the episode or failed."""
    import subprocess

    from robot_rl.hardware.ros import require_rclpy
    from robot_rl.hardware.ros.launcher import (
        node_command,
        node_setup,
        run_nodes,
        sim_node_overrides,
    )

    require_rclpy()
    rec, ex = cfg.record, cfg.record.excitation
    default = RecordConfig()
    kept = [f"excitation.{f.name}" for f in dataclasses.fields(ex)
            if f.name not in NODE_EXCITATION
            and getattr(ex, f.name) != getattr(default.excitation, f.name)]
    kept += [f.name for f in dataclasses.fields(rec)
             if f.name != "excitation" and getattr(rec, f.name) != getattr(default, f.name)]
    if kept:
        raise ConfigError(f"sysid_node has no parameter for --record.{', --record.'.join(kept)}"
                          f" (it takes {', '.join(NODE_EXCITATION)}); drop them or record "
                          "without --ros")
    if cfg.robot == "ros" and cfg.sim != SimRobotConfig():
        raise ConfigError("--sim.* configures the simulated arm; --robot ros records the arm "
                          "behind the topics")
    params, env = node_setup(cfg.ros_params_file, cfg.domain_id, cfg.sim.robot)
    overrides: dict[str, object] = {
        "out": cfg.out.resolve(), "autostart": True,
        **{("rate_hz" if k == "rate" else k): getattr(ex, k) for k in NODE_EXCITATION}}
    procs: list[tuple[str, subprocess.Popen]] = []
    if cfg.robot == "sim":
        procs.append(("sim_robot_node", subprocess.Popen(
            node_command("sim_robot_node", params, sim_node_overrides(cfg.sim)), env=env)))
    procs.append(("sysid_node", subprocess.Popen(
        node_command("sysid_node", params, overrides), env=env)))
    code = run_nodes(procs, None, params, console)
    if code:
        raise SystemExit(code)
    console.print(f"the recording is in {cfg.out} (robot-rl sysid fit {cfg.out})",
                  markup=False)


def fit_cmd(cfg: SysidFitConfig) -> None:
    from robot_rl.robots import get_robot
    from robot_rl.sysid.fit import fit, identified
    from robot_rl.sysid.replay import Replay

    console = Console()
    if not cfg.data:
        raise ConfigError("name at least one recording (a dataset folder or a bag)")
    robot = get_robot(cfg.robot)
    streams, latency = _load(cfg, robot)
    replay = Replay(streams, robot, cfg.replay, backend=cfg.backend, device=cfg.device)
    console.print(f"{len(streams)} recording(s), {replay.segments} segments of "
                  f"{cfg.replay.segment:g} s; fitting {', '.join(cfg.fit.params)}"
                  + (f" ({', '.join(cfg.fit.shared)} shared by all joints)"
                     if cfg.fit.shared else ""), markup=False)
    result = fit(replay, cfg.fit, log=lambda m: console.print(f"  {m}", markup=False))
    params = identified(result, replay, sensing_latency=latency,
                        source={"data": [str(p) for p in cfg.data]})
    params.save(cfg.out)
    _print_fit(console, result, robot.joint_names, replay.cfg.physics_dt, latency)
    console.print(f"wrote {cfg.out}  (robot-rl train --env.identified {cfg.out})",
                  markup=False)


def _load(cfg: SysidFitConfig, robot: Any) -> tuple[list[Any], float]:
    """The recordings' streams, from datasets or bags, and the readings' median age."""
    import numpy as np

    from robot_rl.recording.rosbag_import import read_bag
    from robot_rl.sysid.dataset import load_recordings

    streams, ages = [], []
    for path in cfg.data:
        if not path.exists():
            raise ConfigError(f"no recording at {path}")
        if (path / "meta" / "info.json").is_file():
            got, age = load_recordings(path, robot, None if cfg.episodes is None
                                       else list(cfg.episodes))
            streams += got
            ages.append(age)
        else:
            streams.append(read_bag(path, robot, cfg.joint_states, cfg.commands,
                                    cfg.joint_names, cfg.angle_unit))
    return streams, float(np.median(ages)) if ages else 0.0


def _print_fit(console: Console, r: Any, joints: tuple[str, ...], dt: float,
               latency: float) -> None:
    table = Table(title="identified dynamics (value +- std)", title_justify="left")
    table.add_column("joint")
    for p in r.values:
        table.add_column(p, justify="right")
    for i, j in enumerate(joints):
        table.add_row(j, *[f"{v[i]:.3f}+-{r.std[p][i]:.3f}" for p, v in r.values.items()])
    console.print(table)
    console.print(
        f"command delay {r.delay} physics steps ({1e3 * r.delay * dt:.1f} ms); reading age "
        f"{1e3 * latency:.2f} ms; joint position RMS error nominal {1e3 * r.rms_nominal:.3f} "
        f"mrad -> identified {1e3 * r.rms_fit:.3f} mrad "
        f"({r.rms_nominal / max(r.rms_fit, 1e-12):.1f}x lower); {r.evaluations} replays in "
        f"{r.seconds:.1f} s", markup=False)


def gap_cmd(cfg: SysidGapConfig) -> None:
    from robot_rl.sim.identified import IdentifiedDynamics

    console = Console()
    if cfg.episodes < 1 or cfg.num_envs < 1:
        raise ConfigError("--episodes and --num-envs must be >= 1")
    if not cfg.path.exists():
        raise ConfigError(f"no run, checkpoint or artifact at {cfg.path}")
    params = IdentifiedDynamics.load(cfg.params)  # refuses a bad file before any evaluation
    arms: dict[str, dict[str, Any]] = {
        "nominal": {"identified": None},
        "identified": {"identified": str(cfg.params), "identified_dr": None}}
    results = {}
    for name, overrides in arms.items():
        with WorkProgress(console, f"sysid gap: the {name} arm", cfg.episodes,
                          "episodes") as work:
            results[name] = _evaluate_on(cfg, overrides, on_episodes=lambda n, rate: work.update(
                n, f"success {rate:.0%}"))
    a, b = results["nominal"], results["identified"]
    table = Table(title=f"{cfg.path}: {a.episodes} episodes on each arm, no randomization; "
                        f"the identified arm of {cfg.params} ({params.robot})",
                  title_justify="left")
    for col in ("metric", "nominal arm", "identified arm", "change"):
        table.add_column(col, justify="left" if col == "metric" else "right")
    rows = [("success rate", a.success_rate, b.success_rate, "{:.1%}"),
            ("return (mean)", a.return_mean, b.return_mean, "{:.2f}"),
            ("episode cost (mean)", a.cost_mean, b.cost_mean, "{:.3f}"),
            ("episode length (mean)", a.length_mean, b.length_mean, "{:.1f}")]
    rows += [(f"safety/{k} (steps / episode)", a.interventions.get(k, 0.0),
              b.interventions.get(k, 0.0), "{:.2f}") for k in a.interventions]
    for name, x, y, fmt in rows:
        table.add_row(name, fmt.format(x), fmt.format(y), ("{:+.1%}" if "%" in fmt else
                                                           "{:+.2f}").format(y - x))
    console.print(table)
    console.print(f"predicted gap: success {a.success_rate:.1%} -> {b.success_rate:.1%} on the "
                  f"identified arm", markup=False)


def _evaluate_on(cfg: SysidGapConfig, overrides: dict[str, Any],
                 on_episodes: Callable[[int, float], None] | None = None) -> Any:
    """The policy's evaluation in an env with ``overrides`` (no randomization), its
    episodes counted to ``on_episodes``."""
    import dataclasses as dc

    from robot_rl.checkpoint import checkpoint_kind
    from robot_rl.evaluate import evaluate, evaluate_agent
    from robot_rl.kinds.eval_config import EvalConfig
    from robot_rl.kinds.evaluation import artifact_policy
    from robot_rl.runner import load_agent
    from robot_rl.sim import make_env

    n = min(cfg.num_envs, cfg.episodes)
    if (cfg.path / "policy.json").is_file():
        env, act, _, loaded = artifact_policy(
            EvalConfig(path=cfg.path, episodes=cfg.episodes, num_envs=n, dr="off",
                       seed=cfg.seed), overrides)
        return evaluate(act, env, cfg.episodes, seed=cfg.seed,
                        episode_start=lambda done: loaded.reset(done.numpy()),
                        on_episodes=on_episodes)
    kind = checkpoint_kind(cfg.path)
    if kind != "sac":
        raise ConfigError(f"{cfg.path} is a {kind!r} run; sysid gap takes robot-rl train runs "
                          "and exported artifacts")
    agent, train_cfg, _ = load_agent(cfg.path)
    env = make_env(dc.replace(train_cfg.env, **overrides), n, backend=train_cfg.backend,
                   device=train_cfg.device, dr="off", seed=cfg.seed)
    return evaluate_agent(agent, env, cfg.episodes, seed=cfg.seed, on_episodes=on_episodes)
