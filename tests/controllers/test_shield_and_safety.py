"""Shield layers one by one, the gate, the watchdog and the e-stop; bad shield settings."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from robot_rl.algos.gate import ActionGate
from robot_rl.controllers import (
    EStop,
    JointTorqueConfig,
    SafetyShield,
    ShieldConfig,
    Watchdog,
)
from robot_rl.errors import ConfigError
from robot_rl.sim import get_robot, make_env

WS = ((0.1, -0.6, -0.01), (0.9, 0.6, 0.8))


def _shield(**kw) -> SafetyShield:  # type: ignore[no-untyped-def]
    r = get_robot("arm7")
    return SafetyShield(ShieldConfig(**kw), r, *WS, np.asarray(r.kp), np.asarray(r.kd))


def test_rate_limit_and_bounds() -> None:
    shield = _shield(max_action_delta=0.3)
    prev = torch.zeros(3, 2)
    action = torch.tensor([[1.0, 0.1], [5.0, -5.0], [0.2, -0.2]])
    out, hold, flags = shield.filter_action(action, prev)
    torch.testing.assert_close(out, torch.tensor([[0.3, 0.1], [0.3, -0.3], [0.2, -0.2]]))
    assert flags["rate_limit"].tolist() == [True, True, False]
    assert flags["action_bounds"].tolist() == [False, True, False]
    assert not hold.any()


def test_nan_actions_hold_in_numpy_and_torch() -> None:
    shield = _shield()
    for kind in (np.asarray, torch.as_tensor):
        prev = kind(np.full((2, 3), 0.5))
        action = kind(np.array([[np.nan, 0.0, 0.0], [0.1, 0.2, np.inf]]))
        action[1, 2] = 0.3
        out, hold, flags = shield.filter_action(action, prev)
        assert list(hold) == [True, False] and list(flags["nan_guard"]) == [True, False]
        assert np.isfinite(np.asarray(out)).all()


def test_env_holds_on_nan_and_never_commands_nan() -> None:
    # Shield layers 3-8 off, so the hold target is not adjusted further (the NaN guard stays).
    env = make_env("reach", 2, shield=ShieldConfig(enabled=False))
    env.reset(seed=0)
    for _ in range(5):  # get moving
        env.step(torch.ones(2, env.act_dim))
    q = env.state.joint_pos.clone()
    bad = torch.ones(2, env.act_dim)
    bad[0, 3] = float("nan")
    _, _, _, _, _, info = env.step(bad)
    assert info["safety"]["nan_guard"].tolist() == [True, False]
    assert env.invalid_action_count.tolist() == [1, 0]
    assert torch.isfinite(env.backend.ctrl).all()
    # Hold: env 0's joint targets are the joint positions it had when the tick started.
    torch.testing.assert_close(env.backend.ctrl[0, env.arm_actuator_ids], q[0])


def test_torque_actions_with_nan_get_a_finite_braking_torque() -> None:
    env = make_env("reach", 2, action=JointTorqueConfig())
    env.reset(seed=0)
    env.step(torch.ones(2, env.act_dim) * 0.3)
    env.step(torch.full((2, env.act_dim), float("nan")))
    assert torch.isfinite(env.backend.ctrl).all()
    assert env.invalid_action_count.tolist() == [1, 1]


@pytest.mark.parametrize(("kw", "joint"), [
    ({"q_soft_max": (3.0, 1.7, 2.8, -0.1, 2.8, 3.7, 2.8)}, "joint1"),
    ({"q_soft_min": (-2.8, -1.7, -2.8, -3.0, -2.8, -0.05, -2.8)}, "joint6"),
    ({"q_soft_min": (0.0,) * 7, "q_soft_max": (0.0,) * 7}, "joint1"),
])
def test_soft_limits_outside_the_hard_limits_name_the_joint(kw: dict, joint: str) -> None:
    with pytest.raises(ConfigError, match=f"joint {joint!r}"):
        _shield(**kw)


def test_other_bad_settings_are_refused() -> None:
    for kw in ({"velocity_fraction": 1.5}, {"torque_fraction": 0.0}, {"brake_accel": -1.0},
               {"workspace_margin": 0.5}, {"max_action_delta": 0.0},
               {"q_soft_min": (0.0,) * 3}):
        with pytest.raises(ConfigError):
            _shield(**kw)


def test_gate_picks_the_best_safe_candidate_else_falls_back() -> None:
    cands = torch.arange(12.0).reshape(2, 3, 2)
    cost = torch.tensor([[0.5, 0.05, 0.01], [0.9, 0.8, float("nan")]])
    value = torch.tensor([[9.0, 1.0, 2.0], [0.0, 0.0, 0.0]])
    res = ActionGate(threshold=0.1)(cands, cost, value)
    assert res.index.tolist() == [2, 1]  # best value among safe; least cost among unsafe
    assert res.rejected.tolist() == [False, True] and not res.hold.any()
    torch.testing.assert_close(res.action, cands[[0, 1], [2, 1]])
    held = ActionGate(threshold=0.1, fallback="hold")(cands.numpy(), cost.numpy())
    assert held.index.tolist() == [1, 1] and held.hold.tolist() == [False, True]


def test_gate_rejects_bad_arguments() -> None:
    with pytest.raises(ConfigError):
        ActionGate(0.1, fallback="panic")  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        ActionGate(0.1)(torch.zeros(2, 3), torch.zeros(2, 3))


def test_env_hold_mask_holds_those_envs() -> None:
    env = make_env("reach", 2, shield=ShieldConfig(enabled=False))
    env.reset(seed=0)
    q = env.state.joint_pos.clone()
    env.step(torch.ones(2, env.act_dim), hold=torch.tensor([True, False]))
    torch.testing.assert_close(env.backend.ctrl[0, env.arm_actuator_ids], q[0])
    assert not torch.allclose(env.backend.ctrl[1, env.arm_actuator_ids], q[1])


def test_watchdog_goes_stale_after_missed_periods_and_recovers() -> None:
    now = [0.0]
    dog = Watchdog(period=0.01, max_missed=3, clock=lambda: now[0])
    assert dog.stale()  # nothing seen yet
    dog.feed()
    now[0] = 0.029
    assert not dog.stale()
    now[0] = 0.031
    assert dog.stale() and dog.trips == 1
    dog.feed(0.030)
    assert not dog.stale()
    dog.feed(0.001)  # an older stamp never refreshes it
    now[0] = 0.061
    assert dog.stale() and dog.trips == 2
    with pytest.raises(ConfigError):
        Watchdog(period=0.0)


def test_estop_latches_until_reset() -> None:
    stop = EStop()
    assert not stop.active
    stop.trigger("operator")
    stop.trigger("second")
    assert stop.active and stop.reason == "operator" and stop.count == 1
    stop.reset()
    assert not stop.active


@pytest.mark.parametrize("numpy_state", [True, False])
@pytest.mark.parametrize(("controller", "interface"), [
    ("osc", "effort"), ("diff_ik", "position"), ("diff_ik", "velocity")])
def test_a_nan_anywhere_on_the_command_path_holds(controller, interface, numpy_state) -> None:
    # A pose target with a NaN (what a singular solve or a bad upstream value leaves) reaches
    # the command stage: that robot gets the hold command, the other its own command.
    from robot_rl.controllers import EEDeltaConfig, OSCConfig

    env = make_env("reach", 2, action=EEDeltaConfig(gripper=False),
                   controller=OSCConfig() if controller == "osc" else None)
    env.reset(seed=0)
    pipe = env.pipeline
    arm = env.state.arm_state(mass=True, numpy=numpy_state)
    xp = np if numpy_state else torch
    action = xp.zeros((2, env.act_dim), dtype=xp.float32)
    action[:, 0] = 0.5
    targets = pipe.act(action, action * 0, arm).targets
    clean, _ = pipe.command(targets, arm, interface)
    if targets.kind == "pose":
        targets.pos[0, 1] = np.nan
    else:
        targets.joint[0, 2] = np.nan
    cmd, flags = pipe.command(targets, arm, interface)
    assert bool(xp.isfinite(cmd).all())
    assert bool(flags["nan_guard"][0]) and not bool(flags["nan_guard"][1])
    hold = pipe.hold_command(interface, arm.q, arm.q, arm.qd)
    np.testing.assert_allclose(np.asarray(cmd[0]), np.asarray(hold[0]), atol=1e-9)
    np.testing.assert_allclose(np.asarray(cmd[1]), np.asarray(clean[1]), atol=1e-9)
