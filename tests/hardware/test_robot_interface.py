"""The Robot base class's last gate: hard limits, non-finite commands, interface checks."""

from __future__ import annotations

import numpy as np
import pytest

from robot_rl.hardware.robot import JointCommand, RobotError


def test_send_action_clips_to_hard_limits_and_returns_what_was_sent(scripted_robot):
    r = scripted_robot
    r.set(np.asarray(r.spec.home))
    r.observe()
    far = np.asarray(r.spec.q_max) + 1.0
    sent = r.send_action(JointCommand.position(far))
    np.testing.assert_allclose(sent.values, r.spec.q_max)
    np.testing.assert_allclose(r.sent[-1].values, r.spec.q_max)
    assert not sent.hold


def test_non_finite_position_becomes_a_hold_at_the_last_measurement(scripted_robot):
    r = scripted_robot
    q = np.asarray(r.spec.home) + 0.05
    r.set(q)
    r.observe()
    bad = q.copy()
    bad[2] = np.nan
    sent = r.send_action(JointCommand.position(bad))
    assert sent.hold
    np.testing.assert_allclose(sent.values, q)


def test_non_finite_before_any_measurement_and_wrong_interface_are_refused(scripted_robot):
    r = scripted_robot
    with pytest.raises(RobotError, match="before any measurement"):
        r.send_action(JointCommand.position(np.full(7, np.nan)))
    with pytest.raises(RobotError, match="takes position commands"):
        r.send_action(JointCommand("effort", np.zeros(7)))
    with pytest.raises(RobotError, match="7 joints"):
        r.send_action(JointCommand.position(np.zeros(6)))
