"""SAC learns a trivial task; the replay buffer keeps final observations for time-outs."""

from __future__ import annotations

import pytest
import torch

from robot_rl.algos import SAC
from robot_rl.algos.configs import SACConfig, SafetyConfig
from robot_rl.replay import ReplayBuffer
from robot_rl.sim import make_env


@pytest.mark.slow
def test_sac_learns_a_one_step_task():
    """Reward -||a - s||^2 with one-step episodes: the mean action must approach s."""
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    cfg = SACConfig(gamma=0.97, actor_hidden=(64, 64), critic_hidden=(64, 64), batch_size=128,
                    init_alpha=0.01, target_entropy=-4.0, actor_lr=1e-3, critic_lr=1e-3)
    agent = SAC(2, 2, cfg, SafetyConfig(mode="lagrangian", hidden=(32, 32)))
    buf = ReplayBuffer(20_000, 2, 2)
    for _ in range(700):
        obs = torch.rand(32, 2, generator=gen) * 1.6 - 0.8
        action = agent.act(obs).action
        reward = -((action - obs) ** 2).sum(1)
        cost = (action[:, 0] > 0.5).float()
        ones = torch.ones(32)
        buf.add(obs, action, reward, cost, obs, ones)
        agent.observe(obs)
        agent.update(buf.sample(cfg.batch_size, gen))
    test = torch.rand(256, 2, generator=gen) * 1.6 - 0.8
    err = (agent.act(test, deterministic=True).action - test).abs().mean()
    assert float(err) < 0.1, float(err)
    # The cost critic learned the one-step cost: high where a_0 > 0.5, low elsewhere.
    assert agent.cost_critic is not None
    with torch.no_grad():
        hi = agent.cost_critic.q(agent.normalize(test), torch.full((256, 2), 0.8)).mean()
        lo = agent.cost_critic.q(agent.normalize(test), torch.full((256, 2), -0.5)).mean()
    assert float(hi) > 0.5 > float(lo)


def test_replay_stores_final_obs_and_bootstraps_time_outs():
    env = make_env("reach", 2, episode_length=3)
    buf = ReplayBuffer(16, env.obs_dim, env.act_dim)
    obs = env.reset(seed=0)
    for _ in range(3):
        action = env.random_action()
        next_obs, reward, cost, terminated, truncated, info = env.step(action)
        buf.add(obs, action, reward, cost, info["final_obs"], terminated)
        obs = next_obs
    assert bool(truncated.all()) and not bool(terminated.any())
    last = slice(4, 6)
    # The stored next observation is the episode's true last one, not the reset's first.
    torch.testing.assert_close(buf.next_obs[last], info["final_obs"])
    assert not torch.allclose(buf.next_obs[last], next_obs)
    assert buf.terminated[:6].sum() == 0  # time-outs keep bootstrapping
    batch = buf.sample(64, torch.Generator().manual_seed(0))
    assert batch.obs.shape == (64, env.obs_dim) and batch.terminated.shape == (64,)


def test_replay_ring_wraps_and_masks():
    buf = ReplayBuffer(5, 1, 1)
    for i in range(3):
        x = torch.full((2, 1), float(i))
        buf.add(x, x, x[:, 0], x[:, 0], x, x[:, 0] * 0)
    assert len(buf) == 5 and buf.pos == 1
    # Slots 0-1 got batch 0, 2-3 batch 1, 4 and (wrapping) 0 batch 2.
    assert buf.obs[:, 0].tolist() == [2.0, 0.0, 1.0, 1.0, 2.0]
    buf.add(torch.ones(2, 1) * 7, torch.ones(2, 1), torch.ones(2), torch.ones(2),
            torch.ones(2, 1), torch.zeros(2), mask=torch.tensor([True, False]))
    assert buf.pos == 2 and float(buf.obs[1, 0]) == 7.0


def test_push_episodes_tell_a_goal_reached_then_lost_from_one_held() -> None:
    """Two envs, 5-step episodes (4 steps taken): env 0's puck reaches the goal at step 1
    and stays; env 1's reaches it at step 0 and is pushed 3 cm past it by the end."""
    from types import SimpleNamespace

    from robot_rl.bench.learning import push_episodes

    paths = torch.tensor([[[0.10, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]],
                          [[0.0, 0.0], [0.01, 0.0], [0.02, 0.0], [0.03, 0.0]]])

    class Env:
        num_envs, max_episode_length = 2, 5

        def __init__(self) -> None:
            self.t = 0
            self.state = SimpleNamespace(sensors={}, buffers={"goal": torch.zeros(2, 3)})

        def _puck(self, xy: torch.Tensor) -> None:
            self.state.sensors["puck_pos"] = torch.cat([xy, torch.zeros(2, 1)], dim=1)

        def reset(self, seed: int) -> torch.Tensor:
            self.t = 0
            self._puck(torch.tensor([[0.2, 0.0], [0.1, 0.0]]))
            return torch.zeros(2, 1)

        def step(self, action: torch.Tensor) -> tuple:
            self._puck(paths[:, self.t])
            self.t += 1
            near = self.state.sensors["puck_pos"][:, :2].norm(dim=1) < 0.02
            return torch.zeros(2, 1), None, None, None, None, {"success": near}

    rows = push_episodes(Env(), lambda o: o, lambda mask: None, rounds=1, seed=0)
    assert [(r["first"], r["end"]) for r in rows] == [(1, 1), (0, 0)]
    assert [round(r["final"], 3) for r in rows] == [0.0, 0.03]
    assert [round(r["closest"], 3) for r in rows] == [0.0, 0.0]
    assert [round(r["moved"], 3) for r in rows] == [0.2, 0.1]
    assert [round(r["length"], 3) for r in rows] == [0.2, 0.1]
