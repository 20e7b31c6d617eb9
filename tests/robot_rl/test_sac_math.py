"""Hand-computed numbers for SAC's TD target, temperature loss, cost backup, Lagrange
multiplier, the ensemble critic and the gate inside SAC.act."""

from __future__ import annotations

import math

import pytest
import torch

from robot_rl.algos import SAC
from robot_rl.algos.configs import SACConfig, SafetyConfig
from robot_rl.algos.sac import alpha_loss, soft_td_target
from robot_rl.algos.safety_critic import Lagrange, cost_td_target
from robot_rl.errors import ConfigError
from robot_rl.nets import EnsembleCritic, RunningNorm, tanh_gaussian_log_prob
from robot_rl.replay import Batch


def test_soft_td_target_by_hand():
    r = torch.tensor([1.0, 1.0, -0.5])
    terminated = torch.tensor([0.0, 1.0, 0.0])  # row 3: a time-out, still bootstraps
    next_q = torch.tensor([2.0, 2.0, 4.0])
    next_logp = torch.tensor([0.5, 0.5, -1.0])
    y = soft_td_target(r, terminated, next_q, next_logp, alpha=0.2, gamma=0.9)
    # 1 + 0.9 (2 - 0.1) = 2.71;  terminated: 1;  -0.5 + 0.9 (4 + 0.2) = 3.28
    torch.testing.assert_close(y, torch.tensor([2.71, 1.0, 3.28]))


def test_cost_td_target_by_hand():
    c = torch.tensor([1.0, 0.0, 1.0])
    terminated = torch.tensor([0.0, 0.0, 1.0])
    next_qc = torch.tensor([3.0, 0.5, 9.0])
    y = cost_td_target(c, terminated, next_qc, gamma=0.8)
    torch.testing.assert_close(y, torch.tensor([1.0 + 2.4, 0.4, 1.0]))


def test_alpha_loss_moves_temperature_toward_target_entropy():
    target = -2.0
    for logp, should_grow in ((torch.tensor([3.0, 3.0]), True),    # entropy -3 < -2: too low
                              (torch.tensor([0.0, 1.0]), False)):  # entropy -0.5 > -2
        log_alpha = torch.tensor(math.log(0.1), requires_grad=True)
        loss = alpha_loss(log_alpha, logp, target)
        # by hand: -log_alpha * mean(logp + target)
        assert float(loss.detach()) == pytest.approx(-math.log(0.1) * float((logp + target).mean()))
        loss.backward()
        grad = float(log_alpha.grad)
        assert (grad < 0) == should_grow  # gradient descent raises log_alpha when grad < 0


def test_tanh_gaussian_log_prob_matches_torch_distributions():
    torch.manual_seed(0)
    mean, log_std = torch.randn(5, 3), torch.randn(5, 3) * 0.3
    u = mean + log_std.exp() * torch.randn(5, 3)
    dist = torch.distributions.TransformedDistribution(
        torch.distributions.Normal(mean, log_std.exp()),
        [torch.distributions.TanhTransform(cache_size=1)])
    expected = dist.log_prob(torch.tanh(u)).sum(-1)
    torch.testing.assert_close(tanh_gaussian_log_prob(u, mean, log_std), expected,
                               atol=1e-4, rtol=1e-4)


def _adam_steps(grads: list[float], lr: float, b1: float = 0.9, b2: float = 0.999,
                eps: float = 1e-8) -> list[float]:
    """Adam's updates for a scalar's gradients, written out (Kingma and Ba, Algorithm 1)."""
    m = v = 0.0
    out = []
    for t, g in enumerate(grads, start=1):
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        out.append(-lr * (m / (1 - b1 ** t)) / (math.sqrt(v / (1 - b2 ** t)) + eps))
    return out


def test_lagrange_multiplier_is_adam_on_the_cost_excess_and_bounded():
    lag = Lagrange(SafetyConfig(cost_limit=2.0, lambda_lr=0.1, lambda_max=100.0))
    assert lag.value == 0.0
    # dL/dlambda = -(J_c - limit): -4 five times (violated), then +1 (met)
    steps = _adam_steps([-4.0] * 5 + [1.0], lr=0.1)
    expected = 0.0
    for i in range(5):
        lag.update(6.0)
        expected += steps[i]
    assert lag.value == pytest.approx(expected, abs=1e-6)
    assert lag.value == pytest.approx(0.5, abs=1e-6)  # 0.1 per step, whatever the excess
    lag.update(1.0)
    assert lag.value == pytest.approx(expected + steps[5], abs=1e-6)
    # (Adam's momentum carries it on for a step after the sign changes; then it falls)
    for _ in range(100):
        lag.update(0.0)
    assert lag.value == 0.0  # never negative
    # a huge excess moves it no faster: no reward-gradient collapse in a costly warm start
    big = Lagrange(SafetyConfig(cost_limit=1.0, lambda_lr=0.1))
    for _ in range(10):
        big.update(85.0)
    assert big.value == pytest.approx(1.0, abs=1e-5)
    capped = Lagrange(SafetyConfig(cost_limit=1.0, lambda_lr=0.5, lambda_max=1.2))
    for _ in range(10):
        capped.update(5.0)
    assert capped.value == pytest.approx(1.2)


def test_lagrange_state_round_trip_keeps_adam_moments():
    a = Lagrange(SafetyConfig(lambda_lr=0.1))
    for _ in range(3):
        a.update(4.0)
    b = Lagrange(SafetyConfig(lambda_lr=0.1))
    b.load_state_dict(a.state_dict())
    assert b.value == a.value
    assert a.update(0.2) == pytest.approx(b.update(0.2))
    old = Lagrange(SafetyConfig(lambda_lr=0.1))
    old.load_state_dict({"value": 0.7})  # a checkpoint from before the Adam multiplier
    assert old.value == pytest.approx(0.7)


def test_multiplier_steps_on_the_last_episodes_costs():
    lag = Lagrange(SafetyConfig(lambda_lr=0.1, cost_limit=1.0, cost_window=3))
    lag.step()
    assert lag.value == 0.0  # no episode yet: nothing to compare
    lag.add_episodes([9.0, 0.0, 0.0, 0.0])  # window: 0, 0, 0
    lag.step()
    assert lag.value == 0.0  # J_c = 0 < 1: clamped at 0
    lag.add_episodes([6.0])  # window 0, 0, 6: J_c = 2 > 1
    down, up = _adam_steps([1.0, -1.0], lr=0.1)
    lag.step()
    assert lag.value == pytest.approx(max(down, 0.0) + up, abs=1e-6)
    assert lag.value > 0.0


def test_multiplier_window_takes_the_envs_that_ended_in_their_order():
    """The per-env form (costs of E envs, the ended ones masked) keeps the same window as
    the list of the ended episodes' costs: the last W in the order they ended."""
    cfg = SafetyConfig(lambda_lr=0.1, cost_limit=1.0, cost_window=3)
    listed, masked = Lagrange(cfg), Lagrange(cfg)
    rounds = [([1.0, 2.0, 3.0, 4.0], [False, True, False, True]),
              ([5.0, 6.0, 7.0, 8.0], [True, True, True, False]),
              ([9.0, 0.0, 0.0, 0.0], [False, False, False, False])]
    for costs, ended in rounds:
        listed.add_episodes([c for c, e in zip(costs, ended, strict=True) if e])
        masked.add_episodes(torch.tensor(costs), torch.tensor(ended))
        listed.step()
        masked.step()
        assert masked.value == listed.value
    assert masked.window.tolist() == [5.0, 6.0, 7.0] and int(masked.count) == 3
    assert listed.value > 0.0  # J_c = 6 > 1


def test_ensemble_members_are_independent():
    torch.manual_seed(0)
    critic = EnsembleCritic(3, 4, 2, (16, 16), layer_norm=True)
    obs, act = torch.randn(8, 4), torch.randn(8, 2)
    q = critic(obs, act)
    assert q.shape == (3, 8)
    q[1].sum().backward()  # only member 1 gets gradient
    w = critic.net[0].weight.grad
    assert w[1].abs().sum() > 0 and w[0].abs().sum() == 0 and w[2].abs().sum() == 0
    assert not torch.allclose(q[0], q[1])  # separately initialized


def test_running_norm_matches_batch_statistics():
    torch.manual_seed(0)
    x = torch.randn(1000, 3) * torch.tensor([1.0, 5.0, 0.1]) + torch.tensor([2.0, -1.0, 0.0])
    norm = RunningNorm(3)
    for chunk in x.split(37):
        norm.update(chunk)
    torch.testing.assert_close(norm.mean, x.mean(0), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(norm.var, x.var(0, correction=0), atol=1e-4, rtol=1e-4)


def test_bad_sac_config_is_refused():
    with pytest.raises(ConfigError, match="critic_subset"):
        SAC(3, 2, SACConfig(gamma=0.99, num_critics=2, critic_subset=3),
            SafetyConfig(mode="off"))
    with pytest.raises(ConfigError, match="safety mode"):
        SAC(3, 2, SACConfig(gamma=0.99), SafetyConfig(mode="sometimes"))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="discount"):
        SAC(3, 2, SACConfig(), SafetyConfig(mode="off"))  # gamma left to the task


class _ToyCost(torch.nn.Module):
    """Cost = first action component (unsafe when large), value = second component."""

    def estimate(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        return act[:, 0]


class _ToyValue(torch.nn.Module):
    def forward(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        return act[:, 1][None].repeat(2, 1)


def test_gate_in_act_picks_best_safe_candidate_else_least_cost():
    torch.manual_seed(0)
    agent = SAC(3, 2, SACConfig(gamma=0.99, normalize_obs=False),
                SafetyConfig(mode="gate", threshold=0.0, candidates=16, by_value=True))
    agent.cost_critic.estimate = _ToyCost().estimate  # type: ignore[union-attr,method-assign]
    agent.critic = _ToyValue()  # type: ignore[assignment]
    obs = torch.zeros(64, 3)
    step = agent.act(obs)
    a = step.action
    safe = ~step.rejected
    assert bool(safe.any())
    assert bool((a[safe, 0] <= 0).all())  # chosen candidates are under the threshold
    # Re-run with a fixed candidate set to check "best by value among the safe ones".
    cands = torch.tensor([[[0.5, 0.9], [-0.2, 0.1], [-0.1, 0.7], [0.3, 1.0]]])
    res = agent.gate(cands, cands[..., 0], cands[..., 1])
    assert res.index.tolist() == [2]
    all_unsafe = torch.tensor([[[0.5, 0.9], [0.2, 0.1], [0.3, 1.0]]])
    res = agent.gate(all_unsafe, all_unsafe[..., 0], all_unsafe[..., 1])
    assert res.index.tolist() == [1] and res.rejected.tolist() == [True]


def test_deterministic_act_without_gate_is_the_tanh_mean():
    torch.manual_seed(0)
    agent = SAC(5, 3, SACConfig(gamma=0.99, normalize_obs=False), SafetyConfig(mode="off"))
    obs = torch.randn(4, 5)
    torch.testing.assert_close(agent.act(obs, deterministic=True).action,
                               agent.actor.mean_action(obs))


def test_evaluation_gate_keeps_the_policys_mean_while_safe_as_the_artifact_does():
    """Deterministic decisions screen the mean with perturbations of it (the artifact's
    candidates): the mean is kept whenever its cost is under the threshold, even where the
    critics value another candidate more; only an unsafe mean is replaced."""
    torch.manual_seed(0)
    agent = SAC(3, 2, SACConfig(gamma=0.99, normalize_obs=False),
                SafetyConfig(mode="gate", threshold=0.0, candidates=8, candidate_noise=0.3))
    assert agent.cost_critic is not None
    agent.cost_critic.estimate = _ToyCost().estimate  # type: ignore[method-assign]
    agent.critic = _ToyValue()  # type: ignore[assignment]
    x = torch.zeros(256, 3)
    mean = torch.cat([torch.full((128, 1), -0.5), torch.full((128, 1), 0.2)])  # safe / unsafe
    dist = (torch.atanh(torch.cat([mean, torch.zeros(256, 1)], 1)), torch.zeros(256, 2))
    step = agent.decide(dist, x, deterministic=True)
    first = torch.tanh(dist[0])
    torch.testing.assert_close(step.action[:128], first[:128])  # safe mean: kept as it is
    unsafe = step.action[128:]
    moved = ~step.rejected[128:]
    assert bool(moved.any()) and bool((unsafe[moved, 0] <= 0.0).all())
    # the replacements are the artifact's perturbations of the mean: within a few sigma
    assert float((unsafe[:, 0] - 0.2).abs().max()) < 6 * 0.3
    assert bool((unsafe[~moved, 0] <= 0.2).all())  # none safe: the least-cost candidate
    # by value (an opt-in for exploration): sampled decisions take the best safe candidate
    # by the critics; deterministic ones still keep the safe mean (the artifact's rule)
    agent.safety_cfg = SafetyConfig(mode="gate", threshold=0.0, candidates=8, by_value=True)
    torch.testing.assert_close(agent.decide(dist, x, deterministic=True).action[:128],
                               first[:128])
    explored = agent.decide((dist[0], torch.full((256, 2), -1.0)), x).action[:128]
    kept = agent.decide((dist[0], torch.full((256, 2), -1.0)), x, gate=False).action[:128]
    assert float((explored[:, 1] - kept[:, 1]).mean()) > 0.1  # higher "value" picked


def test_decimation_from_a_control_rate():
    from robot_rl.sim.tasks.config import decimation_for

    # physics at 2 ms (500 Hz): 50 Hz is 10 steps, 20 Hz 25, 10 Hz (HIL-SERL's) 50
    assert [decimation_for(hz, 0.002) for hz in (50, 20, 10, 500)] == [10, 25, 50, 1]
    for hz in (30.0, 1000.0, 0.0):  # 16.7 and 0.5 steps: not whole; 0 Hz: no rate
        with pytest.raises(ConfigError, match="whole number|> 0 Hz"):
            decimation_for(hz, 0.002)


def test_discount_from_a_horizon_in_seconds():
    from robot_rl.sim import make_task_config
    from robot_rl.sim.tasks.config import discount_for

    # HIL-SERL's 0.97 at 10 Hz is a 3.33 s horizon; at 50 Hz the same horizon is 0.994
    assert discount_for(10 / 3, 0.1) == pytest.approx(0.97)
    assert discount_for(10 / 3, 0.02) == pytest.approx(0.994)
    push, reach = make_task_config("push"), make_task_config("reach")
    assert push.control_dt == pytest.approx(0.02)
    assert push.discount() == pytest.approx(0.994)
    assert reach.discount() == pytest.approx(0.97)  # reach looks 2/3 s ahead
    push.decimation = 50  # the same task at 10 Hz looks as far ahead
    assert push.discount() == pytest.approx(0.97)
    assert SACConfig().with_gamma(0.02, 10 / 3).gamma == pytest.approx(0.994)
    assert SACConfig(gamma=0.9).with_gamma(0.02, 10 / 3).gamma == 0.9  # a set value stays
    with pytest.raises(ConfigError, match="horizon"):
        discount_for(0.01, 0.02)


def test_update_backs_up_entropy_only_when_asked(monkeypatch):
    """RLPD backs up alpha log pi in its TD target (its default); its sparse-reward commands
    and WSRL do not: the update passes the temperature, or 0, to the target."""
    import robot_rl.algos.sac as sac_module
    from robot_rl.replay import Batch

    seen: list[float] = []
    real = sac_module.soft_td_target

    def spy(reward, terminated, next_q, next_logp, alpha, gamma):  # type: ignore[no-untyped-def]
        seen.append(float(alpha))
        return real(reward, terminated, next_q, next_logp, alpha, gamma)

    monkeypatch.setattr(sac_module, "soft_td_target", spy)
    batch = Batch(torch.zeros(4, 2), torch.zeros(4, 1), torch.ones(4), torch.zeros(4),
                  torch.zeros(4, 2), torch.zeros(4))
    for backup, alpha in ((True, 0.5), (False, 0.0)):
        agent = SAC(2, 1, SACConfig(gamma=0.5, init_alpha=0.5, backup_entropy=backup),
                    SafetyConfig(mode="off"))
        agent.update(batch)
        assert seen[-1] == pytest.approx(alpha)


def test_frozen_normalizer_keeps_its_statistics():
    agent = SAC(2, 1, SACConfig(gamma=0.9), SafetyConfig(mode="off"))
    agent.observe(torch.tensor([[0.0, 1.0], [2.0, 3.0]]))
    mean, var = agent.normalizer.mean.clone(), agent.normalizer.var.clone()
    agent.freeze_normalizer()
    agent.observe(torch.full((100, 2), 50.0))  # a warm-started policy's new states
    torch.testing.assert_close(agent.normalizer.mean, mean)
    torch.testing.assert_close(agent.normalizer.var, var)
    torch.testing.assert_close(agent.normalizer.mean, torch.tensor([1.0, 2.0]))
    other = SAC(2, 1, SACConfig(gamma=0.9), SafetyConfig(mode="off"))
    other.load_full_state(agent.full_state())  # saved with the checkpoint, frozen
    assert other.normalizer_frozen
    torch.testing.assert_close(other.normalizer.mean, mean)


@pytest.mark.parametrize("anchor", [0.0, 0.1])
def test_the_anchor_pulls_the_actors_mean_toward_zero_by_the_critics_scale(anchor: float):
    """Flat critics (Q = 10 everywhere) and no entropy term: without the anchor the actor's
    mean stays where it is; with it, it moves toward zero (SACConfig.anchor)."""
    cfg = SACConfig(gamma=0.9, actor_hidden=(8,), critic_hidden=(8,), init_alpha=1e-12,
                    normalize_obs=False, anchor=anchor, actor_lr=1e-2)
    agent = SAC(3, 2, cfg, SafetyConfig(mode="off"), seed=0)
    with torch.no_grad():
        agent.gaussian_actor.mu.bias.fill_(0.5)
        for p in agent.critic.parameters():
            p.zero_()
        agent.critic.net[-1].bias.fill_(10.0)
    obs = torch.randn(16, 3, generator=torch.Generator().manual_seed(0))
    before = agent.gaussian_actor.mean_action(obs).detach()
    agent.update(Batch(obs, torch.zeros(16, 2), torch.zeros(16), torch.zeros(16), obs,
                       torch.zeros(16)))
    after = agent.gaussian_actor.mean_action(obs).detach()
    if anchor:
        assert float(after.abs().mean()) < float(before.abs().mean()) - 1e-3
    else:
        torch.testing.assert_close(after, before)
