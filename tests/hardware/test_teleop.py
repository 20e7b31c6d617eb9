"""Teleoperation: device events -> commands -> actions, and recording with a device."""

from __future__ import annotations

import os
import pty
import struct
import termios
from pathlib import Path

import numpy as np
import pytest

from robot_rl.controllers import EEDeltaConfig, JointDeltaConfig, JointVelocityConfig
from robot_rl.controllers.arm_model import ArmModel
from robot_rl.controllers.ik import orientation_error
from robot_rl.data import Dataset
from robot_rl.errors import ConfigError
from robot_rl.hardware.configs import HomeMoveConfig, SimRobotConfig
from robot_rl.hardware.home_move import HomeMove
from robot_rl.hardware.sim_robot import build_model
from robot_rl.hardware.teleop import ScriptedTeleop, TeleopCommand
from robot_rl.hardware.teleop.base import TeleopError
from robot_rl.hardware.teleop.gamepad import (
    ABS_RZ,
    ABS_X,
    ABS_Y,
    BTN_EAST,
    BTN_SOUTH,
    EV_ABS,
    EV_KEY,
    GamepadTeleop,
)
from robot_rl.hardware.teleop.keyboard import KeyboardTeleop, parse_keys
from robot_rl.hardware.teleop.mapping import TeleopMapper
from robot_rl.hardware.teleop.spacemouse import SpaceMouseTeleop, parse_report
from robot_rl.recording.config import RecordConfig
from robot_rl.recording.record import record
from robot_rl.robots import get_robot


class FakeClock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_keyboard_parses_keys_and_arrow_sequences():
    assert parse_keys("wA\x1b[A\x1b[D \r") == ["w", "a", "UP", "LEFT", " ", "\r"]


def test_keyboard_through_a_pipe_moves_while_keys_arrive_and_reports_events_once():
    r, w = os.pipe()
    clock = FakeClock()
    kb = KeyboardTeleop(fd=r, hold_s=0.15, speed=0.5, clock=clock)
    with kb:
        assert not kb.read().moving
        os.write(w, b"wd")
        cmd = kb.read()
        assert np.allclose(cmd.twist, [0.5, -0.5, 0, 0, 0, 0])
        clock.t += 0.1
        assert kb.read().moving  # within hold_s of the press
        clock.t += 0.1
        assert not kb.read().moving  # released: no key since
        os.write(w, b" +\r")
        cmd = kb.read()
        assert cmd.gripper == -1.0 and cmd.events == {"next"} and kb.speed == 0.75
        assert kb.read().events == frozenset()  # an edge, reported once
        os.write(w, b"xqyn")
        assert kb.read().events == {"rerecord", "quit", "success", "failure"}
    os.close(r)
    os.close(w)


def test_keyboard_in_a_real_terminal_sets_and_restores_key_mode():
    master, slave = pty.openpty()
    before = termios.tcgetattr(slave)
    kb = KeyboardTeleop(fd=slave)
    with kb:
        assert not termios.tcgetattr(slave)[3] & termios.ICANON  # keys one at a time
        os.write(master, b"r")
        import time

        end = time.monotonic() + 2
        cmd = kb.read()
        while not cmd.moving and time.monotonic() < end:
            time.sleep(0.01)
            cmd = kb.read()
        assert cmd.twist[2] > 0  # r: up, through the terminal line discipline
    assert termios.tcgetattr(slave) == before
    os.close(master)
    os.close(slave)


def test_spacemouse_reports_both_layouts_axis_map_and_buttons():
    axes, buttons = parse_report(bytes([1]) + struct.pack("<3h", 10, -350, 20), np.zeros(6), 0)
    assert list(axes[:3]) == [10, -350, 20]
    axes, _ = parse_report(bytes([1]) + struct.pack("<6h", 1, 2, 3, 4, 5, 6), axes, 0)
    assert list(axes) == [1, 2, 3, 4, 5, 6]  # Compact/Wireless: one report, both
    axes, _ = parse_report(bytes([2]) + struct.pack("<3h", -7, 8, 9), axes, 0)
    assert list(axes[3:]) == [-7, 8, 9]
    _, buttons = parse_report(bytes([3, 2]), axes, 0)
    assert buttons == 2

    class FakeHid:
        def __init__(self, reports: list[bytes]) -> None:
            self.reports = reports

        def read(self, size: int) -> list[int]:
            return list(self.reports.pop(0)) if self.reports else []

    push_away = bytes([1]) + struct.pack("<6h", 0, -350, 0, 0, 0, 0)  # cap pushed away
    dev = FakeHid([push_away, bytes([3, 1]), bytes([3, 0])])
    with SpaceMouseTeleop(device=dev, gripper_closed=True) as sm:
        cmd = sm.read()
    assert cmd.twist[0] == pytest.approx(1.0) and np.allclose(cmd.twist[1:], 0)
    assert cmd.gripper == -1.0  # left button pressed and released: toggled open
    dev.reports = [bytes([1]) + struct.pack("<6h", 20, 0, 0, 0, 0, 0), bytes([3, 2])]
    with SpaceMouseTeleop(device=dev) as sm:
        cmd = sm.read()
    assert not cmd.moving and cmd.events == {"next"}  # inside the dead zone; right button


def test_gamepad_events_to_commands():
    evdev = pytest.importorskip("evdev", reason="gamepads come with the teleop extra")
    InputEvent = evdev.InputEvent

    class Info:
        def __init__(self, lo: int, hi: int) -> None:
            self.min, self.max = lo, hi

    class FakePad:
        def __init__(self) -> None:
            self.batches: list[list[InputEvent]] = []

        def absinfo(self, code: int) -> Info:
            return Info(0, 255) if code == ABS_RZ else Info(-32768, 32767)

        def read(self) -> list[InputEvent]:
            if not self.batches:
                raise BlockingIOError
            return self.batches.pop(0)

    pad = FakePad()
    pad.batches = [[InputEvent(0, 0, EV_ABS, ABS_Y, -32768), InputEvent(0, 0, EV_ABS, ABS_X, 0),
                    InputEvent(0, 0, EV_ABS, ABS_RZ, 255), InputEvent(0, 0, EV_KEY, BTN_SOUTH, 1)]]
    with GamepadTeleop(device=pad, gripper_closed=False) as gp:
        cmd = gp.read()
        assert cmd.twist[0] == pytest.approx(1.0)  # left stick fully up: +x
        assert abs(cmd.twist[1]) < 1e-9  # centred: the dead zone
        assert cmd.gripper == 1.0 and cmd.events == {"next"}
        pad.batches = [[InputEvent(0, 0, EV_KEY, BTN_SOUTH, 0),
                        InputEvent(0, 0, EV_KEY, BTN_EAST, 1)]]
        cmd = gp.read()
        assert cmd.events == {"rerecord"} and cmd.twist[0] == pytest.approx(1.0)  # held


def _arm_at_home() -> tuple[ArmModel, object]:
    spec = get_robot("arm7")
    arm = ArmModel(build_model(SimRobotConfig(), spec), spec)
    return arm, arm.state(np.asarray(spec.home), np.zeros(7))


def test_mapper_joint_delta_moves_the_end_effector_the_way_the_device_points():
    spec = get_robot("arm7")
    _, state = _arm_at_home()
    cfg = JointDeltaConfig(gripper=False)
    m = TeleopMapper(cfg, 7, False, spec, control_dt=0.02)
    for axis in range(3):
        twist = np.zeros(6)
        twist[axis] = 1.0
        a = m(TeleopCommand(twist), state)
        dq = a * cfg.scale * m._response  # the joint motion the servo makes in one step
        v = np.asarray(state.jac)[0, :3] @ dq
        assert v[axis] / np.linalg.norm(v) > 0.95, (axis, v)
    assert np.allclose(m(TeleopCommand(), state), 0, atol=1e-3)  # still: hold


def test_mapper_ee_delta_passes_the_twist_and_the_gripper():
    spec = get_robot("arm7")
    _, state = _arm_at_home()
    m = TeleopMapper(EEDeltaConfig(rotation=False), 4, True, spec, control_dt=0.02)
    a = m(TeleopCommand(np.array([0.5, -1, 0, 1, 1, 1]), gripper=-1.0), state)
    assert np.allclose(a, [0.5, -1, 0, -1])


def test_the_move_home_brings_every_joint_back_at_its_speed_limit():
    """Joint action spaces: the joints go home (not only the hand: the null space and the
    wrist would drift episode after episode), at most joint_speed per joint."""
    spec = get_robot("arm7")
    arm, home = _arm_at_home()
    q = np.asarray(spec.home) + np.array([0.4, -0.3, 0.5, 0.2, -0.6, 0.8, 1.2])
    for cfg in (JointDeltaConfig(gripper=False), JointVelocityConfig(gripper=False)):
        m = TeleopMapper(cfg, 7, False, spec, control_dt=0.02)
        move = HomeMove(m, home, HomeMoveConfig(joint_speed=0.5))
        state = arm.state(q, np.zeros(7))
        assert not move.arrived(state) and move.error(state) == pytest.approx(1.2)
        a = move.action(state)
        per_step = m._response * cfg.scale if cfg.type == "joint_delta" else 0.02 * cfg.scale
        dq = a * per_step  # the joint motion of that action in one step
        assert np.abs(dq).max() == pytest.approx(0.5 * 0.02)  # the fastest joint at 0.5 rad/s
        np.testing.assert_allclose(dq / np.linalg.norm(dq), (np.asarray(spec.home) - q)
                                   / np.linalg.norm(np.asarray(spec.home) - q), atol=1e-9)
    # an ideal servo following the joint_delta moves arrives within 2.4 s + a few steps
    m = TeleopMapper(JointDeltaConfig(gripper=False), 7, False, spec, control_dt=0.02)
    move, qk, steps = HomeMove(m, home), q.copy(), 0
    while not move.arrived(arm.state(qk, np.zeros(7))) and steps < 200:
        qk = qk + move.action(arm.state(qk, np.zeros(7))) * 0.1 * m._response
        steps += 1
    assert steps < 1.2 / 0.5 / 0.02 + 10 and move.error(arm.state(qk, np.zeros(7))) < 0.03
    assert move.arrived(home) and move.error(home) == 0.0


def test_the_move_home_in_ee_delta_turns_the_hand_back_too():
    spec = get_robot("arm7")
    arm, home = _arm_at_home()
    m = TeleopMapper(EEDeltaConfig(), 7, True, spec, control_dt=0.02)
    move = HomeMove(m, home)
    state = arm.state(np.asarray(spec.home) + np.array([0.3, 0.2, 0, -0.2, 0, 0.3, 0.5]),
                      np.zeros(7))
    a = move.action(state)
    to_home = np.asarray(home.ee_pos)[0] - np.asarray(state.ee_pos)[0]
    turn = orientation_error(np.asarray(state.ee_rot), np.asarray(home.ee_rot))[0]
    assert a[:3] @ to_home > 0.9 * np.linalg.norm(a[:3]) * np.linalg.norm(to_home)
    assert a[3:6] @ turn > 0.9 * np.linalg.norm(a[3:6]) * np.linalg.norm(turn)
    assert a[6] == -1.0  # the gripper open
    assert not move.arrived(state) and move.arrived(home)
    with pytest.raises(ConfigError, match="joint_speed"):
        HomeMove(m, home, HomeMoveConfig(joint_speed=0))
    with pytest.raises(TeleopError, match="joint action space"):
        m.joint_step(np.zeros(7))


def test_recording_with_a_device_obeys_rerecord_next_and_quit(tmp_path: Path):
    def script(k: int) -> TeleopCommand:
        move = TeleopCommand(np.array([0.0, 0.0, 1.0, 0, 0, 0]))
        if k == 5:
            return TeleopCommand(move.twist, events=frozenset({"rerecord"}))
        if k == 12:  # episode 0 (second attempt), saved early
            return TeleopCommand(move.twist, events=frozenset({"next"}))
        if k == 40:
            return TeleopCommand(events=frozenset({"quit"}))
        return move

    out = tmp_path / "ds"
    res = record(RecordConfig(task="push", teleop="keyboard", episodes=5, out=out,
                              episode_length=20, keep_failures=True, realtime=False,
                              progress=False),
                 teleop=ScriptedTeleop(script))
    assert res.quit and res.saved == 2 and res.discarded == 2
    ds = Dataset(out)
    assert [r["length"] for r in ds.episodes] == [7, 20]  # reads 6..12, then 13..32
    assert all(r["robot_rl/source"] == "scripted" for r in ds.episodes)
    f = ds.frames()
    assert not f["intervention"].any()
    z = ds.episode(0)["observation.joint_pos"]
    assert ds.validate() == []
    assert np.abs(z[-1] - z[0]).max() > 1e-3  # the device moved the arm


def test_a_persons_episode_lasts_its_time_and_a_failure_is_kept_only_when_labelled(
        tmp_path: Path):
    """Push at 50 Hz with --episode-time 0.5: 25-step episodes (not the task's 200). The
    first ends without success and is dropped; the second is labelled n and kept."""
    def script(k: int) -> TeleopCommand:  # reads 0..24: episode 1; 25..49: episode 2
        return TeleopCommand(np.zeros(6), events=frozenset({"failure"}) if k == 30
                             else frozenset())

    out = tmp_path / "ds"
    res = record(RecordConfig(task="push", teleop="keyboard", episodes=1, out=out,
                              episode_time=0.5, realtime=False, progress=False),
                 teleop=ScriptedTeleop(script))
    assert res.saved == 1 and res.discarded == 1
    ds = Dataset(out)
    assert [r["length"] for r in ds.episodes] == [25]
    assert not ds.episodes[0]["robot_rl/success"]
    assert ds.spec.env["episode_length"] == 25


def test_how_a_persons_episode_ends() -> None:
    from robot_rl.recording.record import _person_outcome

    auto, confirm = RecordConfig().pacing(), RecordConfig(success_ends="confirm").pacing()
    keep = RecordConfig(keep_failures=True).pacing()
    none: frozenset[str] = frozenset()
    enter = frozenset({"next"})
    # Enter saves, with the task's success at that (the last) step or the person's label
    assert _person_outcome(auto, enter, False, False, None, 5).kind == "save"
    assert _person_outcome(auto, enter, False, False, None, 5).success is False
    assert _person_outcome(auto, enter, False, True, False, 5).success is False
    # success ends the episode at once (auto), or waits for Enter (confirm)
    got = _person_outcome(auto, none, False, True, None, 5)
    assert got is not None and got.kind == "save" and got.success
    assert _person_outcome(confirm, none, False, True, None, 5) is None
    assert _person_outcome(confirm, enter, False, True, None, 6).success
    # success is judged at the end: a goal reached, then lost before Enter, is a failure
    assert _person_outcome(confirm, enter, False, False, None, 7).success is False
    # the time limit (or termination) without success drops it, unless labelled or kept
    assert _person_outcome(auto, none, True, False, None, 9).kind == "fail"
    assert _person_outcome(auto, none, True, False, False, 9).kind == "save"
    assert _person_outcome(keep, none, True, False, None, 9).kind == "save"
    assert _person_outcome(confirm, none, True, True, None, 9).kind == "save"
    assert _person_outcome(confirm, none, True, False, None, 9).kind == "fail"  # lost
    assert _person_outcome(auto, none, False, False, None, 9) is None  # goes on
    with pytest.raises(ConfigError, match="episode-time"):
        RecordConfig(episode_time=0).validate()


def test_moving_the_device_while_a_policy_runs_is_an_intervention(tmp_path: Path):
    calls = []

    def policy(obs: np.ndarray) -> np.ndarray:
        calls.append(obs)
        return np.full(7, 0.25, np.float32)

    def script(k: int) -> TeleopCommand:  # the person moves the arm up on reads 5..9
        return TeleopCommand(np.array([0, 0, 1.0, 0, 0, 0]) if 5 <= k < 10 else np.zeros(6))

    out = tmp_path / "ds"
    record(RecordConfig(task="push", teleop="keyboard", episodes=1, out=out, episode_length=20,
                        keep_failures=True, realtime=False, progress=False),
           teleop=ScriptedTeleop(script),
           policy=policy)
    ds = Dataset(out)
    f = ds.episode(0)
    flags = f["intervention"]
    assert flags.tolist() == [5 <= k < 10 for k in range(20)]
    assert np.allclose(f["action"][~flags], 0.25)  # the policy's own action otherwise
    assert not np.allclose(f["action"][flags], 0.25)
    assert len(calls) == 15  # the policy is not asked while the person acts
    assert ds.episodes[0]["robot_rl/interventions"] == 5
    assert ds.episodes[0]["robot_rl/source"] == "policy+scripted"
