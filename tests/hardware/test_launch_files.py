"""Launch files, read statically (``launch`` has no wheels): every package, executable and
parameters file they name exists, and the ament package files are in place."""

from __future__ import annotations

import ast
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import tomllib
import yaml

ROOT = Path(__file__).resolve().parents[2]
LAUNCH = sorted((ROOT / "launch").glob("*.launch.py"))


def _calls(tree: ast.AST, name: str) -> list[ast.Call]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call)
            and getattr(n.func, "id", getattr(n.func, "attr", None)) == name]


def _kw(call: ast.Call, key: str) -> object:
    for k in call.keywords:
        if k.arg == key:
            return ast.literal_eval(k.value) if isinstance(k.value, ast.Constant) else k.value
    return None


def test_there_are_the_four_launch_files():
    assert {p.name for p in LAUNCH} == {"deploy.launch.py", "sim_deploy.launch.py",
                                       "record.launch.py", "sysid.launch.py"}


@pytest.mark.parametrize("path", LAUNCH, ids=lambda p: p.name)
def test_launch_file_names_only_things_that_exist(path):
    tree = ast.parse(path.read_text())
    package = ET.parse(ROOT / "package.xml").getroot().findtext("name")
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    nodes = _calls(tree, "Node")
    assert nodes
    params = yaml.safe_load((ROOT / "launch" / "config" / "arm7.yaml").read_text())
    for node in nodes:
        assert _kw(node, "package") == package
        exe = _kw(node, "executable")
        assert exe in scripts, f"{exe} is not a console entry point"
        assert _kw(node, "name") in params, f"{_kw(node, 'name')} has no section in arm7.yaml"
    for call in _calls(tree, "PathJoinSubstitution"):  # share/<pkg>/config/<file>
        parts = ast.literal_eval(ast.unparse(call.args[0]).replace(
            f"FindPackageShare('{package}')", "'<share>'"))
        assert parts[0] == "<share>"
        folder = {"config": ROOT / "launch" / "config", "launch": ROOT / "launch"}[parts[1]]
        assert (folder / parts[2]).is_file(), parts
    for call in _calls(tree, "FindPackageShare"):
        assert ast.literal_eval(call.args[0]) == package


def test_ament_package_files():
    root = ET.parse(ROOT / "package.xml").getroot()
    assert root.findtext("export/build_type") == "ament_python"
    deps = {d.text for d in root.findall("exec_depend")}
    assert {"rclpy", "sensor_msgs", "std_msgs", "trajectory_msgs", "std_srvs",
            "launch_ros"} <= deps
    assert (ROOT / "resource" / root.findtext("name")).is_file()
    setup = (ROOT / "setup.py").read_text()
    for needle in ("launch/*.launch.py", "launch/config/*.yaml", "package.xml",
                   "resource_index/packages"):
        assert needle in setup
    assert "install_scripts=$base/lib/robot_rl" in (ROOT / "setup.cfg").read_text()


def test_params_file_keys_are_node_parameters():
    pytest.importorskip("rclpy", reason="the nodes' parameter classes come with the ros extra")
    from robot_rl.nodes.policy_node import PolicyNodeParams
    from robot_rl.nodes.sim_robot_node import SimRobotNodeParams
    from robot_rl.nodes.sysid_node import SysidNodeParams
    from robot_rl.nodes.teleop_node import TeleopNodeParams

    PARAM_CLASSES = {"policy_node": PolicyNodeParams, "sim_robot_node": SimRobotNodeParams,
                     "teleop_node": TeleopNodeParams, "sysid_node": SysidNodeParams}

    params = yaml.safe_load((ROOT / "launch" / "config" / "arm7.yaml").read_text())
    for node, cls in PARAM_CLASSES.items():
        fields = {f for f in cls.__dataclass_fields__}
        unknown = set(params[node]["ros__parameters"]) - fields
        assert not unknown, f"{node}: {unknown} are not parameters"
    assert set(params) == set(PARAM_CLASSES)
