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
    delays = env._delay
    assert delays.min() >= 0 and delays.max() <= cfg.action_delay_max
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


def test_action_delay_delays_actions() -> None:
    env = make_env(make_task_config("reach", dr=DRConfig(action_delay_max=2)), 2)
    env.reset(seed=0)
    env._delay[:] = torch.tensor([0, 2])
    applied = []
    for v in (0.1, 0.2, 0.3):
        env.step(torch.full((2, 7), v))
        applied.append(env.state.action[:, 0].tolist())
    assert [x[0] for x in applied] == pytest.approx([0.1, 0.2, 0.3])
    assert [x[1] for x in applied] == pytest.approx([0.0, 0.0, 0.1])  # two steps late


def test_presets_and_validation() -> None:
    assert dr_preset("off") == DRConfig()
    assert dr_preset("strong").action_delay_max == 3
    with pytest.raises(ConfigError, match="unknown dr preset"):
        dr_preset("extreme")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="0 < lo <= hi"):
        DRConfig(friction=(1.2, 0.8))
