"""n-step transitions: hand-computed sums and discounts, a plain reference over random
episodes, the chain cuts, the SAC target that reads them and a runner that stores them."""

from __future__ import annotations

import pytest
import torch

from robot_rl.algos import SAC
from robot_rl.algos.configs import SACConfig, SafetyConfig
from robot_rl.errors import ConfigError
from robot_rl.nstep import COST_DISCOUNT, DISCOUNT, NStepTransitions, NStepWriter
from robot_rl.replay import Batch


def one_env_step(writer: NStepWriter, t: int, reward: float, cost: float = 0.0,
                 terminated: bool = False, done: bool = False) -> NStepTransitions | None:
    """Step t of a single env whose observation is [t] and next observation [t + 1]."""
    return writer.push(torch.tensor([[float(t)]]), torch.tensor([[float(-t)]]),
                       torch.tensor([reward]), torch.tensor([cost]),
                       torch.tensor([[t + 1.0]]), torch.tensor([float(terminated)]),
                       torch.tensor([done]))


def test_three_step_sums_and_discounts_by_hand():
    w = NStepWriter(3, gamma=0.5, cost_gamma=0.9, num_envs=1, obs_dim=1, act_dim=1)
    assert one_env_step(w, 0, 1.0, cost=1.0) is None
    assert one_env_step(w, 1, 2.0) is None
    out = one_env_step(w, 2, 3.0, cost=1.0)
    assert out is not None  # step 0's transition: its three rewards, bootstrapped from s3
    assert out.obs.tolist() == [[0.0]] and out.action.tolist() == [[0.0]]
    assert out.reward.tolist() == [pytest.approx(1 + 0.5 * 2 + 0.25 * 3)]
    assert out.cost.tolist() == [pytest.approx(1 + 0.81 * 1)]
    assert out.next_obs.tolist() == [[3.0]] and out.discount.tolist() == [0.125]
    assert out.cost_discount.tolist() == [pytest.approx(0.729)]
    out = one_env_step(w, 3, 4.0, terminated=True, done=True)  # the episode ends: all out
    assert out is not None
    assert out.obs.squeeze(1).tolist() == [1.0, 2.0, 3.0]
    assert out.reward.tolist() == pytest.approx([2 + 0.5 * 3 + 0.25 * 4, 3 + 0.5 * 4, 4.0])
    assert out.discount.tolist() == [0.125, 0.25, 0.5]
    assert out.next_obs.squeeze(1).tolist() == [4.0, 4.0, 4.0]
    assert out.terminated.tolist() == [1.0, 1.0, 1.0]
    assert int(w.length[0]) == 0


def reference(n: int, gamma: float, steps: list[tuple]) -> list[tuple]:
    """Plain per-env n-step transitions: (env, t, reward sum, discount, next obs, term)."""
    out = []
    for env in range(len(steps[0][0])):
        chain: list[tuple[int, float]] = []
        for t, (_, rewards, nexts, terms, dones) in enumerate(steps):
            chain.append((t, rewards[env]))
            ended = dones[env]
            while chain and (len(chain) == n or ended):
                m = len(chain)
                ret = sum(gamma ** k * r for k, (_, r) in enumerate(chain))
                out.append((env, chain[0][0], ret, gamma ** m,
                            nexts[env], terms[env]))
                chain.pop(0)
                if not ended:
                    break
    return sorted(out)


@pytest.mark.parametrize("n", [1, 2, 4])
def test_random_episodes_match_a_plain_reference(n):
    """Every step stored exactly once, with the sums a per-env loop computes; n = 1 is the
    one-step transition itself."""
    gen = torch.Generator().manual_seed(n)
    E, gamma, steps, got = 3, 0.9, [], []
    w = NStepWriter(n, gamma=gamma, cost_gamma=0.5, num_envs=E, obs_dim=2, act_dim=1)
    for t in range(40):
        obs = torch.stack([torch.full((E,), float(t)), torch.arange(E, dtype=torch.float)], 1)
        rewards = torch.rand(E, generator=gen)
        dones = torch.rand(E, generator=gen) < 0.2
        terms = (dones & (torch.rand(E, generator=gen) < 0.5)).float()
        nexts = obs + torch.tensor([[0.5, 0.0]])
        steps.append((obs, rewards.tolist(), nexts[:, 0].tolist(), terms.tolist(),
                      dones.tolist()))
        out = w.push(obs, obs[:, :1], rewards, torch.zeros(E), nexts, terms, dones)
        if out is not None:
            got += [(int(o[1]), int(o[0]), float(r), float(d),
                     float(x[0]), float(term))
                    for o, r, d, x, term in zip(out.obs, out.reward, out.discount,
                                                 out.next_obs, out.terminated, strict=True)]
    want = reference(n, gamma, steps)
    assert [g[:2] for g in sorted(got)] == [t[:2] for t in want]
    assert [g[2:] for g in sorted(got)] == [pytest.approx(t[2:], abs=1e-4) for t in want]
    assert len(got) + int(w.length.sum()) == 40 * E


def test_a_step_not_kept_cuts_its_chain_at_the_observation_before_it():
    w = NStepWriter(3, gamma=0.5, cost_gamma=0.5, num_envs=2, obs_dim=1, act_dim=1)
    ones, no = torch.ones(2), torch.zeros(2, dtype=torch.bool)
    assert w.push(torch.tensor([[0.0], [10.0]]), torch.zeros(2, 1), ones, ones * 0,
                  torch.tensor([[1.0], [11.0]]), ones * 0, no) is None
    out = w.push(torch.tensor([[1.0], [11.0]]), torch.zeros(2, 1), ones, ones * 0,
                 torch.tensor([[2.0], [12.0]]), ones * 0, no, keep=torch.tensor([True, False]))
    assert out is not None  # env 1's step 0 alone, bootstrapped from where it was cut
    assert out.obs.tolist() == [[10.0]] and out.next_obs.tolist() == [[11.0]]
    assert out.discount.tolist() == [0.5] and out.terminated.tolist() == [0.0]
    assert w.length.tolist() == [2, 0]
    cut = w.cut(torch.tensor([[2.0], [12.0]]))  # before the envs are reset: env 0's two
    assert cut is not None and cut.obs.squeeze(1).tolist() == [0.0, 1.0]
    assert cut.reward.tolist() == [1.5, 1.0] and cut.discount.tolist() == [0.25, 0.5]
    assert w.length.tolist() == [0, 0] and w.cut(torch.zeros(2, 1)) is None


def test_sac_bootstraps_with_each_transitions_own_discount():
    """A discount of 0 in the batch stops the bootstrap as ``terminated`` does: the same
    critic loss from the same weights."""
    def loss(extra: dict, terminated: float) -> float:
        torch.manual_seed(0)
        agent = SAC(2, 1, SACConfig(gamma=0.9), SafetyConfig(mode="both"))
        batch = Batch(torch.randn(8, 2), torch.rand(8, 1), torch.ones(8), torch.ones(8),
                      torch.randn(8, 2), torch.full((8,), terminated), extra)
        m = agent.update(batch, actor=False)
        return float(m["losses/critic"]), float(m["losses/cost_critic"])

    zero = {DISCOUNT: torch.zeros(8), COST_DISCOUNT: torch.zeros(8)}
    assert loss(zero, 0.0) == pytest.approx(loss({}, 1.0))
    assert loss({}, 0.0) != pytest.approx(loss({}, 1.0))


def test_runner_stores_n_step_transitions_and_refuses_where_it_cannot(tmp_path):
    from robot_rl.cluster.collector import make_learner
    from robot_rl.finetune.runner import FinetuneRunner
    from robot_rl.runner import Runner
    from robot_rl.vision.pixel_runner import PixelRunner
    from tests.robot_rl.test_runner import tiny_config

    small = dict(actor_hidden=(32, 32), critic_hidden=(32, 32), batch_size=32,
                 buffer_size=5_000, learning_starts=80)
    runner = Runner(tiny_config(tmp_path, sac=SACConfig(**small, n_step=3)))
    runner.train()
    assert runner.nstep is not None
    assert len(runner.buffer) + int(runner.nstep.length.sum()) == 240  # every step once
    g = runner.agent.gamma
    stored = runner.buffer.extra[DISCOUNT][:len(runner.buffer)]
    m = torch.log(stored.double()) / torch.log(torch.tensor(g, dtype=torch.float64))
    assert torch.allclose(m, m.round(), atol=1e-3) and set(m.round().tolist()) <= {1, 2, 3}
    assert float((m.round() == 3).float().mean()) > 0.5  # 20-step episodes: mostly full

    class OneStep(Runner):
        n_step_ok = False

    with pytest.raises(ConfigError, match="n-step"):
        OneStep(tiny_config(tmp_path, run_name="one", sac=SACConfig(**small, n_step=2)))
    assert not (FinetuneRunner.n_step_ok or PixelRunner.n_step_ok)
    with pytest.raises(ConfigError, match="n-step 2: rollouts arrive as one-step"):
        make_learner(tiny_config(tmp_path, run_name="ray", sac=SACConfig(**small, n_step=2)))
