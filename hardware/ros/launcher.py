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

from rich.console import Console

from robot_rl.errors import ConfigError


def default_params_file() -> Path:
    """The built-in arm's parameters YAML (installed with the package)."""
    # launch/ is installed as robot_rl/launch, beside robot_rl/hardware (also in a checkout)
    path = Path(__file__).resolve().parents[2] / "launch" / "config" / "arm7.yaml"
    if not path.is_file():
        raise ConfigError(f"the default parameters file {path} is missing from the install")
    return path


def node_command(module: str, params_file: Path, overrides: dict[str, object]) -> list[str]:
    """The command line of one node, as launch_ros builds it; ``module`` is a node module of
    this package (``policy_node``) or a dotted path (``robot_rl.recording.teleop_node``)."""
    path = module if "." in module else f"robot_rl.hardware.ros.{module}"
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
    params = params_file or default_params_file()
    if not params.is_file():
        raise ConfigError(f"parameters file {params} does not exist")
    env = dict(os.environ)
    if domain_id is not None:
        env["ROS_DOMAIN_ID"] = str(domain_id)
    overrides: dict[str, object] = {"artifact": artifact.resolve(), "autostart": with_sim}
    if rate_hz is not None:
        overrides["rate_hz"] = float(rate_hz)
    procs: list[tuple[str, subprocess.Popen]] = []
    if with_sim:
        meta = json.loads((artifact / "policy.json").read_text())
        procs.append(("sim_robot_node", subprocess.Popen(
            node_command("sim_robot_node", params, sim_camera_overrides(meta)), env=env)))
    procs.append(("policy_node", subprocess.Popen(
        node_command("policy_node", params, overrides), env=env)))
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
    for name, p in reversed(procs):  # policy node first: its final hold reaches the arm
        if not stop_node(p):
            console.print(f"[red]{name} did not stop in 10 s; killed[/]")
        if p.returncode not in (0, -signal.SIGINT) and code == 0:
            code = p.returncode
            console.print(f"[red]{name} exited with status {p.returncode}[/]")
    return code
