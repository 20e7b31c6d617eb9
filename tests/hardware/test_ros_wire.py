"""Joint names and position units on the wire (hardware/ros/wire.py): LeRobot's normalized
range and degrees, a driver's own joint names, through the JointState parser and RosRobot's
command path."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("rclpy")

from sensor_msgs.msg import JointState  # noqa: E402

from robot_rl.errors import ConfigError  # noqa: E402
from robot_rl.hardware.ros.convert import JointStateParser  # noqa: E402
from robot_rl.hardware.ros.wire import WireFormat  # noqa: E402
from robot_rl.robots import get_robot  # noqa: E402


def _so5(unit: str) -> WireFormat:
    s = get_robot("so5")
    return WireFormat.of((), s.joint_names, "so5", unit, s.q_min, s.q_max)


def test_lerobot_normalized_spans_each_joints_range() -> None:
    s, w = get_robot("so5"), _so5("normalized")
    lo, hi = np.asarray(s.q_min), np.asarray(s.q_max)
    np.testing.assert_allclose(w.units.q_in(np.full(5, -100.0)), lo)
    np.testing.assert_allclose(w.units.q_in(np.full(5, 100.0)), hi)
    np.testing.assert_allclose(w.units.q_in(np.zeros(5)), (lo + hi) / 2)
    # wrist_roll's range is -2.744 .. 2.841: 50 is three quarters of the way up
    assert w.units.q_in(np.full(5, 50.0))[4] == pytest.approx(-2.744 + 0.75 * (2.841 + 2.744),
                                                        abs=1e-3)
    assert w.units.qd_in(np.full(5, 10.0))[0] == pytest.approx(10.0 * 3.84 / 200, abs=1e-3)
    q = np.array([0.1, -0.5, 1.0, 0.3, -2.0])
    np.testing.assert_allclose(w.units.q_in(w.command_out(q, "position")), q)
    np.testing.assert_allclose(w.command_in(w.command_out(q, "velocity"), "velocity"), q)
    assert np.array_equal(w.command_out(q, "effort"), q)  # Nm in every unit


def test_degrees_and_radians() -> None:
    w = _so5("deg")
    np.testing.assert_allclose(w.units.q_in(np.array([90.0, -45, 0, 180, 30])),
                               [math.pi / 2, -math.pi / 4, 0, math.pi, math.pi / 6])
    np.testing.assert_allclose(w.command_out(np.full(5, math.pi), "position"), 180.0)
    r = _so5("rad")
    assert np.array_equal(r.units.q_in(np.arange(5.0)), np.arange(5.0))


def test_the_parser_reads_wire_names_and_units_in_the_arms_order() -> None:
    s = get_robot("so5")
    wire = WireFormat.of([f"m{i}" for i in range(5)], s.joint_names, "so5", "normalized",
                         s.q_min, s.q_max)
    msg = JointState()
    msg.name = ["gripper", "m4", "m3", "m2", "m1", "m0"]  # any order, extra joints
    msg.position = [7.0, 100.0, 0.0, 0.0, 0.0, -100.0]
    msg.velocity = [0.0, 0.0, 0.0, 0.0, 0.0, 200.0]
    r = JointStateParser(wire)(msg, 1.0)
    assert not isinstance(r, str)
    assert r.q[0] == pytest.approx(s.q_min[0]) and r.q[4] == pytest.approx(s.q_max[4])
    assert r.qd[0] == pytest.approx(s.q_max[0] - s.q_min[0])
    msg.name = ["gripper", "shoulder_pan", "m3", "m2", "m1", "m0"]  # the arm's name, not m4
    assert "lacks joints ['m4']" in JointStateParser(wire)(msg, 1.0)  # type: ignore[operator]


def test_refusals_name_the_fix() -> None:
    s = get_robot("so5")
    with pytest.raises(ConfigError, match="joint_names: joint names .* must name so5's 5 "):
        WireFormat.of(["a", "b"], s.joint_names, "so5")
    with pytest.raises(ConfigError, match="once each"):
        WireFormat.of(["a", "a", "b", "c", "d"], s.joint_names, "so5")
    swapped = [s.joint_names[1], s.joint_names[0], *s.joint_names[2:]]
    with pytest.raises(ConfigError, match="so5's joints in another order"):
        WireFormat.of(swapped, s.joint_names, "so5")
    with pytest.raises(ConfigError, match="position_unit: angle unit must be one of rad, deg, "
                                          "normalized, got 'ticks'"):
        WireFormat.of((), s.joint_names, "so5", "ticks")
    with pytest.raises(ConfigError, match="needs so5's joint range"):
        WireFormat.of((), s.joint_names, "so5", "normalized")
