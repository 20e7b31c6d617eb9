"""URDF in and out: arm7 written as URDF and imported has the same kinematics and limits and
runs our tasks; package:// meshes resolve (ament index, search paths) or fall back to
primitives with a warning; what import cannot use is refused with the reason."""

from __future__ import annotations

import struct
from pathlib import Path

import mujoco
import numpy as np
import pytest
import torch

from robot_rl.errors import ModelError
from robot_rl.robots import RobotSpec, get_robot, list_robots
from robot_rl.robots.urdf import UrdfWarning
from robot_rl.robots.urdf_writer import write_urdf
from robot_rl.sim import make_env

INERTIAL = ('<inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" '
            'ixz="0" iyz="0"/></inertial>')


def two_link(j2: str = 'type="revolute"', limit: str = 'lower="-1" upper="1.5" velocity="2" '
             'effort="30"', l1_geometry: str = '<box size="0.05 0.05 0.2"/>',
             extra: str = "") -> str:
    """A two-joint arm on a base, with a tool0 link at its tip."""
    return f"""<robot name="two">
  <link name="base">{INERTIAL}</link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/>
    <origin xyz="0 0 0.1"/><axis xyz="0 0 1"/><limit {limit}/></joint>
  <link name="l1">{INERTIAL}<collision><geometry>{l1_geometry}</geometry></collision>
    <visual><geometry><mesh filename="package://nowhere/meshes/l1.dae"/></geometry></visual></link>
  <joint name="j2" {j2}><parent link="l1"/><child link="l2"/><origin xyz="0 0 0.2"/>
    <axis xyz="0 1 0"/><limit lower="-2" upper="2" velocity="3" effort="20"/></joint>
  <link name="l2">{INERTIAL}</link>
  <joint name="tool" type="fixed"><parent link="l2"/><child link="tool0"/>
    <origin xyz="0.3 0 0"/></joint>
  <link name="tool0"/>
  {extra}
</robot>"""


def write_stl(path: Path) -> None:
    """A binary STL tetrahedron, 5 cm on a side."""
    v = np.array([[0, 0, 0], [0.05, 0, 0], [0, 0.05, 0], [0, 0, 0.05]], np.float32)
    faces = [(0, 2, 1), (0, 1, 3), (0, 3, 2), (1, 2, 3)]
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.write(b"\0" * 80 + struct.pack("<I", len(faces)))
        for face in faces:
            f.write(struct.pack("<12fH", 0, 0, 0, *v[list(face)].reshape(-1), 0))


def _fk(model: mujoco.MjModel, robot: RobotSpec, q: np.ndarray) -> tuple[np.ndarray, ...]:
    data = mujoco.MjData(model)
    for name, value in zip(robot.joint_names, q, strict=True):
        data.qpos[model.joint(name).qposadr[0]] = value
    mujoco.mj_kinematics(model, data)
    return data.site(robot.ee_site).xpos.copy(), data.site(robot.ee_site).xmat.copy()


def test_arm7_round_trips_through_urdf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROBOT_RL_ROBOTS", str(tmp_path))
    arm = get_robot("arm7")
    text = write_urdf(arm)
    assert text.startswith('<robot name="arm7">')
    imported = RobotSpec.from_urdf(text, name="arm7_urdf", tip_link="ee", home=arm.home,
                                   gripper_joints=("finger_left", "finger_right"))
    # joints, limits and gripper as arm7 declares them
    assert imported.joint_names == arm.joint_names and imported.root_body == arm.root_body
    for field in ("q_min", "q_max", "qd_max", "tau_max"):
        assert getattr(imported, field) == getattr(arm, field), field
    assert imported.gripper is not None and arm.gripper is not None
    assert imported.gripper.joints == arm.gripper.joints
    assert (imported.gripper.open_ctrl, imported.gripper.closed_ctrl) == (0.04, 0.0)
    # the same forward kinematics over 1,000 random configurations
    ours = mujoco.MjModel.from_xml_path(str(arm.mjcf))
    theirs = mujoco.MjModel.from_xml_path(str(imported.mjcf))
    assert theirs.body_mass.sum() == pytest.approx(ours.body_mass.sum())
    rng = np.random.default_rng(0)
    pos_err = rot_err = 0.0
    for _ in range(1000):
        q = rng.uniform(arm.q_min, arm.q_max)
        (p1, r1), (p2, r2) = _fk(ours, arm, q), _fk(theirs, imported, q)
        pos_err = max(pos_err, float(np.abs(p1 - p2).max()))
        rot_err = max(rot_err, float(np.abs(r1 - r2).max()))
    assert pos_err < 1e-6 and rot_err < 1e-6
    # saved beside its MJCF, found by name, and it runs our tasks with their experts
    imported.save(tmp_path / "arm7_urdf.json")
    assert "arm7_urdf" in list_robots() and get_robot("arm7_urdf") == imported
    env = make_env("lift", 2, robot="arm7_urdf")
    env.reset(seed=0)
    succeeded = torch.zeros(2, dtype=torch.bool)
    for _ in range(env.max_episode_length):
        *_, info = env.step(env.expert_action())
        succeeded |= info["success"]
    assert succeeded.all()


def test_package_meshes_resolve_through_the_ament_index_and_search_paths(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # an ament install tree holding the package "arm_description"
    install = tmp_path / "install"
    (install / "share/ament_index/resource_index/packages").mkdir(parents=True)
    (install / "share/ament_index/resource_index/packages/arm_description").touch()
    write_stl(install / "share/arm_description/meshes/l1.stl")
    mesh = '<mesh filename="package://arm_description/meshes/l1.stl"/>'
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(install))
    spec = RobotSpec.from_urdf(two_link(l1_geometry=mesh), name="two", tip_link="tool0",
                       out=tmp_path / "a" / "two.xml")
    model = mujoco.MjModel.from_xml_path(str(spec.mjcf))
    assert model.nmesh == 1 and model.geom_type[0] == mujoco.mjtGeom.mjGEOM_MESH
    assert spec.joint_names == ("j1", "j2") and spec.q_min == (-1.0, -2.0)
    assert spec.qd_max == (2.0, 3.0) and spec.tau_max == (30.0, 20.0)
    # without the index, a search path finds it as DIR/PKG/...
    monkeypatch.delenv("AMENT_PREFIX_PATH")
    spec = RobotSpec.from_urdf(two_link(l1_geometry=mesh), name="two", tip_link="tool0",
                       out=tmp_path / "b" / "two.xml", search_paths=[install / "share"])
    assert mujoco.MjModel.from_xml_path(str(spec.mjcf)).nmesh == 1


def test_an_unresolved_mesh_falls_back_to_primitives_or_is_refused(tmp_path: Path) -> None:
    mesh = '<mesh filename="package://arm_description/meshes/l1.stl"/>'
    with_box = two_link(l1_geometry=mesh).replace(
        "</collision>", '</collision><collision><geometry><box size="0.05 0.05 0.2"/>'
                        '</geometry></collision>', 1)
    with pytest.warns(UrdfWarning, match="l1.stl .not found.; using the link's primitive"):
        spec = RobotSpec.from_urdf(with_box, name="two", tip_link="tool0", out=tmp_path / "two.xml")
    model = mujoco.MjModel.from_xml_path(str(spec.mjcf))
    assert model.nmesh == 0 and model.ngeom == 1  # the box; the .dae visual left out
    with pytest.raises(ModelError, match="no primitive collision geometry.*search_paths"):
        RobotSpec.from_urdf(two_link(l1_geometry=mesh), name="two", tip_link="tool0",
                    out=tmp_path / "two.xml")


@pytest.mark.parametrize(("urdf", "tip", "message"), [
    (two_link(), "hand", "no link named 'hand'"),
    (two_link(j2='type="continuous"'), "tool0", "'j2' is continuous"),
    (two_link(limit='lower="-1" upper="1.5"'), "tool0", "'j1' needs positive velocity and "
                                                        "effort"),
    (two_link(), "base", "no movable joint between 'base' and 'base'"),
    ("<robot name='x'><link name='a'/><link name='b'/></robot>", "b", "one root link"),
    ("<mujoco/>", "b", "root element is <robot>"),
])
def test_what_import_cannot_use_is_refused(urdf: str, tip: str, message: str,
                                           tmp_path: Path) -> None:
    with pytest.raises(ModelError, match=message):
        RobotSpec.from_urdf(urdf, name="x", tip_link=tip, out=tmp_path / "x.xml")


def test_movable_joints_off_the_chain_are_fixed_with_a_warning(tmp_path: Path) -> None:
    side = ('<joint name="camera_pan" type="revolute"><parent link="base"/><child link="cam"/>'
            '<axis xyz="0 0 1"/><limit lower="-1" upper="1" velocity="1" effort="1"/></joint>'
            f'<link name="cam">{INERTIAL}</link>')
    with pytest.warns(UrdfWarning, match="camera_pan are off the arm's chain"):
        spec = RobotSpec.from_urdf(two_link(extra=side), name="two", tip_link="tool0",
                           out=tmp_path / "two.xml")
    model = mujoco.MjModel.from_xml_path(str(spec.mjcf))
    assert model.njnt == 2 and model.nu == 2


def test_robot_import_and_urdf_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        cli) -> None:
    monkeypatch.setenv("ROBOT_RL_ROBOTS", str(tmp_path / "robots"))
    r = cli("robot", "urdf", "arm7", "--out", str(tmp_path / "arm7.urdf"))
    assert r.returncode == 0, r.stderr
    r = cli("robot", "import", str(tmp_path / "arm7.urdf"), "--name", "mine", "--tip-link",
            "ee", "--gripper-joints", "finger_left", "finger_right")
    assert r.returncode == 0, r.stderr
    assert "joint4" in r.stdout and "--env.robot mine" in r.stdout
    assert (tmp_path / "robots" / "mine.json").is_file()
    assert get_robot("mine").gripper is not None
    r = cli("robot", "import", str(tmp_path / "arm7.urdf"), "--name", "x", "--tip-link", "hand2")
    assert r.returncode == 2 and "no link named 'hand2'" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    r = cli("robot", "import", str(tmp_path / "arm7.urdf"), "--name", "ur6", "--tip-link", "ee")
    assert r.returncode == 2 and "is a built-in arm's name" in r.stderr


def test_robot_import_reads_the_running_systems_robot_description(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli) -> None:
    """A latched /robot_description over loopback DDS (as robot_state_publisher serves it)."""
    import os
    import time

    rclpy = pytest.importorskip("rclpy")
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from std_msgs.msg import String

    domain = 100 + (os.getpid() * 7 + int(time.time() * 1000)) % 100
    monkeypatch.setenv("ROS_DOMAIN_ID", str(domain))
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=domain)
    try:
        node = rclpy.create_node("robot_state_publisher", context=ctx)
        qos = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                         reliability=ReliabilityPolicy.RELIABLE)
        pub = node.create_publisher(String, "/robot_description", qos)
        pub.publish(String(data=two_link()))
        r = cli("robot", "import", "--topic", "/robot_description", "--wait", "30", "--name",
                "two", "--tip-link", "tool0", "--out", str(tmp_path))
    finally:
        rclpy.shutdown(context=ctx)
    assert r.returncode == 0, r.stderr
    spec = RobotSpec.load(tmp_path / "two.json")
    assert spec.joint_names == ("j1", "j2") and spec.tau_max == (30.0, 20.0)
    assert spec.mjcf == tmp_path / "two.xml"
