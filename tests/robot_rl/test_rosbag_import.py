"""Import of rosbag2 recordings (sqlite3 and MCAP) written in the test with rosbags."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

from robot_rl.data import Dataset, DatasetError
from robot_rl.hardware.observation import TaskObserver
from robot_rl.recording.rosbag_import import import_bags
from robot_rl.recording.sim_replay import replay_episode
from robot_rl.robots import get_robot
from robot_rl.sim import make_task_config

GOAL = (0.5, -0.15, 0.3)
OFFSET = 0.05  # every command targets the arm's position + 0.05 rad: action 0.5 at scale 0.1


def _write_bag(path: Path, storage: StoragePlugin, seconds: float = 1.0,
               names: list[str] | None = None, unit: str = "rad") -> np.ndarray:
    """/joint_states at 500 Hz (joints in reverse order) and commands at 50 Hz; returns q0.
    ``names``: the joints as a driver names them; ``unit``: positions (and velocities, per
    second) in that unit, as ``robot_rl.robots.units`` defines it."""
    from robot_rl.robots.units import JointUnits

    arm = get_robot("arm7")
    units = JointUnits.of(unit, arm.num_joints, arm.q_min, arm.q_max)
    ts = get_typestore(Stores.ROS2_KILTED)
    JointState = ts.types["sensor_msgs/msg/JointState"]
    Header = ts.types["std_msgs/msg/Header"]
    Time = ts.types["builtin_interfaces/msg/Time"]
    Array = ts.types["std_msgs/msg/Float64MultiArray"]
    Layout = ts.types["std_msgs/msg/MultiArrayLayout"]
    names = names or list(arm.joint_names)
    q0 = np.asarray(get_robot("arm7").home, dtype=np.float64)
    v = np.linspace(0.01, 0.07, 7)  # rad/s: a slow, known motion
    start = 1_700_000_000 * 10**9
    with Writer(path, version=9, storage_plugin=storage) as w:
        js = w.add_connection("/joint_states", JointState.__msgtype__, typestore=ts)
        cmd = w.add_connection("/forward_position_controller/commands", Array.__msgtype__,
                               typestore=ts)
        for i in range(int(seconds * 500)):
            t = i / 500
            q = q0 + v * t
            stamp = start + int(t * 1e9)
            msg = JointState(header=Header(stamp=Time(sec=stamp // 10**9,
                                                      nanosec=stamp % 10**9), frame_id=""),
                             name=names[::-1], position=units.q_out(q)[::-1].copy(),
                             velocity=units.qd_out(v)[::-1].copy(), effort=np.zeros(0))
            w.write(js, stamp, ts.serialize_cdr(msg, JointState.__msgtype__))
            if i % 10 == 5:  # 50 Hz, between the control ticks
                c = Array(layout=Layout(dim=[], data_offset=0), data=units.q_out(q + OFFSET))
                w.write(cmd, stamp + 1000, ts.serialize_cdr(c, Array.__msgtype__))
    return q0


@pytest.mark.parametrize("storage", [StoragePlugin.SQLITE3, StoragePlugin.MCAP],
                         ids=["sqlite3", "mcap"])
def test_a_bag_becomes_an_episode_in_the_tasks_action_space(tmp_path, storage):
    bag = tmp_path / "bag"
    q0 = _write_bag(bag, storage)
    out = tmp_path / "ds"
    assert import_bags([bag], out, "reach", goal=GOAL) == 1
    ds = Dataset(out)
    assert ds.validate() == []
    f = ds.episode(0)
    n = len(f["action"])
    assert n == 49  # 50 control ticks in 1 s, each step needs the next tick's state
    # joint states sampled at the control ticks, reordered by name
    t = np.arange(n) * 0.02
    v = np.linspace(0.01, 0.07, 7)
    assert np.allclose(f["observation.joint_pos"], q0 + v * (t[:, None] - 0.0), atol=2e-3)
    # the command before the next tick is ~0.05 rad ahead of the tick's position: action 0.5
    assert np.allclose(f["action"], OFFSET / 0.1, atol=0.02)
    # observations are the task's own terms at that state (goal set)
    obs = TaskObserver(make_task_config("reach"))
    obs.set_goal(GOAL)
    expect = obs(f["observation.joint_pos"][3].astype(np.float64),
                 f["observation.joint_vel"][3].astype(np.float64), f["action"][2],
                 f["action"][1])
    assert np.allclose(f["observation.state"][3], expect, atol=1e-5)
    assert f["next.done"][-1] and not f["next.terminated"].any()
    assert ds.episodes[0]["robot_rl/source"] == "rosbag:bag"
    with pytest.raises(DatasetError, match="not recorded in simulation"):
        replay_episode(ds, 0)


@pytest.mark.parametrize("unit", ["deg", "normalized"])
def test_a_bag_with_a_drivers_names_and_units_imports_as_the_radian_one(tmp_path, unit):
    """A Franka driver's fr3_joint names, and positions in degrees or LeRobot's normalized
    range (a profile's joint_names and position_unit): the same episode as in radians."""
    _write_bag(tmp_path / "rad", StoragePlugin.MCAP, seconds=0.4)
    fr3 = [f"fr3_joint{i}" for i in range(1, 8)]
    _write_bag(tmp_path / "wire", StoragePlugin.MCAP, seconds=0.4, names=fr3, unit=unit)
    import_bags([tmp_path / "rad"], tmp_path / "a", "reach", goal=GOAL)
    with pytest.raises(DatasetError, match="fr3_joint"):  # the arm's names are not there
        import_bags([tmp_path / "wire"], tmp_path / "b", "reach", goal=GOAL)
    import_bags([tmp_path / "wire"], tmp_path / "c", "reach", goal=GOAL, wire_names=fr3,
                angle_unit=unit)
    a, c = Dataset(tmp_path / "a").episode(0), Dataset(tmp_path / "c").episode(0)
    for key in ("observation.joint_pos", "observation.joint_vel", "action"):
        np.testing.assert_allclose(c[key], a[key], atol=1e-5, err_msg=key)


def test_bags_without_the_topics_or_for_unsupported_tasks_are_refused(tmp_path):
    bag = tmp_path / "bag"
    _write_bag(bag, StoragePlugin.SQLITE3, seconds=0.2)
    with pytest.raises(DatasetError, match="no topic /other"):
        import_bags([bag], tmp_path / "a", "reach", joint_states="/other")
    with pytest.raises(Exception, match="puck|measur"):  # push needs the puck's position
        import_bags([bag], tmp_path / "b", "push")
    with pytest.raises(DatasetError, match="cannot open bag"):
        import_bags([tmp_path / "missing"], tmp_path / "c", "reach")


def test_cli_import_then_info(tmp_path, capsys):
    from robot_rl.cli import main

    bag = tmp_path / "bag"
    _write_bag(bag, StoragePlugin.MCAP, seconds=0.3)
    out = tmp_path / "ds"
    main(["data", "import", str(bag), "--out", str(out), "--task", "reach", "--goal", "0.5",
          "-0.15", "0.3"])
    assert "imported 1 episode(s) from 1 bag(s)" in capsys.readouterr().out
    main(["data", "info", str(out)])
    assert "rosbag:bag" in capsys.readouterr().out
