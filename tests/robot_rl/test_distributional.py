"""Categorical critics (``--sac.critic-atoms``): the projected TD target by hand, and SAC
learning a value with them."""

from __future__ import annotations

import pytest
import torch

from robot_rl.algos import SAC
from robot_rl.algos.configs import SACConfig, SafetyConfig
from robot_rl.algos.distributional import categorical_loss, categorical_target
from robot_rl.errors import ConfigError
from robot_rl.replay import Batch

SUPPORT = torch.tensor([-1.0, 0.0, 1.0, 2.0])  # 4 atoms, 1 apart


def test_categorical_target_by_hand():
    one_hot = torch.eye(4)
    # a reward of 0.25 moves the atom at 0 (mass 1) to 0.25: 0.75 to 0, 0.25 to 1
    y = categorical_target(one_hot[[1]], torch.tensor([0.25]), torch.tensor([1.0]), SUPPORT)
    torch.testing.assert_close(y, torch.tensor([[0.0, 0.75, 0.25, 0.0]]))
    # landing exactly on an atom keeps the whole mass there, at either end too
    y = categorical_target(one_hot[[0, 1, 3]], torch.tensor([1.0, 1.0, 0.0]),
                           torch.ones(3), SUPPORT)
    torch.testing.assert_close(y, one_hot[[1, 2, 3]])
    y = categorical_target(one_hot[[1]], torch.tensor([-1.0]), torch.ones(1), SUPPORT)
    torch.testing.assert_close(y, one_hot[[0]])
    # beyond the support: clipped to its ends; a discount contracts the support
    y = categorical_target(one_hot[[3, 0]], torch.tensor([5.0, -5.0]), torch.ones(2), SUPPORT)
    torch.testing.assert_close(y, one_hot[[3, 0]])
    y = categorical_target(torch.full((1, 4), 0.25), torch.zeros(1), torch.tensor([0.5]),
                           SUPPORT)  # atoms at -0.5, 0, 0.5, 1: half of each between two
    torch.testing.assert_close(y, torch.tensor([[0.125, 0.375 + 0.125, 0.125 + 0.25, 0.0]]))
    # terminated (discount 0): all mass at the reward
    y = categorical_target(torch.full((1, 4), 0.25), torch.tensor([1.5]), torch.zeros(1),
                           SUPPORT)
    torch.testing.assert_close(y, torch.tensor([[0.0, 0.0, 0.5, 0.5]]))
    mass = categorical_target(torch.rand(64, 4).softmax(-1), torch.randn(64), torch.rand(64),
                              SUPPORT).sum(-1)
    torch.testing.assert_close(mass, torch.ones(64))


def test_categorical_loss_is_the_cross_entropy_summed_over_members():
    logits = torch.randn(3, 5, 4)
    target = torch.rand(5, 4).softmax(-1)
    expected = sum(-(target * logits[i].log_softmax(-1)).sum(-1).mean() for i in range(3))
    torch.testing.assert_close(categorical_loss(logits, target), expected)


def test_sac_with_categorical_critics_learns_a_constant_reward_and_refuses_a_bad_support():
    """A reward of 1 at every step, never terminated, gamma 0.5, no entropy in the target:
    the value is 2; categorical critics learn it as their expectation."""
    torch.manual_seed(0)
    agent = SAC(3, 2, SACConfig(gamma=0.5, critic_atoms=21, v_min=-1.0, v_max=4.0,
                                backup_entropy=False, critic_hidden=(32,), actor_hidden=(8,),
                                critic_lr=3e-3, tau=0.1), SafetyConfig(mode="off"))
    assert agent.critic.logits(torch.zeros(5, 3), torch.zeros(5, 2)).shape == (2, 5, 21)
    for _ in range(400):
        obs = torch.randn(64, 3)
        batch = Batch(obs, torch.rand(64, 2) * 2 - 1, torch.ones(64), torch.zeros(64),
                      torch.randn(64, 3), torch.zeros(64))
        metrics = agent.update(batch, actor=False)
    assert float(metrics["losses/q_mean"]) == pytest.approx(2.0, abs=0.15)
    with torch.no_grad():
        values = agent.critic(torch.randn(16, 3), torch.rand(16, 2) * 2 - 1)  # (N, B)
    assert values.shape == (2, 16) and float(values.mean()) == pytest.approx(2.0, abs=0.15)
    with pytest.raises(ConfigError, match="critic_atoms"):
        SACConfig(gamma=0.9, critic_atoms=11, v_min=1.0, v_max=1.0).validate()
