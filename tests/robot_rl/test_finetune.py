"""Offline-to-online fine-tuning: batch mixing, behaviour cloning, RLPD and WSRL runs."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from robot_rl.algos.configs import SACConfig
from robot_rl.finetune import FinetuneRunner, mixed_batch
from robot_rl.finetune.configs import FinetuneConfig
from robot_rl.recording.config import RecordConfig
from robot_rl.recording.record import record
from robot_rl.replay import ReplayBuffer, sample_mixed
from robot_rl.sim import make_task_config


def _buffer(reward: float, n: int = 64) -> ReplayBuffer:
    b = ReplayBuffer(n, 3, 2)
    z = torch.zeros(n, 3)
    b.add(z, torch.zeros(n, 2), torch.full((n,), reward), torch.zeros(n), z, torch.zeros(n))
    return b


def test_rlpd_batches_are_half_demos_half_online_and_all_demos_before_online_data():
    demos, online, gen = _buffer(1.0), _buffer(0.0), torch.Generator().manual_seed(0)
    b = mixed_batch(demos, online, 64, 0.5, gen)
    assert b.reward.shape == (64,) and float(b.reward.sum()) == 32
    assert float(mixed_batch(demos, online, 64, 0.25, gen).reward.sum()) == 16
    empty = ReplayBuffer(8, 3, 2)
    assert float(mixed_batch(demos, empty, 64, 0.5, gen).reward.sum()) == 64


def test_a_batch_takes_each_buffers_share_in_order_and_the_rest_online():
    """``sample_mixed``: prior data (reward 1) a quarter, interventions (reward 2) an eighth,
    online (reward 0) the rest, concatenated in that order; an empty buffer's share goes
    online; while online is empty, the first buffer that holds any gives the whole batch."""
    prior, people, online = _buffer(1.0), _buffer(2.0), _buffer(0.0)
    gen, empty = torch.Generator().manual_seed(0), ReplayBuffer(8, 3, 2)
    b = sample_mixed(online, [(prior, 0.25), (people, 0.125)], 64, gen)
    assert b.reward.tolist() == [1.0] * 16 + [2.0] * 8 + [0.0] * 40
    assert sample_mixed(online, [(empty, 0.5), (people, 0.125)], 64, gen).reward.tolist() == \
        [2.0] * 8 + [0.0] * 56
    assert sample_mixed(empty, [(empty, 0.5), (people, 0.125)], 16, gen).reward.tolist() == \
        [2.0] * 16
    assert sample_mixed(online, [], 8, gen).reward.tolist() == [0.0] * 8


@pytest.fixture(scope="module")
def demos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demos") / "push"
    record(RecordConfig(task="push", teleop="expert", episodes=2, out=out, episode_length=40,
                        progress=False))
    return out


def _cfg(demos: Path, tmp: Path, method: str, **kw) -> FinetuneConfig:
    sac = SACConfig(num_critics=4, critic_subset=2, actor_hidden=(32, 32),
                    critic_hidden=(32, 32), batch_size=32, updates_per_step=2,
                    learning_starts=0)
    return FinetuneConfig(demos=demos, task="push", method=method,  # type: ignore[arg-type]
                          num_envs=2, env=make_task_config("push", episode_length=40),
                          eval_every=10_000, eval_episodes=2, runs_dir=tmp,
                          **{"run_name": method, "total_steps": 80, **kw},
                          progress=False, sac=sac)


@pytest.mark.slow
def test_rlpd_runs_with_behaviour_cloning_that_fits_the_demos(demos, tmp_path):
    runner = FinetuneRunner(_cfg(demos, tmp_path, "rlpd"))
    first = runner.behaviour_cloning(1)
    last = runner.behaviour_cloning(300)
    assert last < 0.5 * first
    history = runner.train()
    assert runner.env_steps == 80 and runner.agent.updates == 2 * 80 // 2
    assert history and (tmp_path / "rlpd" / "checkpoints" / "latest.pt").is_file()


@pytest.mark.slow
def test_critic_warmup_trains_the_critics_and_leaves_the_warm_started_actor(demos, tmp_path):
    runner = FinetuneRunner(_cfg(demos, tmp_path, "rlpd", total_steps=2, critic_warmup=30))
    actor = [p.detach().clone() for p in runner.agent.actor.parameters()]
    critic = [p.detach().clone() for p in runner.agent.critic.parameters()]
    alpha = float(runner.agent.alpha.detach())
    runner.offline_pretraining(30, actor=False)
    assert runner.agent.updates == 30
    assert all(torch.equal(a, b) for a, b in zip(actor, runner.agent.actor.parameters(),
                                                     strict=True))
    assert float(runner.agent.alpha.detach()) == alpha
    assert not all(torch.equal(a, b)
                   for a, b in zip(critic, runner.agent.critic.parameters(), strict=True))
    runner.train()  # the config's 30 warm-up steps, then one vector step's 2 updates
    assert runner.agent.updates == 30 + 30 + 2


@pytest.mark.slow
def test_wsrl_pretrains_offline_warms_up_frozen_then_learns_online(demos, tmp_path):
    runner = FinetuneRunner(_cfg(demos, tmp_path, "wsrl", offline_steps=20, warmup_steps=40))
    runner.train()
    # 20 offline updates; none while the first 40 env steps are collected by the frozen
    # policy; then 2 per vector step of 2 envs, from the step that reaches 40: 21 steps
    assert runner.agent.updates == 20 + 2 * 21
    assert len(runner.buffer) == 80  # online data only: the demos were not copied in


def test_max_episodes_takes_the_first_episodes_only(demos, tmp_path):
    from robot_rl.data import DatasetError

    assert len(FinetuneRunner(_cfg(demos, tmp_path, "rlpd", run_name="one",
                                   max_episodes=1)).demos) == 40
    with pytest.raises(DatasetError, match="holds 2 episodes, fewer than the 3"):
        FinetuneRunner(_cfg(demos, tmp_path, "rlpd", run_name="three", max_episodes=3))


def test_demos_for_another_task_are_refused(demos, tmp_path):
    from robot_rl.data import DatasetError

    with pytest.raises(DatasetError, match="task"):
        FinetuneRunner(FinetuneConfig(demos=demos, task="reach", runs_dir=tmp_path,
                                      run_name="x", progress=False))


def test_cli_refuses_a_missing_dataset_in_one_line(tmp_path, capsys):
    from robot_rl.cli import main

    with pytest.raises(SystemExit) as e:
        main(["finetune", "--demos", str(tmp_path / "none"), "--runs-dir", str(tmp_path / "runs")])
    assert e.value.code == 2
    assert f"{tmp_path / 'none'} does not exist" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()  # no run directory was made
    (tmp_path / "empty").mkdir()  # a folder, but no dataset
    with pytest.raises(SystemExit):
        main(["finetune", "--demos", str(tmp_path / "empty"), "--runs-dir",
              str(tmp_path / "runs")])
    assert "is not a dataset: no meta/info.json" in capsys.readouterr().err


def test_mc_returns_restart_at_each_episode():
    from robot_rl.finetune.calql import mc_returns

    r = torch.tensor([1.0, 0.0, 2.0, 1.0, 1.0])
    ep = torch.tensor([0, 0, 0, 1, 1])
    # episode 0: 2, 0 + 0.5 * 2 = 1, 1 + 0.5 * 1 = 1.5; episode 1: 1, 1 + 0.5 = 1.5
    torch.testing.assert_close(mc_returns(r, ep, 0.5), torch.tensor([1.5, 1.0, 2.0, 1.5, 1.0]))


class _SumCritic(torch.nn.Module):
    """Two identical 'critics': Q(s, a) = sum(a)."""

    def forward(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        return act.sum(-1)[None].repeat(2, 1)


def test_calql_regularizer_by_hand():
    """One state, one sample of each kind, A = 1: uniform u, policy a (log pi = lp) and next
    action b; Q = the action. CQL: logsumexp(u - log 0.5, a - lp, b - lp') - Q(s, a_data),
    and Cal-QL raises the policy samples' values to the MC return first."""
    import math

    from robot_rl.algos import SAC
    from robot_rl.algos.configs import SafetyConfig
    from robot_rl.finetune.calql import MC_RETURN, CalQL
    from robot_rl.finetune.configs import CalQLConfig
    from robot_rl.replay import Batch

    agent = SAC(2, 1, SACConfig(gamma=0.9, normalize_obs=False), SafetyConfig(mode="off"))
    agent.critic = _SumCritic()  # type: ignore[assignment]
    samples = iter([(torch.tensor([[0.2]]), torch.tensor([-1.0]), None),
                    (torch.tensor([[-0.4]]), torch.tensor([0.5]), None)] * 2)
    agent.actor_sample = lambda batch, x, next_obs: next(samples)  # type: ignore[method-assign]
    batch = Batch(torch.zeros(1, 2), torch.tensor([[0.3]]), torch.zeros(1), torch.zeros(1),
                  torch.zeros(1, 2), torch.zeros(1), extra={MC_RETURN: torch.tensor([0.6])})
    q_data = torch.tensor([[0.3], [0.3]])
    torch.manual_seed(0)
    u = float(torch.rand(1, 1) * 2 - 1)
    for calibrated, a, b in ((False, 0.2, -0.4), (True, 0.6, 0.6)):
        torch.manual_seed(0)
        reg, metrics = CalQL(CalQLConfig(alpha=2.0, actions=1, calibrated=calibrated))(
            agent, torch.zeros(1, 2), torch.zeros(1, 2), batch, q_data)
        lse = math.log(math.exp(u - math.log(0.5)) + math.exp(a + 1.0) + math.exp(b - 0.5))
        assert float(reg) == pytest.approx(2.0 * 2 * (lse - 0.3), rel=1e-5)  # 2 critics
    assert metrics["charts/calql_bound_rate"] == 1.0  # both policy samples were bounded


def test_method_picks_its_reference_recipe(tmp_path):
    from robot_rl.cli import _task_default
    from robot_rl.finetune.configs import rlpd_sac, wsrl_sac

    rlpd = FinetuneConfig(demos=tmp_path, method="rlpd")
    assert rlpd.sac == rlpd_sac()
    assert (rlpd.sac.num_critics, rlpd.sac.updates_per_step, rlpd.sac.actor_update_every,
            rlpd.sac.init_alpha, rlpd.sac.tau, rlpd.num_envs) == (10, 20, 20, 1.0, 0.005, 1)
    wsrl = FinetuneConfig(demos=tmp_path, method="wsrl")
    assert wsrl.sac == wsrl_sac() and wsrl.offline == "calql"
    assert (wsrl.sac.updates_per_step, wsrl.sac.backup_entropy,
            wsrl.sac.target_entropy_per_dim) == (4, False, -1.0)
    mine = SACConfig(num_critics=3)
    assert FinetuneConfig(demos=tmp_path, method="wsrl", sac=mine).sac == mine  # kept
    # the command line: --method gives the defaults of --sac.* (two-phase parse)
    default = _task_default(FinetuneConfig, ["--method", "wsrl", "--demos", "x"])
    assert default.sac == wsrl_sac()


def test_wsrl_offline_phase_runs_calql_on_the_demos(demos, tmp_path):
    from robot_rl.finetune.calql import MC_RETURN

    cfg = _cfg(demos, tmp_path, "wsrl", run_name="calql", offline_steps=5, warmup_steps=40,
               total_steps=2)
    runner = FinetuneRunner(dataclasses.replace(
        cfg, sac=dataclasses.replace(cfg.sac, freeze_normalizer=True)))
    assert MC_RETURN in runner.demos.extra
    assert float(runner.demos.extra[MC_RETURN][:len(runner.demos)].abs().sum()) > 0
    critic = [p.detach().clone() for p in runner.agent.critic.parameters()]
    runner.before_training()
    assert runner.agent.updates == 5
    assert not all(torch.equal(a, b)
                   for a, b in zip(critic, runner.agent.critic.parameters(), strict=True))
    # frozen on the demonstrations: the warm-up's states do not move it under the
    # pre-trained networks
    assert runner.agent.normalizer_frozen
    mean = runner.agent.normalizer.mean.clone()
    runner.agent.observe(torch.full((4, runner.env.obs_dim), 9.0))
    torch.testing.assert_close(runner.agent.normalizer.mean, mean)
