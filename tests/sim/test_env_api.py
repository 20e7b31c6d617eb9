"""Every registered task resets and steps with the right shapes, dtypes and no NaN."""

from __future__ import annotations

import pytest
import torch

from robot_rl.sim import list_tasks, make_env
from tests.conftest import ALL_TASKS


def test_registry_lists_every_task() -> None:
    assert set(ALL_TASKS) <= set(list_tasks())


@pytest.mark.parametrize("task", ALL_TASKS)
def test_shapes_and_dtypes(task: str) -> None:
    env = make_env(task, 3)
    obs = env.reset(seed=0)
    assert obs.shape == (3, env.obs_dim) and obs.dtype == torch.float32
    assert env.obs_dim == sum(width for _, width in env.obs_layout)
    obs, reward, cost, terminated, truncated, info = env.step(env.random_action())
    assert obs.shape == (3, env.obs_dim) and obs.dtype == torch.float32
    for t in (reward, cost):
        assert t.shape == (3,) and t.dtype == torch.float32
    for t in (terminated, truncated, info["success"], info["diverged"], info["invalid_action"]):
        assert t.shape == (3,) and t.dtype == torch.bool
    assert info["final_obs"].shape == obs.shape
    assert set(info["reward_terms"]) == set(env.task.rewards)
    assert set(info["cost_terms"]) == set(env.task.costs) >= {
        "joint_limit", "joint_velocity", "workspace", "table_contact"}
    # The breakdowns add up to the totals.
    total = torch.stack(list(info["reward_terms"].values())).sum(0).float()
    torch.testing.assert_close(total, reward)
    torch.testing.assert_close(torch.stack([c.float() for c in info["cost_terms"].values()])
                               .sum(0), cost)


@pytest.mark.slow
@pytest.mark.parametrize("task", ALL_TASKS)
def test_no_nan_over_1k_random_steps(task: str) -> None:
    env = make_env(task, 2, dr="strong")
    env.reset(seed=1)
    for _ in range(1000):
        obs, reward, cost, _, _, info = env.step(env.random_action())
        assert torch.isfinite(obs).all() and torch.isfinite(reward).all()
        assert torch.isfinite(cost).all() and (cost >= 0).all()
        assert torch.isfinite(info["final_obs"]).all()
    assert int(env.diverged_count.sum()) == 0


def test_control_rate_and_physics_dt() -> None:
    env = make_env("reach", 1, decimation=4)
    assert env.model.opt.timestep == pytest.approx(0.002)
    assert env.control_dt == pytest.approx(0.008)
    env.reset(seed=0)
    t0 = float(env.backend.time[0])
    env.step(torch.zeros(1, env.act_dim))
    assert float(env.backend.time[0]) - t0 == pytest.approx(0.008)


def test_truncation_at_episode_length() -> None:
    env = make_env("reach", 2, episode_length=7)
    env.reset(seed=0)
    for t in range(1, 8):
        _, _, _, terminated, truncated, info = env.step(torch.zeros(2, env.act_dim))
        assert truncated.all() == (t == 7)
        assert not terminated.any()
    assert (info["episode"]["length"] == 7).all()
    assert (env.state.episode_step == 0).all()


def test_overtime_runs_a_failed_episode_on_until_success_or_its_end() -> None:
    """Env 0's target sits on its hand (success at every step), env 1's far away: env 0
    ends at the episode's length, env 1 four steps of overtime later; then, its target on
    its hand during overtime, at its first success."""
    env = make_env("reach", 2, episode_length=7)
    env.overtime = 4
    env.reset(seed=0)

    def place_targets() -> None:
        env.state.buffers["target"][0] = env.state.sensors["ee_pos"][0]
        env.state.buffers["target"][1] = env.state.sensors["ee_pos"][1] + 1.0

    ends: dict[int, list[int]] = {0: [], 1: []}
    for t in range(1, 16):
        place_targets()
        _, _, _, _, truncated, info = env.step(torch.zeros(2, env.act_dim))
        for i in (0, 1):
            if truncated[i]:
                ends[i].append(t)
                assert bool(info["episode"]["success"][i]) == (i == 0)
                assert int(info["episode"]["length"][i]) == (7 if i == 0 else 11)
    assert ends == {0: [7, 14], 1: [11]}
    # in overtime, the first success ends the episode
    for _ in range(4):  # env 1's next episode (4 steps in): to its length, then one more
        place_targets()
        *_, truncated, info = env.step(torch.zeros(2, env.act_dim))
    assert int(env.state.episode_step[1]) == 8 and not truncated[1]
    env.state.buffers["target"][1] = env.state.sensors["ee_pos"][1]
    *_, truncated, info = env.step(torch.zeros(2, env.act_dim))
    assert truncated[1] and int(info["episode"]["length"][1]) == 9
    assert bool(info["episode"]["success"][1])


def test_output_device_is_the_env_device() -> None:
    env = make_env("reach", 2)
    obs = env.reset(seed=0)
    assert obs.device == env.device == torch.device("cpu")
