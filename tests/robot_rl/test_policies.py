"""Chunked policies: chunk indices at episode edges, the flow policy keeping two modes apart
where the MLP averages them, masks, determinism given the noise, and chunk execution
(receding horizon, resets, temporal ensembling, numpy and torch alike)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from robot_rl.errors import ConfigError
from robot_rl.policies import (
    ChunkData,
    ChunkExecutor,
    ChunkPolicy,
    PolicyConfig,
    chunk_indices,
    make_policy,
)


def test_chunk_indices_repeat_the_first_observation_and_mask_past_the_end() -> None:
    obs_idx, act_idx, mask = chunk_indices(torch.tensor([0, 0, 0, 1, 1, 2]), 3, 2)
    assert obs_idx.tolist() == [[0, 0], [0, 1], [1, 2], [3, 3], [3, 4], [5, 5]]
    assert act_idx.tolist() == [[0, 1, 2], [1, 2, 2], [2, 2, 2], [3, 4, 4], [4, 4, 4],
                                [5, 5, 5]]
    assert mask.tolist() == [[True, True, True], [True, True, False], [True, False, False],
                             [True, True, False], [True, False, False],
                             [True, False, False]]
    with pytest.raises(ConfigError, match="ordered by episode"):
        chunk_indices(torch.tensor([1, 0]), 2, 1)


def test_chunk_data_samples_histories_and_chunks_of_one_episode() -> None:
    ep = torch.tensor([0] * 5 + [1] * 3)
    frames = torch.arange(8).float()
    data = ChunkData(frames[:, None], frames[:, None] * 10, ep, horizon=3, obs_history=2)
    obs, chunk, mask = data.sample(64, torch.Generator().manual_seed(0))
    assert obs.shape == (64, 2, 1) and chunk.shape == (64, 3, 1) and mask.shape == (64, 3)
    now = obs[:, -1, 0]
    assert torch.equal(chunk[:, 0, 0], now * 10)  # the chunk starts at the current frame
    episode_of = ep[now.long()]
    assert torch.equal(ep[obs[:, 0, 0].long()], episode_of)  # never an earlier episode's
    assert torch.equal(ep[(chunk[:, :, 0] / 10).long()], episode_of[:, None].expand(64, 3))
    with pytest.raises(ConfigError, match="as many"):
        ChunkData(frames[:, None], frames[:4, None], ep, horizon=2, obs_history=1)


def _bimodal(n: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Observations (N, 2) and chunks (N, 2, 1): every chunk is +0.8 or -0.8 (a coin per
    sample, whatever the observation): two modes with their mean, 0, never demonstrated."""
    obs = 2 * torch.rand(n, 2, generator=gen) - 1
    sign = torch.where(torch.rand(n, generator=gen) < 0.5, -1.0, 1.0)
    return obs, (0.8 * sign)[:, None, None].expand(n, 2, 1).clone()


def _fit(policy: ChunkPolicy, obs: torch.Tensor, chunks: torch.Tensor, steps: int,
         batch: int, gen: torch.Generator) -> None:
    """``steps`` Adam steps (lr 3e-3) of the policy's loss on random batches of the data."""
    opt = torch.optim.Adam(policy.parameters(), lr=3e-3)
    for _ in range(steps):
        rows = torch.randint(obs.shape[0], (batch,), generator=gen)
        loss = policy.loss(obs[rows, None], chunks[rows])
        opt.zero_grad()
        loss.backward()
        opt.step()


def test_flow_keeps_two_modes_apart_where_the_mlp_averages_them() -> None:
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    obs, chunks = _bimodal(2048, gen)
    cfg = PolicyConfig(horizon=2, width=32, blocks=1, flow_steps=8)
    flow = make_policy(cfg, "flow", 2, 1, obs, chunks[:, 0])
    mlp = make_policy(cfg, "mlp", 2, 1, obs, chunks[:, 0])
    for policy in (flow, mlp):
        _fit(policy, obs, chunks, steps=200, batch=128, gen=gen)
    test_obs = (2 * torch.rand(512, 1, 2, generator=gen) - 1)
    with torch.no_grad():
        a_flow = flow.sample(test_obs, gen)[:, 0, 0]
        a_mlp = mlp.sample(test_obs, gen)[:, 0, 0]
    assert float((a_flow.abs() > 0.5).float().mean()) > 0.8, "flow samples between the modes"
    assert 0.25 < float((a_flow > 0).float().mean()) < 0.75, "flow collapsed to one mode"
    assert float(a_mlp.abs().mean()) < 0.3, "the MLP was expected to average the modes"


@pytest.mark.slow
def test_unet_denoiser_learns() -> None:
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    obs, chunks = _bimodal(512, gen)
    chunks = chunks[:, :1].expand(512, 4, 1)
    policy = make_policy(PolicyConfig(horizon=4, denoiser="unet", unet_channels=(8, 16),
                                      flow_steps=4), "flow", 2, 1, obs, chunks[:, 0])

    def held_out_loss() -> float:
        torch.manual_seed(1)  # the same noise and flow times before and after
        with torch.no_grad():
            return float(policy.loss(obs[:256, None], chunks[:256]))

    before = held_out_loss()
    _fit(policy, obs, chunks, steps=60, batch=64, gen=gen)
    assert held_out_loss() < 0.7 * before
    with torch.no_grad():
        assert policy.sample(obs[:3, None], gen).shape == (3, 4, 1)


def test_masked_steps_do_not_count_in_the_loss() -> None:
    gen = torch.Generator().manual_seed(0)
    obs, actions = torch.randn(64, 3, generator=gen), torch.rand(64, 2, generator=gen)
    policy = make_policy(PolicyConfig(horizon=4, width=32, blocks=1), "mlp", 3, 2, obs, actions)
    o, chunk = obs[:8, None], actions[:32].view(8, 4, 2)
    mask = torch.tensor([[True, True, False, False]]).expand(8, 4)
    changed = chunk.clone()
    changed[:, 2:] = 0.9
    assert torch.equal(policy.loss(o, chunk, mask), policy.loss(o, changed, mask))
    assert not torch.equal(policy.loss(o, chunk), policy.loss(o, changed))


@pytest.mark.parametrize("kind", ["flow", "mlp"])
def test_ignored_terms_do_not_reach_the_policy(kind: str) -> None:
    gen = torch.Generator().manual_seed(0)
    names = ["ee_pos.0", "ee_pos.1", "last_action.0", "last_action.1"]
    obs, actions = torch.randn(64, 4, generator=gen), 2 * torch.rand(64, 2, generator=gen) - 1
    cfg = PolicyConfig(horizon=4, obs_history=2, width=32, blocks=1)
    policy = make_policy(cfg, kind, 4, 2, obs, actions, obs_names=names)  # type: ignore[arg-type]
    assert policy.obs_seen.tolist() == [1.0, 1.0, 0.0, 0.0]
    assert policy.unseen_note() == "; not seen: last_action (2 of 4 observation elements)"
    o, noise = torch.randn(5, 2, 4, generator=gen), torch.randn(5, 4, 2, generator=gen)
    other = o.clone()
    other[..., 2:] = torch.randn(5, 2, 2, generator=gen)  # another last action
    moved = o.clone()
    moved[..., 0] += 1.0  # the hand elsewhere
    with torch.no_grad():
        assert torch.equal(policy(o, noise), policy(other, noise))
        assert not torch.equal(policy(o, noise), policy(moved, noise))
    # seeing every term (an empty ignore list), the last action counts
    sees_all = make_policy(dataclasses.replace(cfg, ignore_obs=()), kind, 4, 2, obs, actions,
                           obs_names=names)  # type: ignore[arg-type]
    assert sees_all.unseen_note() == ""
    with torch.no_grad():
        assert not torch.equal(sees_all(o, noise), sees_all(other, noise))
    # the mask is the policy's state: a policy made without names takes it on loading ...
    loaded = make_policy(cfg, kind, 4, 2)  # type: ignore[arg-type]
    loaded.load_state_dict(policy.state_dict())
    assert torch.equal(loaded.obs_seen, policy.obs_seen)
    # ... and a checkpoint from before it existed sees every element
    old = {k: v for k, v in policy.state_dict().items() if k != "obs_seen"}
    loaded.load_state_dict(old)
    assert loaded.obs_seen.tolist() == [1.0] * 4
    with pytest.raises(ConfigError, match="3 observation names for 4 elements"):
        make_policy(cfg, kind, 4, 2, obs, actions, obs_names=names[:3])  # type: ignore[arg-type]


def test_flow_acting_is_a_deterministic_function_of_observation_and_noise() -> None:
    gen = torch.Generator().manual_seed(0)
    obs, actions = torch.randn(64, 3, generator=gen), 2 * torch.rand(64, 2, generator=gen) - 1
    policy = make_policy(PolicyConfig(horizon=4, obs_history=2, width=32, blocks=1), "flow",
                         3, 2, obs, actions)
    o = torch.randn(5, 2, 3, generator=gen)
    noise = torch.randn(5, 4, 2, generator=gen)
    with torch.no_grad():
        a = policy(o, noise)
    assert a.shape == (5, 4, 2) and torch.equal(a, policy(o, noise))
    assert float(a.abs().max()) <= 1.0
    assert not torch.equal(a, policy(o, torch.randn(5, 4, 2, generator=gen)).detach())
    with pytest.raises(ConfigError, match=r"observations \(B, 2, 3\)"):
        policy(o[:, :1], noise)


def test_bad_policy_configs_are_refused() -> None:
    with pytest.raises(ConfigError, match="divisible by 2"):
        make_policy(PolicyConfig(horizon=5, denoiser="unet"), "flow", 3, 2)
    with pytest.raises(ConfigError, match="execute <= horizon"):
        make_policy(PolicyConfig(horizon=4, execute=5), "flow", 3, 2)
    with pytest.raises(ConfigError, match="unknown policy kind"):
        make_policy(PolicyConfig(), "gmm", 3, 2)  # type: ignore[arg-type]


def _ramp(h: torch.Tensor | np.ndarray) -> torch.Tensor | np.ndarray:
    """A chunk (N, 4, 1) whose k-th action is 10 k + the newest observation's first value."""
    k = np.arange(4, dtype=np.float32)[None, :, None] * 10
    if isinstance(h, torch.Tensor):
        return torch.from_numpy(k) + h[:, -1, :1, None]
    return k + h[:, -1, :1, None]


@pytest.mark.parametrize("xp", [torch, np])
def test_receding_horizon_executes_k_actions_per_chunk_and_restarts_on_reset(xp) -> None:
    run = ChunkExecutor(_ramp, horizon=4, execute=2, obs_history=2)
    zeros = xp.zeros((3, 5), dtype=xp.float32)
    got = []
    for t in range(5):
        got.append([float(v) for v in run(zeros + t)[:, 0]])
        if t == 2:
            run.reset(xp.asarray([True, False, False]))
    # t=0: chunk from obs 0; t=1: its 2nd action; t=2: new chunk from obs 2; env 0 resets
    # after t=2, so at t=3 it starts a chunk from obs 3 while the others take their 2nd
    assert got == [[0, 0, 0], [10, 10, 10], [2, 2, 2], [3, 12, 12], [13, 4, 4]]
    assert run.calls == 4


def test_observation_history_repeats_the_first_observation_of_an_episode() -> None:
    seen = []

    def policy(h: torch.Tensor) -> torch.Tensor:
        seen.append(h[:, :, 0].clone())
        return torch.zeros(h.shape[0], 1, 1)

    run = ChunkExecutor(policy, horizon=1, execute=1, obs_history=3)
    for t in range(3):
        run(torch.full((1, 2), float(t)))
    run.reset()
    run(torch.full((1, 2), 7.0))
    assert [s.tolist() for s in seen] == [[[0, 0, 0]], [[0, 0, 1]], [[0, 1, 2]], [[7, 7, 7]]]


@pytest.mark.parametrize("xp", [torch, np])
def test_a_clocked_policy_is_told_the_steps_since_each_episode_start(xp) -> None:
    """With ``clock`` the executor passes each called env's control steps since its episode
    start: every step for a policy of one action, every ``execute`` steps for a chunk, and 0
    again after a reset."""
    told: list[list[int]] = []

    def one(h, steps):
        told.append([int(s) for s in steps])
        return xp.zeros((h.shape[0], 4, 1), dtype=xp.float32)  # enough for either horizon

    run = ChunkExecutor(one, horizon=1, execute=1, clock=True)
    for t in range(4):
        run(xp.zeros((2, 3), dtype=xp.float32))
        if t == 1:
            run.reset(xp.asarray([False, True]))
    assert told == [[0, 0], [1, 1], [2, 0], [3, 1]]
    told.clear()
    run = ChunkExecutor(one, horizon=4, execute=2, clock=True)
    for _ in range(5):
        run(xp.zeros((1, 3), dtype=xp.float32))
    assert told == [[0], [2], [4]]  # a chunk's first step


def test_a_clock_is_a_one_hot_of_the_step_mod_each_period() -> None:
    from robot_rl.policies.chunk_policy import clock_features, clock_table

    got = clock_features(torch.tensor([[0.0], [7.0], [23.0]]), clock_table((4, 5)))
    # 7 = 1 x 4 + 3 = 1 x 5 + 2; 23 = 5 x 4 + 3 = 4 x 5 + 3
    want = [[1, 0, 0, 0, 1, 0, 0, 0, 0],
            [0, 0, 0, 1, 0, 0, 1, 0, 0],
            [0, 0, 0, 1, 0, 0, 0, 1, 0]]
    assert got.tolist() == want
    student = make_policy(PolicyConfig(horizon=1, clock=(4, 5)), "mlp", 3, 2)
    hist = torch.zeros(3, 1, 3)
    with pytest.raises(ConfigError, match="sees a clock"):
        student(hist, torch.zeros(3, 1, 2))
    a0, a7 = (student(hist, torch.zeros(3, 1, 2), torch.full((3,), float(t))) for t in (0, 7))
    assert not torch.allclose(a0, a7)  # the same observations at another phase
    torch.testing.assert_close(a7, student(hist, torch.zeros(3, 1, 2), torch.full((3,), 27.0)))
    with pytest.raises(ConfigError, match="a clock is for MLP"):
        make_policy(PolicyConfig(clock=(4,)), "flow", 3, 2)


def test_temporal_ensembling_weights_older_predictions_more() -> None:
    m = 0.5
    run = ChunkExecutor(lambda h: np.ones((h.shape[0], 4, 1)) * h[:, -1, :1, None],
                        horizon=4, execute=4, ensemble=m)
    assert float(run(np.zeros((1, 1)))[0, 0]) == 0.0
    w_old = math.exp(m)  # one step older than the new prediction
    expected = (0.0 * w_old + 1.0) / (w_old + 1.0)
    assert float(run(np.ones((1, 1)))[0, 0]) == pytest.approx(expected)
    assert run.calls == 2
    run.reset()
    assert float(run(np.full((1, 1), 5.0))[0, 0]) == 5.0  # the reset env forgot the past
