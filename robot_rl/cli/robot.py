"""``robot-rl robot import`` (a URDF as one of our arms) and ``robot-rl robot urdf`` (one of
our arms as a URDF)."""

from __future__ import annotations

import dataclasses
import time
import warnings
from pathlib import Path
from typing import Annotated, Literal

import tyro
from rich.console import Console
from rich.table import Table

from robot_rl.errors import ConfigError


@dataclasses.dataclass(kw_only=True)
class RobotImportConfig:
    """Import an arm from its URDF (a file, or the running ROS 2 system's
    /robot_description) as one of our arms: --env.robot NAME then trains, deploys and
    records on it.

    Example: robot-rl robot import ur5e.urdf --name ur5e --tip-link tool0
    """

    urdf: Annotated[Path | None, tyro.conf.Positional] = None
    """The URDF file (leave out with --topic)."""
    topic: str | None = None
    """Read the URDF from this topic of the running ROS 2 system instead (robot_state_publisher
    serves /robot_description, transient local); waits --wait seconds for it."""
    wait: float = 10.0
    """Seconds to wait for --topic's message."""
    name: str
    """The arm's name (--env.robot NAME)."""
    tip_link: str
    """The link the end effector is on (UR: tool0; Franka: fr3_hand_tcp)."""
    base_link: str | None = None
    """The link the arm's chain starts from (default: the URDF's root link)."""
    ee_offset: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """The end effector's position in the tip link's frame [m]."""
    gripper_joints: tuple[str, ...] = ()
    """Joints of the gripper, driven together by one position actuator (the first named
    is actuated; the others follow it)."""
    gripper_open: Literal["upper", "lower"] = "upper"
    """The limit of the first gripper joint at which the gripper is open (parallel fingers
    sliding apart: upper; a Robotiq 2F's knuckle: lower)."""
    search_path: tuple[Path, ...] = ()
    """Folders to find package://PKG/... meshes in (as DIR/PKG/...), after the ament index."""
    home: tuple[float, ...] | None = None
    """Home joint configuration [rad] (default: the middle of each joint's range)."""
    out: Path | None = None
    """Folder for NAME.xml and NAME.json (default: the imported-robots folder, where
    --env.robot NAME finds it; $ROBOT_RL_ROBOTS overrides it)."""


@dataclasses.dataclass(kw_only=True)
class RobotUrdfConfig:
    """Write one of our arms as a URDF (for robot_state_publisher, RViz, MoveIt).

    Example: robot-rl robot urdf arm7 --out arm7.urdf
    """

    robot: Annotated[str, tyro.conf.Positional] = "arm7"
    """The arm (robot-rl sim info lists them)."""
    out: Path | None = None
    """Write the URDF here (default: print it)."""


def read_topic(topic: str, wait: float) -> str:
    """The string on ``topic`` (a latched robot_description), within ``wait`` seconds."""
    try:
        import rclpy
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
        from std_msgs.msg import String
    except ImportError as e:
        raise ConfigError(f"--topic needs ROS 2's rclpy and std_msgs (the ros extra): {e}"
                          ) from None
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    try:
        node = rclpy.create_node("robot_rl_import", context=ctx)
        got: list[str] = []
        qos = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                         reliability=ReliabilityPolicy.RELIABLE)
        node.create_subscription(String, topic, lambda m: got.append(m.data), qos)
        executor = rclpy.executors.SingleThreadedExecutor(context=ctx)
        executor.add_node(node)
        deadline = time.monotonic() + wait
        while not got and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.1)
        if not got:
            raise ConfigError(f"no message on {topic} within {wait:g} s (is "
                              f"robot_state_publisher running, with this ROS_DOMAIN_ID?)")
        return got[0]
    finally:
        rclpy.shutdown(context=ctx)


def import_cmd(cfg: RobotImportConfig) -> None:
    from robot_rl.robots import imported_dir, registered_robots
    from robot_rl.robots.spec import RobotSpec
    from robot_rl.robots.urdf import UrdfWarning

    if (cfg.urdf is None) == (cfg.topic is None):
        raise ConfigError("give a URDF file or --topic (one of them)")
    if cfg.name in registered_robots():
        raise ConfigError(f"--name {cfg.name} is a built-in arm's name; give the import "
                          f"another")
    source: str | Path = read_topic(cfg.topic, cfg.wait) if cfg.topic is not None \
        else cfg.urdf  # type: ignore[assignment]
    folder = cfg.out or imported_dir()
    console = Console()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UrdfWarning)
        spec = RobotSpec.from_urdf(source, name=cfg.name, tip_link=cfg.tip_link,
                           base_link=cfg.base_link, ee_offset=cfg.ee_offset,
                           gripper_joints=cfg.gripper_joints, gripper_open=cfg.gripper_open,
                           search_paths=cfg.search_path,
                           home=cfg.home, out=folder / f"{cfg.name}.xml")
    for w in caught:
        console.print(f"warning: {w.message}", markup=False, highlight=False, soft_wrap=True)
    path = spec.save(folder / f"{cfg.name}.json")
    table = Table(title=f"{cfg.name}: {spec.num_joints} joints, end effector on "
                        f"{cfg.tip_link}", box=None)
    for col in ("joint", "range (rad or m)", "velocity", "effort", "home"):
        table.add_column(col)
    for i, joint in enumerate(spec.joint_names):
        table.add_row(joint, f"{spec.q_min[i]:+.3f} .. {spec.q_max[i]:+.3f}",
                      f"{spec.qd_max[i]:.3g}", f"{spec.tau_max[i]:.3g}", f"{spec.home[i]:+.3f}")
    console.print(table)
    if spec.gripper is not None:
        console.print(f"gripper: {', '.join(spec.gripper.joints)} (open "
                      f"{spec.gripper.open_ctrl:g}, closed {spec.gripper.closed_ctrl:g})")
    console.print(f"MJCF: {spec.mjcf}", soft_wrap=True)
    console.print(f"spec: {path}", soft_wrap=True)
    use = cfg.name if cfg.out is None else str(path)
    console.print(f"use it: robot-rl train --task reach --env.robot {use}", soft_wrap=True)


def urdf_cmd(cfg: RobotUrdfConfig) -> None:
    from robot_rl.robots import get_robot
    from robot_rl.robots.urdf_writer import write_urdf

    text = write_urdf(get_robot(cfg.robot))
    if cfg.out is None:
        print(text, end="")
        return
    cfg.out.parent.mkdir(parents=True, exist_ok=True)
    cfg.out.write_text(text)
    Console().print(f"URDF of {cfg.robot}: {cfg.out}", soft_wrap=True)
