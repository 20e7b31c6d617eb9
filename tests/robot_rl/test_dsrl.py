"""DSRL: the noise-action env executes exactly the flow policy's chunk in the wrapped env
(sums, flags, episode ends inside a chunk), and a DSRL run trains, checkpoints and is
evaluated by ``robot-rl eval``."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest
import torch
from rich.console import Console

from robot_rl.algos.configs import SACConfig
from robot_rl.checkpoint import load_checkpoint
from robot_rl.errors import ConfigError
from robot_rl.finetune import DSRLRunner, NoiseActionEnv
from robot_rl.finetune.configs import DSRLConfig
from robot_rl.policies import PolicyConfig, make_policy
from robot_rl.sim import make_env


def _flow(env, horizon: int = 4, execute: int = 3):
    torch.manual_seed(0)
    return make_policy(PolicyConfig(horizon=horizon, execute=execute, width=16, blocks=1,
                                    flow_steps=2), "flow", env.obs_dim, env.act_dim)


def test_one_step_executes_the_chunk_in_the_wrapped_env() -> None:
    wrapped = NoiseActionEnv(make_env("push", 2, seed=0), _flow(make_env("push", 1)), 1.5,
                             noise="horizon")
    ref = make_env("push", 2, seed=0)
    assert (wrapped.act_dim, wrapped.steps_per_step) == (4 * ref.act_dim, 3)
    assert wrapped.control_dt == pytest.approx(3 * ref.control_dt)
    obs = wrapped.reset(seed=1)
    assert torch.equal(obs, ref.reset(seed=1))
    gen = torch.Generator().manual_seed(0)
    for _ in range(3):
        noise = 2 * torch.rand(2, wrapped.act_dim, generator=gen) - 1
        chunk = wrapped.chunk(noise)
        obs, reward, cost, terminated, truncated, info = wrapped.step(noise)
        r_sum = torch.zeros(2)
        for k in range(3):
            ref_obs, r, *_ = ref.step(chunk[:, k])
            r_sum += r
        assert torch.equal(obs, ref_obs) and torch.allclose(reward, r_sum)
        assert torch.equal(info["chunk"], chunk) and info["chunk"].shape == (2, 4, ref.act_dim)
        assert set(info["safety"]) and not bool((terminated | truncated).any())


def test_dsrl_chooses_the_executed_steps_noise_and_zeros_the_rest() -> None:
    """DSRL's noise is its executed chunk's: with H = 4 and K = 3 an action sets 3 x A
    noise values (scaled), and the fourth step's noise is 0."""
    policy = _flow(make_env("push", 1))
    wrapped = NoiseActionEnv(make_env("push", 2, seed=0), policy, 1.5)
    A = policy.act_dim
    assert wrapped.act_dim == 3 * A and wrapped.noise_steps == 3
    obs = wrapped.reset(seed=0)
    action = torch.rand(2, 3 * A) * 2 - 1
    noise = torch.zeros(2, 4, A)
    noise[:, :3] = 1.5 * action.view(2, 3, A)
    with torch.no_grad():
        torch.testing.assert_close(wrapped.chunk(action), policy(obs[:, None], noise))


def test_an_episode_ending_inside_a_chunk_holds_for_the_rest_of_it() -> None:
    policy = _flow(make_env("push", 1))
    wrapped = NoiseActionEnv(make_env("push", 2, seed=0, episode_length=5), policy)
    ref = make_env("push", 2, seed=0, episode_length=5)
    wrapped.reset(seed=3)
    ref.reset(seed=3)
    noise = torch.zeros(2, wrapped.act_dim)
    first = wrapped.chunk(noise)
    wrapped.step(noise)  # steps 1-3
    for k in range(3):
        ref.step(first[:, k])
    chunk = wrapped.chunk(noise)
    obs, reward, _, _, truncated, info = wrapped.step(noise)  # 4, 5 (the episode ends), held
    for k in range(3):
        ref_obs, _, _, _, _, ref_info = ref.step(chunk[:, k], hold=torch.full((2,), k == 2))
        if k == 1:
            final, returns = ref_info["final_obs"], ref_info["episode"]["return"]
    assert bool(truncated.all()) and bool(info["episode"]["done"].all())
    assert torch.equal(info["final_obs"], final)
    assert torch.allclose(info["episode"]["return"], returns)
    assert torch.equal(obs, ref_obs)  # the held step of the next episode


def test_dsrl_refuses_what_it_cannot_steer() -> None:
    env = make_env("push", 1)
    mlp = make_policy(PolicyConfig(horizon=2), "mlp", env.obs_dim, env.act_dim)
    with pytest.raises(ConfigError, match="flow policy's noise"):
        NoiseActionEnv(env, mlp)
    with pytest.raises(ConfigError, match="does not fit"):
        NoiseActionEnv(make_env("reach", 1), _flow(env))


@pytest.fixture
def flow_run(push_flow_run: Path) -> Path:
    return push_flow_run


@pytest.mark.slow
def test_a_dsrl_run_trains_and_is_evaluated(flow_run: Path, tmp_path: Path) -> None:
    from robot_rl.cli.learn import eval_cmd
    from robot_rl.kinds.eval_config import EvalConfig

    cfg = DSRLConfig(policy=flow_run, num_envs=2, total_steps=96, eval_every=48,
                     eval_episodes=2, runs_dir=tmp_path, run_name="dsrl", progress=False,
                     safety="off", sac=SACConfig(batch_size=16, learning_starts=40,
                                                 updates_per_step=2, actor_hidden=(16,),
                                                 critic_hidden=(16,)))
    runner = DSRLRunner(cfg, console=Console(file=sys.stderr))
    assert runner.env.act_dim == 4 * make_env("push", 1).act_dim
    # the task's horizon in seconds: push 0.994 per 50 Hz step, to the 4th per chunk
    assert runner.cfg.step_gamma == pytest.approx(0.994)
    assert runner.cfg.sac.gamma == pytest.approx(0.994 ** 4)
    history = runner.train()
    assert runner.env_steps == 96 and history[-1]["env_steps"] == 96
    state = load_checkpoint(tmp_path / "dsrl")
    assert state["kind"] == "dsrl" and state["config"]["task"] == "push"
    eval_cmd(EvalConfig(path=tmp_path / "dsrl", episodes=2, num_envs=2))


@pytest.mark.slow
def test_the_warm_up_draws_the_flow_policys_own_noise(flow_run: Path, tmp_path: Path) -> None:
    cfg = DSRLConfig(policy=flow_run, num_envs=2, noise_scale=2.0, runs_dir=tmp_path,
                     run_name="warm", progress=False, safety="off")
    runner = DSRLRunner(cfg, console=Console(file=sys.stderr))
    assert runner.cfg.num_envs == 2 and DSRLConfig(policy=flow_run).num_envs == 4
    a = torch.cat([runner.warmup_action(torch.zeros(2, runner.env.obs_dim))
                   for _ in range(500)])
    assert a.shape == (1000, runner.env.act_dim) and float(a.abs().max()) <= 1.0
    noise = cfg.noise_scale * a  # the flow's input: standard normal, clipped at +-2
    assert float(noise.std()) == pytest.approx(0.96, abs=0.03)  # clipped at 2 sigma
    assert float((noise.abs() == 2.0).float().mean()) == pytest.approx(0.0455, abs=0.01)
    runner.save()  # a resumed run draws the warm-up noise this one would draw next
    resumed = DSRLRunner(dataclasses.replace(cfg, resume=tmp_path / "warm"),
                         console=Console(file=sys.stderr))
    obs = torch.zeros(2, runner.env.obs_dim)
    assert torch.equal(runner.warmup_action(obs), resumed.warmup_action(obs))


def test_dsrl_starts_from_the_noise_the_flow_was_trained_on(flow_run: Path,
                                                            tmp_path: Path) -> None:
    """DSRL's actor starts at sigma 1 (pre-tanh), so its first noise, scaled by 1.5, spreads
    about as N(0, I) does (std ~0.94); the actor of plain SAC here would start at sigma
    0.22 (std ~0.33); and SAC's normalizer holds the flow's dataset statistics, fixed."""
    cfg = DSRLConfig(policy=flow_run, num_envs=2, runs_dir=tmp_path, run_name="init",
                     progress=False, safety="off")
    runner = DSRLRunner(cfg, console=Console(file=sys.stderr))
    agent = runner.agent
    obs = torch.randn(2000, runner.env.obs_dim)
    with torch.no_grad():
        x = agent.normalize(obs)
        mean, log_std = agent.gaussian_actor(x)
        noise = cfg.noise_scale * agent.gaussian_actor.sample(x)[0]
    assert float(log_std.mean()) == pytest.approx(0.0, abs=0.05)
    assert 0.85 < float(noise.std()) < 1.05
    from robot_rl.algos import SAC
    from robot_rl.algos.configs import SafetyConfig

    plain = SAC(runner.env.obs_dim, runner.env.act_dim, SACConfig(gamma=0.9),
                SafetyConfig(mode="off"))
    with torch.no_grad():
        assert float(plain.gaussian_actor(x)[1].mean()) == pytest.approx(-1.5, abs=0.3)
    runner.before_training()
    torch.testing.assert_close(agent.normalizer.mean, runner.flow_policy.obs_norm.mean)
    assert agent.normalizer_frozen
