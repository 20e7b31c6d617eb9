"""Chunked policies as deploy artifacts: a flow policy (its integration unrolled, the noise
an input), an MLP chunk policy and a DSRL run export, agree with torch, and act one
control step at a time through the artifact (receding horizon, resets); the deploy
runtime drives a chunked artifact, calling the graph once per chunk."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from rich.console import Console

from robot_rl.algos import SACConfig
from robot_rl.bc import BCConfig, BCRunner, load_bc_policy
from robot_rl.cli.learn import ExportConfig, export_cmd
from robot_rl.errors import ConfigError
from robot_rl.export import load_policy
from robot_rl.finetune import DSRLConfig, DSRLRunner
from robot_rl.finetune.dsrl import load_dsrl
from robot_rl.policies import PolicyConfig
from robot_rl.recording.record import RecordConfig, record

H, K = 4, 2


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("chunk_export")
    record(RecordConfig(task="reach", teleop="expert", episodes=2, out=root / "demos",
                        episode_length=30, progress=False))
    for algo in ("bc-flow", "bc-mlp"):
        BCRunner(BCConfig(demos=root / "demos", algo=algo,  # type: ignore[arg-type]
                          policy=PolicyConfig(horizon=H, execute=K, obs_history=2, width=16,
                                              blocks=1, flow_steps=3),
                          steps=5, eval_episodes=0, runs_dir=root, run_name=algo,
                          progress=False), console=Console(file=sys.stderr)).train()
    return root


def test_flow_artifact_matches_torch_and_acts_chunk_by_chunk(runs: Path) -> None:
    export_cmd(ExportConfig(run=runs / "bc-flow"))
    policy, _, _ = load_bc_policy(runs / "bc-flow")
    art = load_policy(runs / "bc-flow" / "export", seed=3)
    assert art.chunked and art.noise_input and (art.horizon, art.execute) == (H, K)
    assert art.meta["chunk"]["kind"] == "flow" and art.meta["chunk"]["flow_steps"] == 3
    gen = np.random.default_rng(0)
    hist = gen.standard_normal((5, 2, art.obs_dim)).astype(np.float32)
    noise = gen.standard_normal((5, H, art.act_dim)).astype(np.float32)
    with torch.no_grad():
        ref = policy(torch.from_numpy(hist), torch.from_numpy(noise)).numpy()
    np.testing.assert_allclose(art.chunk(hist, noise), ref, atol=1e-5)
    # step by step: K actions of the chunk made from the first observation (repeated as
    # its own history) and the artifact's own noise, then a new chunk
    obs = gen.standard_normal((3, art.obs_dim)).astype(np.float32)
    first_noise = np.random.default_rng(3).standard_normal((1, H * art.act_dim))
    with torch.no_grad():
        expected = policy(torch.from_numpy(np.stack([obs[0], obs[0]])[None]),
                          torch.from_numpy(first_noise.astype(np.float32)).view(1, H, -1))[0]
    np.testing.assert_allclose(art(obs[0]), expected[0].numpy(), atol=1e-5)
    np.testing.assert_allclose(art(obs[1]), expected[1].numpy(), atol=1e-5)
    calls = art._executor.calls
    art(obs[2])
    assert art._executor.calls == calls + 1  # the queue ran out after K actions
    art.reset()
    art(obs[2])
    assert art._executor.calls == calls + 2  # a new episode starts a new chunk


def test_mlp_artifact_takes_only_the_observation(runs: Path) -> None:
    export_cmd(ExportConfig(run=runs / "bc-mlp", out=runs / "mlp-art"))
    art = load_policy(runs / "mlp-art", backend="torchscript")
    assert art.chunked and not art.noise_input
    policy, _, _ = load_bc_policy(runs / "bc-mlp")
    hist = np.random.default_rng(1).standard_normal((4, 2, art.obs_dim)).astype(np.float32)
    with torch.no_grad():
        ref = policy(torch.from_numpy(hist), torch.zeros(4, H, art.act_dim)).numpy()
    np.testing.assert_allclose(art.chunk(hist), ref, atol=1e-5)
    with pytest.raises(ConfigError, match="no distilled student"):
        export_cmd(ExportConfig(run=runs / "bc-mlp", policy="student"))


def test_dsrl_artifact_chooses_its_noise_inside_the_graph(runs: Path, tmp_path: Path) -> None:
    DSRLRunner(DSRLConfig(policy=runs / "bc-flow", num_envs=2, total_steps=32, eval_every=32,
                          eval_episodes=1, runs_dir=tmp_path, run_name="dsrl", progress=False,
                          safety="off", sac=SACConfig(batch_size=8, learning_starts=16,
                                                      actor_hidden=(8,), critic_hidden=(8,))),
               console=Console(file=sys.stderr)).train()
    export_cmd(ExportConfig(run=tmp_path / "dsrl"))
    art = load_policy(tmp_path / "dsrl" / "export")
    assert art.chunked and not art.noise_input and art.meta["safety"] is None
    agent, cfg, env = load_dsrl(tmp_path / "dsrl", 1, 0)
    obs = env.reset(seed=0)
    with torch.no_grad():
        noise = agent.act(obs, deterministic=True).action
        expected = env.chunk(noise)[0, :K]
    got = np.stack([art(obs[0].numpy()) for _ in range(K)])
    np.testing.assert_allclose(got, expected.numpy(), atol=1e-5)
