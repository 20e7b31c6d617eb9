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

from robot_rl.algos.configs import SACConfig
from robot_rl.bc import load_bc_policy
from robot_rl.checkpoint import CheckpointError
from robot_rl.export import load_policy
from robot_rl.finetune import DSRLRunner
from robot_rl.finetune.configs import DSRLConfig
from robot_rl.finetune.dsrl import load_dsrl
from robot_rl.kinds.base import ExportConfig
from robot_rl.kinds.export import export_path
from tests.robot_rl.flow_runs import tiny_bc_runs

H, K = 4, 2


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("chunk_export")
    tiny_bc_runs(root, "reach", episode_length=30, horizon=H, execute=K,
                 algos=("bc-flow", "bc-mlp"), obs_history=2, flow_steps=3)
    return root


@pytest.mark.slow
def test_flow_artifact_matches_torch_and_acts_chunk_by_chunk(runs: Path) -> None:
    export_path(ExportConfig(run=runs / "bc-flow"))
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
    export_path(ExportConfig(run=runs / "bc-mlp", out=runs / "mlp-art"))
    art = load_policy(runs / "mlp-art", backend="torchscript")
    assert art.chunked and not art.noise_input
    policy, _, _ = load_bc_policy(runs / "bc-mlp")
    hist = np.random.default_rng(1).standard_normal((4, 2, art.obs_dim)).astype(np.float32)
    with torch.no_grad():
        ref = policy(torch.from_numpy(hist), torch.zeros(4, H, art.act_dim)).numpy()
    np.testing.assert_allclose(art.chunk(hist), ref, atol=1e-5)
    with pytest.raises(CheckpointError, match="no one-step student"):
        export_path(ExportConfig(run=runs / "bc-mlp", policy="student"))


@pytest.mark.slow
def test_dsrl_artifact_chooses_its_noise_inside_the_graph(runs: Path, tmp_path: Path) -> None:
    DSRLRunner(DSRLConfig(policy=runs / "bc-flow", num_envs=2, total_steps=32, eval_every=32,
                          eval_episodes=1, runs_dir=tmp_path, run_name="dsrl", progress=False,
                          safety="off", sac=SACConfig(batch_size=8, learning_starts=16,
                                                      actor_hidden=(8,), critic_hidden=(8,))),
               console=Console(file=sys.stderr)).train()
    export_path(ExportConfig(run=tmp_path / "dsrl"))
    art = load_policy(tmp_path / "dsrl" / "export")
    assert art.chunked and not art.noise_input and art.meta["safety"] is None
    agent, cfg, env = load_dsrl(tmp_path / "dsrl", 1, 0)
    obs = env.reset(seed=0)
    with torch.no_grad():
        noise = agent.act(obs, deterministic=True).action
        expected = env.chunk(noise)[0, :K]
    got = np.stack([art(obs[0].numpy()) for _ in range(K)])
    np.testing.assert_allclose(got, expected.numpy(), atol=1e-5)


@pytest.mark.slow
def test_one_step_student_learns_the_flow_map_and_exports(runs: Path) -> None:
    from robot_rl.cli.learn import distill_cmd
    from robot_rl.distill.chunked import load_onestep
    from robot_rl.distill.configs import DaggerConfig, DistillConfig

    distill_cmd(DistillConfig(run=runs / "bc-flow", hidden=(32, 32),
                              dagger=DaggerConfig(iterations=2, rollout_steps=12, num_envs=4,
                                                  grad_steps=150, batch_size=64, lr=3e-3, dr="off",
                                                  eval_episodes=2, progress=False)))
    student, record = load_onestep(runs / "bc-flow")
    teacher, _, _ = load_bc_policy(runs / "bc-flow")
    assert student.kind == "flow" and student.cfg.flow_steps == 1
    assert (student.horizon, student.cfg.executed, student.obs_history) == (H, K, 2)
    assert record["teacher_success"] is not None and record["student_success"] is not None
    # the student maps the teacher's (history, noise) to its chunk's executed steps (what
    # it is fit on) far better than their mean does
    gen = torch.Generator().manual_seed(5)
    hist = teacher.obs_norm.mean + teacher.obs_norm.std * torch.randn(256, 2, student.obs_dim,
                                                                        generator=gen) * 0.5
    noise = torch.randn(256, H, student.act_dim, generator=gen)
    with torch.no_grad():
        target = teacher.integrate(hist, noise)[:, :K]
        err = float(((student.integrate(hist, noise)[:, :K] - target) ** 2).mean())
        spread = float(((target - target.mean(0)) ** 2).mean())
    assert err < 0.5 * spread, (err, spread)
    export_path(ExportConfig(run=runs / "bc-flow", policy="student", out=runs / "student"))
    art = load_policy(runs / "student")
    assert art.meta["chunk"]["flow_steps"] == 1 and art.noise_input
    assert art.meta["provenance"]["teacher_run"] == str(runs / "bc-flow")
    with torch.no_grad():
        ref = student(hist[:4], noise[:4]).numpy()
    np.testing.assert_allclose(art.chunk(hist[:4].numpy(), noise[:4].numpy()), ref, atol=1e-5)
    for i in range(2):  # one sample at a time: the io-bound path a deploy loop takes
        np.testing.assert_allclose(art.chunk(hist[i:i + 1].numpy(), noise[i:i + 1].numpy()),
                                   ref[i:i + 1], atol=1e-5)


@pytest.mark.slow
def test_chunk_latency_times_the_artifact_in_a_process_of_its_own(runs: Path,
                                                                    tmp_path: Path) -> None:
    from robot_rl.bench.latency import chunk_latency, measure

    export_path(ExportConfig(run=runs / "bc-mlp", out=runs / "mlp-lat"))
    p50, p99 = chunk_latency(runs / "mlp-lat", calls=200, warmup=10, processes=2)
    assert 0 < p50 <= p99
    here = measure(runs / "mlp-lat", calls=50, warmup=5)
    assert here["calls"] == 50 and 0 < here["p50_us"] <= here["p90_us"] <= here["p99_us"]
    with pytest.raises(RuntimeError, match="latency of .* failed"):
        chunk_latency(tmp_path / "missing", calls=10, warmup=1, processes=1)


def test_a_plain_students_hidden_layers_cost_a_quarter_of_residual_blocks() -> None:
    from robot_rl.distill.chunked import student_config
    from robot_rl.distill.configs import DistillConfig
    from robot_rl.policies import PolicyConfig, make_policy

    teacher = PolicyConfig(horizon=8, execute=4, width=256, blocks=3, flow_steps=10)

    def params(hidden: tuple[int, ...], block: str) -> tuple[PolicyConfig, int]:
        cfg = student_config(teacher, DistillConfig(run=Path("run"), hidden=hidden,
                                                    chunk_block=block))  # type: ignore[arg-type]
        net = make_policy(cfg, "mlp", 30, 3).net
        return cfg, sum(p.numel() for p in net.parameters())

    plain, n_plain = params((256, 256, 256), "plain")
    assert (plain.width, plain.blocks, plain.block, plain.flow_steps) == (256, 2, "plain", 1)
    assert (plain.horizon, plain.executed) == (8, 4)
    head = 2 * 256 + 256 * 24 + 24  # LayerNorm, then the chunk (8 x 3)
    assert n_plain == (30 * 256 + 256) + 2 * (256 * 256 + 256) + head
    residual, n_res = params((256, 256), "residual")
    assert (residual.blocks, residual.block) == (2, "residual")
    block = 2 * 256 + (256 * 512 + 512) + (512 * 256 + 256)
    assert n_res == (30 * 256 + 256) + 2 * block + head
