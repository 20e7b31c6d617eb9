"""Determinism, auto-reset with the true final observation, the divergence guard."""

from __future__ import annotations

import pytest
import torch

from robot_rl.sim import make_env


def _rollout(task: str, seed: int, steps: int, nthread: int | None = None,
             **overrides: object) -> list[torch.Tensor]:
    env = make_env(task, 4, nthread=nthread, dr="default", **overrides)
    obs = env.reset(seed=seed)
    gen = torch.Generator().manual_seed(123)
    out = [obs]
    for _ in range(steps):
        action = 2 * torch.rand(4, env.act_dim, generator=gen) - 1
        obs, reward, cost, terminated, truncated, info = env.step(action)
        out += [obs, reward, cost, info["final_obs"], env.state.qpos.clone()]
    return out


@pytest.mark.parametrize("task", ["push", "lift"])
def test_same_seed_same_actions_bitwise_identical(task: str) -> None:
    a = _rollout(task, seed=7, steps=60, episode_length=25)
    b = _rollout(task, seed=7, steps=60, episode_length=25)
    assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


def test_identical_at_any_thread_count() -> None:
    a = _rollout("push", seed=7, steps=30, nthread=1)
    b = _rollout("push", seed=7, steps=30, nthread=2)
    assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


def test_different_seeds_differ() -> None:
    a = _rollout("push", seed=1, steps=1)
    b = _rollout("push", seed=2, steps=1)
    assert not torch.equal(a[0], b[0])


def test_auto_reset_reports_the_true_final_observation() -> None:
    short = make_env("push", 4, episode_length=5)
    long = make_env("push", 4, episode_length=50)
    short.reset(seed=3)
    long.reset(seed=3)
    gen = torch.Generator().manual_seed(0)
    for t in range(1, 6):
        action = 2 * torch.rand(4, short.act_dim, generator=gen) - 1
        obs_s, _, _, _, trunc_s, info_s = short.step(action)
        obs_l, _, _, _, _, info_l = long.step(action)
        if t < 5:
            assert torch.equal(obs_s, obs_l) and torch.equal(info_s["final_obs"], obs_s)
    # At the time-out, final_obs is the observation the episode ended in ...
    assert trunc_s.all()
    assert torch.equal(info_s["final_obs"], obs_l)
    # ... while obs is already the first observation of the next episode.
    assert not torch.equal(obs_s, obs_l)
    assert (short.state.episode_step == 0).all()
    assert (info_s["episode"]["length"] == 5).all()


def test_only_finished_envs_reset() -> None:
    env = make_env("lift", 3, episode_length=200)
    env.reset(seed=0)
    for _ in range(3):
        env.step(env.expert_action())
    # Knock env 1's cube off the table: that env terminates and resets, the others go on.
    q = env.state.qpos_slice("cube_joint")
    env.state.qpos[1, q.start:q.start + 3] = torch.tensor([0.5, 0.0, -0.5], dtype=torch.float64)
    before = env.state.episode_step.clone()
    _, _, _, terminated, _, info = env.step(env.expert_action())
    assert terminated.tolist() == [False, True, False]
    assert env.state.episode_step.tolist() == [int(before[0]) + 1, 0, int(before[2]) + 1]
    assert float(info["final_obs"][1, 16 + 3 + 2]) < -0.4  # the cube's z in the final obs


def test_divergence_guard_resets_only_the_unstable_env() -> None:
    ref = make_env("push", 3)
    env = make_env("push", 3)
    ref.reset(seed=5)
    env.reset(seed=5)
    for _ in range(3):
        a = ref.expert_action()
        ref.step(a)
        env.step(a)
    env.state.qvel[2, 0] = float("nan")  # blow up env 2
    a = ref.expert_action()
    obs_r, *_ = ref.step(a)
    obs, reward, cost, terminated, truncated, info = env.step(a)
    assert info["diverged"].tolist() == [False, False, True]
    assert truncated.tolist() == [False, False, True] and not terminated.any()
    assert torch.isfinite(obs).all() and torch.isfinite(info["final_obs"]).all()
    assert reward[2] == 0 and cost[2] == 0
    assert int(env.state.episode_step[2]) == 0 and int(env.diverged_count[2]) == 1
    # The other envs are untouched: bitwise equal to the run without the blow-up.
    assert torch.equal(obs[:2], obs_r[:2])
    for _ in range(5):
        a = ref.expert_action()
        obs_r, *_ = ref.step(a)
        obs, *_ = env.step(a)
        assert torch.equal(obs[:2], obs_r[:2])


def test_divergence_guard_catches_runaway_speed() -> None:
    env = make_env("reach", 2)
    env.reset(seed=0)
    env.state.qvel[0, 2] = 10 * env.cfg.guard_max_qvel
    _, _, _, _, truncated, info = env.step(torch.zeros(2, env.act_dim))
    assert info["diverged"].tolist() == [True, False] and truncated[0]
