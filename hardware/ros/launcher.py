"""Start the deploy nodes as processes, as the launch files do (``launch`` itself has no
wheels): ``robot-rl deploy ARTIFACT --ros [--robot sim]``.

Both nodes get the same parameters file as ``sim_deploy.launch.py``; on Ctrl-C or at the
end of ``duration`` the policy node is stopped first (it publishes its final hold), then the
simulated arm. For an artifact that sees cameras, the simulated arm stands in the artifact's
task scene and publishes the cameras it names at its resolution (``sim_robot_node``'s
``task``, ``cameras``, ``camera_*``), where the policy node reads them by default.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from robot_rl.errors import ConfigError

if TYPE_CHECKING:
    from robot_rl.hardware.configs import SimRobotConfig


def config_dir() -> Path:
    """``launch/config``: the nodes' parameter files, one per arm (installed with the
    package)."""
    # launch/ is installed as robot_rl/launch, beside robot_rl/hardware (also in a checkout)
    return Path(__file__).resolve().parents[2] / "launch" / "config"


def default_params_file(robot: str = "arm7") -> Path:
    """The parameters YAML of arm ``robot`` (``launch/config/<robot>.yaml``): its joint
    names, controller topics and rates."""
    path = config_dir() / f"{robot}.yaml"
    if not path.is_file():
        have = sorted(p.stem for p in config_dir().glob("*.yaml"))
        raise ConfigError(f"no parameters file for robot {robot!r} ({path}; there are: "
                          f"{', '.join(have)}): copy one, set its joint names and controller "
                          f"topics, and give it with --ros-params-file")
    return path


def node_command(module: str, params_file: Path, overrides: dict[str, object]) -> list[str]:
    """The command line of one node, as launch_ros builds it; ``module`` is a node module of
    ``robot_rl.nodes`` (``policy_node``) or a dotted path."""
    path = module if "." in module else f"robot_rl.nodes.{module}"
    cmd = [sys.executable, "-m", path, "--ros-args",
           "--params-file", str(params_file)]
    for k, v in overrides.items():
        cmd += ["-p", f"{k}:={str(v).lower() if isinstance(v, bool) else v}"]
    return cmd


def stop_node(p: subprocess.Popen, timeout: float = 10.0) -> bool:
    """SIGINT (the node publishes its final hold and exits), SIGKILL after ``timeout``;
    False if it had to be killed."""
    if p.poll() is not None:
        return True
    p.send_signal(signal.SIGINT)
    try:
        p.wait(timeout=timeout)
        return True
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        return False


def node_setup(params_file: Path | None, domain_id: int | None,
               robot: str = "arm7") -> tuple[Path, dict[str, str]]:
    """The parameters file the nodes get (``robot``'s by default; it must exist) and their
    environment (``ROS_DOMAIN_ID`` where given)."""
    params = params_file or default_params_file(robot)
    if not params.is_file():
        raise ConfigError(f"parameters file {params} does not exist")
    env = dict(os.environ)
    if domain_id is not None:
        env["ROS_DOMAIN_ID"] = str(domain_id)
    return params, env


def sim_camera_overrides(meta: dict) -> dict[str, object]:
    """``sim_robot_node`` parameters that show a camera-seeing artifact its scene and cameras
    (none for an artifact that sees no camera)."""
    cams = meta.get("cameras") or []
    if not cams:
        return {}
    first = cams[0]
    return {"task": meta["task"], "cameras": "[" + ",".join(c["name"] for c in cams) + "]",
            "camera_width": int(first["width"]), "camera_height": int(first["height"]),
            "camera_depth": bool(first["depth"])}


def launch_nodes(artifact: Path, *, with_sim: bool, duration: float | None,
                 params_file: Path | None, domain_id: int | None, rate_hz: float | None,
                 console: Console) -> int:
    """Run the nodes until ``duration`` passes, a node exits, or Ctrl-C; returns the first
    non-zero exit status (0 if all ended cleanly)."""
    from robot_rl.hardware.ros import require_rclpy

    require_rclpy()
    if not (artifact / "policy.json").is_file():
        raise ConfigError(f"no policy.json in {artifact} (is it an exported artifact?)")
    meta = json.loads((artifact / "policy.json").read_text())
    params, env = node_setup(params_file, domain_id, meta["robot"]["name"])
    overrides: dict[str, object] = {"artifact": artifact.resolve(), "autostart": with_sim}
    if rate_hz is not None:
        overrides["rate_hz"] = float(rate_hz)
    procs: list[tuple[str, subprocess.Popen]] = []
    if with_sim:
        procs.append(("sim_robot_node", subprocess.Popen(
            node_command("sim_robot_node", params, sim_camera_overrides(meta)), env=env)))
    procs.append(("policy_node", subprocess.Popen(
        node_command("policy_node", params, overrides), env=env)))
    return run_nodes(procs, duration, params, console)


def run_nodes(procs: list[tuple[str, subprocess.Popen]], duration: float | None,
              params: Path, console: Console) -> int:
    """Wait until ``duration`` passes, a node exits, or Ctrl-C; then stop the nodes, the
    last started first (the commanding node's final hold reaches the arm before the arm
    goes). Returns the first non-zero exit status (0 if all ended cleanly)."""
    console.print(f"started {', '.join(n for n, _ in procs)} (params {params}); Ctrl-C stops")
    start = time.monotonic()
    try:
        while duration is None or time.monotonic() - start < duration:
            if any(p.poll() is not None for _, p in procs):
                break
            time.sleep(0.1)
    except KeyboardInterrupt:
        pass
    code = 0
    for name, p in reversed(procs):
        if not stop_node(p):
            console.print(f"[red]{name} did not stop in 10 s; killed[/]")
        if p.returncode not in (0, -signal.SIGINT) and code == 0:
            code = p.returncode
            console.print(f"[red]{name} exited with status {p.returncode}[/]")
    return code


def sim_node_overrides(cfg: SimRobotConfig) -> dict[str, object]:
    """``sim_robot_node`` parameters of a simulated arm configured as ``cfg`` (its held-out
    dynamics, latency, noise); the node has no per-joint friction or initial pose."""
    if not isinstance(cfg.frictionloss, (int, float)) or cfg.init_q is not None:
        raise ConfigError("sim_robot_node takes one frictionloss for every joint and starts "
                          "at home: per-joint --sim.frictionloss and --sim.init-q need the "
                          "arm without --ros")
    out: dict[str, object] = {"robot": cfg.robot, "interface": cfg.interface, "seed": cfg.seed}
    for name in ("physics_dt", "sensing_latency", "actuation_delay", "q_noise_std",
                 "qd_noise_std", "mass_scale", "damping_scale", "frictionloss"):
        out[name] = _ros_float(getattr(cfg, name))
    for name, gains in (("kp", cfg.kp), ("kd", cfg.kd)):
        if gains is not None:
            out[name] = "[" + ",".join(_ros_float(g) for g in gains) + "]"
    return out


def _ros_float(v: float) -> str:
    """A double as a ``-p name:=value`` reads it: always with a point, never an exponent
    (YAML would read ``1e-05`` as a string and ``1`` as an integer)."""
    s = f"{float(v):.12f}".rstrip("0")
    return s + "0" if s.endswith(".") else s
