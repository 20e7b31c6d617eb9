"""Domain randomization: values within the configured ranges and different across envs."""

from __future__ import annotations

import pytest
import torch

from robot_rl.errors import ConfigError
from robot_rl.sim import DRConfig, dr_preset, make_env, make_task_config
from robot_rl.sim.env import robot_bodies


def _ratios(env, field: str, rows: list[int], col: int | None = None) -> torch.Tensor:  # type: ignore[no-untyped-def]
    nominal = getattr(env.model, field)[rows]
    values = env.backend.model_field(field)[:, rows]
    if col is not None:
        nominal, values = nominal[:, col], values[..., col]
    return values / torch.as_tensor(nominal)


def test_strong_preset_ranges_and_spread() -> None:
    env = make_env("push", 16, dr="strong")
    env.reset(seed=0)
    cfg = env.cfg.dr
    bodies = robot_bodies(env.model, env.robot)
    dofs = env.state.joint_dofs
    acts = env.arm_actuator_ids
    checks = [
        (_ratios(env, "body_mass", bodies), cfg.link_mass),
        (_ratios(env, "geom_friction", list(range(env.model.ngeom)), 0), cfg.friction),
        (_ratios(env, "dof_damping", dofs), cfg.joint_damping),
        (_ratios(env, "dof_armature", dofs), cfg.armature),
        (_ratios(env, "actuator_gainprm", acts, 0), cfg.actuator_gain),
        (_ratios(env, "actuator_biasprm", acts, 2), cfg.actuator_gain),
    ]
    for ratio, (lo, hi) in checks:
        assert ratio.min() >= lo - 1e-12 and ratio.max() <= hi + 1e-12
        assert ratio.std() > 0.05 * (hi - lo)  # really spread out
        assert not torch.allclose(ratio[0], ratio[1])  # envs differ
    # Inertia scales with mass; PD stiffness and damping share the gain scale.
    torch.testing.assert_close(_ratios(env, "body_inertia", bodies, 0),
                               _ratios(env, "body_mass", bodies))
    torch.testing.assert_close(_ratios(env, "actuator_biasprm", acts, 1),
                               _ratios(env, "actuator_gainprm", acts, 0))
    delays = env._actuation.delay  # 0-60 ms at 50 Hz: 0 to 3 control steps
    assert env._actuation.steps == (0, 3) and delays.min() >= 0 and delays.max() <= 3
    assert len(set(delays.tolist())) > 1


def test_resampled_at_reset() -> None:
    env = make_env("reach", 4, dr="default", episode_length=2)
    env.reset(seed=0)
    before = env.backend.model_field("body_mass").clone()
    env.step(torch.zeros(4, 7))
    env.step(torch.zeros(4, 7))  # time-out: every env resets
    assert not torch.equal(before, env.backend.model_field("body_mass"))


def test_off_is_nominal_and_noiseless() -> None:
    env = make_env("reach", 4, dr="off")
    assert env.randomizer.groups == []
    a = env.reset(seed=0)
    b = env.reset(seed=0)
    assert torch.equal(a, b)


def test_observation_noise() -> None:
    quiet = make_env("reach", 64, dr="off", init_joint_noise=0.0)
    noisy = make_env(make_task_config("reach", init_joint_noise=0.0,
                                      dr=DRConfig(obs_noise_std=0.01)), 64)
    q, n = quiet.reset(seed=0), noisy.reset(seed=0)
    diff = (n - q)[:, :7]  # joint positions: the same home pose in both
    assert diff.std().item() == pytest.approx(0.01, rel=0.2)


def test_action_delay_sends_the_targets_late_and_shows_the_policy_what_it_sent() -> None:
    """Two envs from the same pose and the same actions, one with two control steps of
    actuation delay: both observe the same last actions (what the shield and the action
    space made of them, as the deploy runtime shows its policy), while the delayed arm acts
    on its first command for three steps (that command was in flight from before its
    episode) and the other moves on to the next."""
    env = make_env(make_task_config("reach", init_joint_noise=0.0, episode_length=50,
                                    dr=DRConfig(action_delay=(0.0, 0.04))), 2)
    env.reset(seed=0)
    env._actuation.delay[:] = torch.tensor([0, 2])
    q0 = env.state.joint_pos.clone()
    seen = []
    for a in (0.5, 0.0, 0.0):
        obs = env.step(torch.full((2, 7), a))[0]
        seen.append(obs[:, -7:])  # last_action
    for x in seen:
        torch.testing.assert_close(x[0], x[1])
    moved = (env.state.joint_pos - q0).abs().sum(dim=1)
    assert moved[1] > 1.2 * moved[0]


def test_delayed_targets_act_late_per_env_and_restart_at_once() -> None:
    from robot_rl.controllers.action_spaces import Targets
    from robot_rl.sim.delay import TargetDelay

    line = TargetDelay((0, 2), 2, "cpu")
    line.delay[:] = torch.tensor([1, 2])
    sent = [Targets("joint", joint=torch.full((2, 3), float(k))) for k in range(1, 6)]
    acted = [line(t).joint[:, 0].tolist() for t in sent]
    # the first targets fill the line: each env acts on them until its delay has passed
    assert acted == [[1.0, 1.0], [1.0, 1.0], [2.0, 1.0], [3.0, 2.0], [4.0, 3.0]]
    line.restart(torch.tensor([1]))
    assert line(Targets("joint", joint=torch.full((2, 3), 9.0))).joint[:, 0].tolist() == \
        [5.0, 9.0]


def test_presets_and_validation() -> None:
    assert dr_preset("off") == DRConfig()
    assert dr_preset("strong").action_delay == (0.0, 0.06)
    assert dr_preset("strong").delay_steps("action_delay", 0.02) == (0, 3)
    assert dr_preset("default").describe().endswith("action delay 0-20 ms")
    with pytest.raises(ConfigError, match="0 <= lo <= hi seconds"):
        DRConfig(sensing_delay=(0.02, 0.01))
    with pytest.raises(ConfigError, match="unknown dr preset"):
        dr_preset("extreme")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="0 < lo <= hi"):
        DRConfig(friction=(1.2, 0.8))


def test_sensing_delay_shows_the_policy_an_older_state() -> None:
    """An env with two control steps of sensing delay observes what one without it observed
    two steps before; an episode starts from its first observation, not from zeros."""
    def env(delay: float):
        return make_env(make_task_config("reach", episode_length=50, init_joint_noise=0.0,
                                         dr=DRConfig(sensing_delay=(delay, delay))), 2)

    now, late = env(0.0), env(0.04)
    assert late._sensing is not None and late._sensing.delay.tolist() == [2, 2]
    first = now.reset(seed=0)
    assert torch.equal(late.reset(seed=0), first)
    action = torch.full((2, 7), 0.5)
    seen = [now.step(action)[0] for _ in range(4)]
    delayed = [late.step(action)[0] for _ in range(4)]
    torch.testing.assert_close(delayed[0], first)  # the first steps still see the start
    torch.testing.assert_close(delayed[1], first)
    torch.testing.assert_close(delayed[2], seen[0])
    torch.testing.assert_close(delayed[3], seen[1])


def test_a_saved_delay_in_control_steps_loads_as_seconds() -> None:
    from robot_rl.config_io import from_dict, to_dict
    from robot_rl.sim.tasks.config import TaskConfig

    saved = to_dict(make_task_config("reach"))
    del saved["dr"]["action_delay"], saved["dr"]["sensing_delay"]
    saved["dr"]["action_delay_max"] = 2  # as runs saved before delays were in seconds
    cfg = from_dict(TaskConfig, saved)
    assert cfg.dr.action_delay == pytest.approx((0.0, 2 * cfg.control_dt))


def test_the_policy_may_observe_its_action_before_the_last() -> None:
    env = make_env(make_task_config("reach", observe_prev_action=True), 2)
    assert [n for n, _ in env.obs_layout][-2:] == ["last_action", "prev_action"]
    env.reset(seed=0)
    env.step(torch.full((2, 7), 0.3))
    obs = env.step(torch.full((2, 7), -0.2))[0]
    torch.testing.assert_close(obs[:, -7:], env.state.prev_action)
    torch.testing.assert_close(obs[:, -14:-7], env.state.action)
