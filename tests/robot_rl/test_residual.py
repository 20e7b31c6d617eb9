"""The residual fine-tuner: the env executes the flow's zero-noise chunks corrected by a
bounded residual, a run trains, and its artifact (the flow's chunk graph plus the residual
graph) acts exactly as the run's actor does."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from rich.console import Console

from robot_rl.algos import SACConfig
from robot_rl.bc import load_bc_policy
from robot_rl.cli.export import ExportConfig, export_cmd
from robot_rl.errors import ConfigError
from robot_rl.export import load_policy
from robot_rl.finetune.residual import ResidualConfig, ResidualEnv, ResidualRunner, load_residual
from robot_rl.policies import ChunkExecutor
from robot_rl.sim import make_env
from tests.robot_rl.flow_runs import tiny_bc_runs


@pytest.fixture(scope="module")
def flow_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("residual")
    tiny_bc_runs(root, "reach", episode_length=20, horizon=4, execute=2)
    return root / "bc-flow"


def test_the_env_executes_the_flows_chunks_plus_the_bounded_residual(flow_run: Path) -> None:
    policy, _, _ = load_bc_policy(flow_run)
    env = ResidualEnv(make_env("reach", 2, seed=0, episode_length=7), policy, scale=0.2)
    ref = make_env("reach", 2, seed=0, episode_length=7)
    A = ref.act_dim
    assert (env.obs_dim, env.act_dim) == (ref.obs_dim + A, A)

    def zero_noise_chunk(hist: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return policy(hist, torch.zeros(hist.shape[0], 4, A))

    base = ChunkExecutor(zero_noise_chunk, 4, 2)
    obs, ref_obs = env.reset(seed=1), ref.reset(seed=1)
    gen = torch.Generator().manual_seed(0)
    for t in range(9):  # across a chunk boundary and an episode's end (7 steps)
        b = base(ref_obs)
        torch.testing.assert_close(obs, torch.cat([ref_obs, b], 1))
        residual = torch.rand(2, A, generator=gen) * 2 - 1
        executed = (b + 0.2 * residual).clamp(-1, 1)
        obs, r, *_, info = env.step(residual)
        ref_obs, ref_r, _, term, trunc, ref_info = ref.step(executed)
        base.reset(term | trunc)
        torch.testing.assert_close(r, ref_r)
        if t == 6:  # the episode ended: the final observation with a fresh chunk's action
            assert bool(trunc.all())
            final = ref_info["final_obs"]
            fresh = zero_noise_chunk(final[:, None])[:, 0]
            torch.testing.assert_close(info["final_obs"], torch.cat([final, fresh], 1))
    with pytest.raises(ConfigError, match="scale"):
        ResidualEnv(make_env("reach", 1), policy, scale=0.0)


def test_a_residual_run_exports_what_it_evaluates(flow_run: Path, tmp_path: Path) -> None:
    cfg = ResidualConfig(policy=flow_run, num_envs=2, total_steps=40, eval_every=40,
                         eval_episodes=2, runs_dir=tmp_path, run_name="res", progress=False,
                         safety="off", scale=0.3,
                         sac=SACConfig(batch_size=8, learning_starts=16, actor_hidden=(8,),
                                       critic_hidden=(8,)))
    runner = ResidualRunner(cfg, console=Console(file=sys.stderr))
    env = runner.env
    assert isinstance(env, ResidualEnv) and runner.cfg.task == "reach"
    assert env.obs_dim == env.env.obs_dim + env.act_dim  # the observation and the base action
    runner.train()
    export_cmd(ExportConfig(run=tmp_path / "res"))
    art = load_policy(tmp_path / "res" / "export")
    assert art.chunked and art.meta["residual"]["scale"] == 0.3
    agent, _, env = load_residual(tmp_path / "res", 1, 0)
    obs = env.reset(seed=0)
    got, want = [], []
    for _ in range(5):  # the artifact runs its own chunk queue, the env its own
        raw = obs[:, :env.env.obs_dim]
        got.append(art(raw[0].numpy()))
        with torch.no_grad():
            residual = agent.act(obs, deterministic=True, gate=False).action
        want.append(env.applied(residual)[0].numpy())
        obs = env.step(residual)[0]
    np.testing.assert_allclose(np.stack(got), np.stack(want), atol=1e-5)
    with pytest.raises(ConfigError, match="no student"):
        export_cmd(ExportConfig(run=tmp_path / "res", policy="student"))


def test_a_residual_run_starts_from_the_flow_policy_itself(flow_run: Path, tmp_path: Path):
    """The residual actor's mean starts at zero: the first evaluation is the flow's own."""
    runner = ResidualRunner(ResidualConfig(policy=flow_run, num_envs=2, runs_dir=tmp_path,
                                           run_name="zero", progress=False, safety="off",
                                           sac=SACConfig(actor_hidden=(8,),
                                                         critic_hidden=(8,))),
                            console=Console(file=sys.stderr))
    obs = runner.env.reset(seed=0)
    with torch.no_grad():
        residual = runner.agent.act(obs, deterministic=True, gate=False).action
    assert float(residual.abs().max()) == 0.0
    assert isinstance(runner.env, ResidualEnv)
    torch.testing.assert_close(runner.env.applied(residual), runner.env.base)


def test_the_critic_warmup_keeps_the_actor_still_then_lets_it_move(flow_run: Path,
                                                                   tmp_path: Path):
    """``critic_warmup`` critic-only steps: the residual's mean stays at zero through them
    while the critics learn; the actor moves on the next update."""
    runner = ResidualRunner(ResidualConfig(policy=flow_run, num_envs=2, runs_dir=tmp_path,
                                           run_name="warm", progress=False, safety="off",
                                           total_steps=40, critic_warmup=20,
                                           sac=SACConfig(actor_hidden=(8,), critic_hidden=(8,),
                                                         batch_size=8, learning_starts=16)),
                            console=Console(file=sys.stderr))
    critic = [p.clone() for p in runner.agent.critic.parameters()]
    runner.train()  # 20 vector steps: the 16 warm-up transitions, then one update each
    assert 0 < runner.agent.updates < 20
    obs = runner.env.reset(seed=0)
    for _ in range(20 - runner.agent.updates):
        runner.learn()
    mean = runner.agent.act(obs, deterministic=True, gate=False).action
    assert runner.agent.updates == 20 and float(mean.abs().max()) == 0.0
    assert any(not torch.equal(a, b) for a, b in zip(critic, runner.agent.critic.parameters(),
                                                     strict=True))
    runner.learn()
    assert float(runner.agent.act(obs, deterministic=True, gate=False).action.abs().max()) > 0
    with pytest.raises(ConfigError, match="critic-warmup"):
        ResidualConfig(policy=flow_run, critic_warmup=-1).validate()
