"""Malformed inputs give clear errors; NaN actions never reach the physics."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from robot_rl.errors import ConfigError, ModelError
from robot_rl.sim import RobotSpec, get_robot, make_env, register_robot


def test_unknown_task_lists_valid_names() -> None:
    with pytest.raises(ConfigError, match=r"unknown task 'nope'; valid tasks: lift, push, "):
        make_env("nope", 1)


def test_unknown_robot_lists_valid_names() -> None:
    with pytest.raises(ConfigError, match=r"unknown robot 'nope'; valid robots: arm7"):
        make_env("reach", 1, robot="nope")


def test_unknown_backend_lists_valid_names() -> None:
    with pytest.raises(ConfigError, match=r"unknown backend 'gpu'; valid backends: cpu"):
        make_env("reach", 1, backend="gpu")


def test_unknown_config_field() -> None:
    with pytest.raises(ConfigError, match="has no config field"):
        make_env("reach", 1, episode_lenght=5)


@pytest.mark.parametrize("n", [0, -3])
def test_num_envs_must_be_positive(n: int) -> None:
    with pytest.raises(ValueError, match="num_envs must be a positive integer"):
        make_env("reach", n)


def test_wrong_action_shape_names_the_expected_shape() -> None:
    env = make_env("reach", 3)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"action must have shape \(3, 7\).*got \(3, 8\)"):
        env.step(torch.zeros(3, 8))
    with pytest.raises(ValueError, match=r"got \(7,\)"):
        env.step(torch.zeros(7))


def test_nan_actions_are_held_per_env_and_counted() -> None:
    env = make_env("reach", 3)
    env.reset(seed=0)
    good = torch.full((3, 7), 0.5)
    env.step(good)
    ctrl_before = env.state.ctrl.clone()
    bad = good.clone()
    bad[1, 2] = float("nan")
    bad[2, 0] = float("inf")
    _, _, _, _, _, info = env.step(bad)
    assert info["invalid_action"].tolist() == [False, True, True]
    assert env.invalid_action_count.tolist() == [0, 1, 1]
    # Envs 1 and 2 applied their last valid action (0.5 everywhere), not the bad one.
    assert torch.equal(env.state.action[1:], good[1:])
    assert torch.isfinite(env.state.ctrl).all()
    assert not torch.equal(env.state.ctrl, ctrl_before)  # the targets moved on from q + 0.05


def test_numpy_actions_are_accepted() -> None:
    env = make_env("reach", 2)
    env.reset(seed=0)
    obs, *_ = env.step(np.zeros((2, 7), dtype=np.float64))
    assert obs.dtype == torch.float32


def test_malformed_mjcf_names_file_and_mujoco_message(tmp_path: Path) -> None:
    bad = tmp_path / "broken.xml"
    bad.write_text("<mujoco><worldbody><body><geom type='sphere' size='0.1'/></body>"
                   "</worldbod></mujoco>")
    with pytest.raises(ModelError, match=r"broken\.xml: .*") as err:
        RobotSpec.from_mjcf(bad, name="broken", joint_names=("j",), ee_site="s",
                            qd_max=(1.0,))
    assert "\n" not in str(err.value)


def test_missing_mjcf_file(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="MJCF file not found"):
        RobotSpec.from_mjcf(tmp_path / "nope.xml", name="x", joint_names=("j",), ee_site="s",
                            qd_max=(1.0,))


def test_spec_names_must_exist_in_the_mjcf(tmp_path: Path) -> None:
    import dataclasses

    spec = dataclasses.replace(get_robot("arm7"), name="typo", ee_site="tool0")
    register_robot("typo", lambda: spec, overwrite=True)
    with pytest.raises(ModelError, match="names site 'tool0', which the MJCF does not define"):
        make_env("reach", 1, robot="typo")


def test_spec_lengths_are_checked() -> None:
    import dataclasses

    with pytest.raises(ConfigError, match="home has 6 entries, expected 7"):
        dataclasses.replace(get_robot("arm7"), home=(0.0,) * 6)


def test_pusher_has_no_expert() -> None:
    env = make_env("pusher", 1)
    with pytest.raises(ConfigError, match="no scripted expert"):
        env.expert_action()


def test_unknown_reward_weight_names_the_terms() -> None:
    with pytest.raises(ConfigError, match=r"reward_weights names unknown terms \['reech'\]"):
        make_env("reach", 1, reward_weights={"reech": 1.0})


def test_make_env_copies_a_passed_config() -> None:
    from robot_rl.sim import make_task_config

    cfg = make_task_config("reach")
    env = make_env(cfg, 1, dr="strong", episode_length=9)
    assert env.cfg.episode_length == 9 and env.cfg.dr.action_delay == (0.0, 0.06)
    assert cfg.episode_length == 100 and cfg.dr.action_delay == (0.0, 0.0)
