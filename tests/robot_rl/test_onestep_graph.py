"""The folded one-step flow graph acts as the policy it folds, and export picks it only
where it applies."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from robot_rl.export.artifact import _write_graph
from robot_rl.export.modules import NoisyChunkGraph
from robot_rl.export.onestep_graph import OneStepFlowGraph, noisy_chunk_graph
from robot_rl.export.policy import ArtifactError
from robot_rl.policies import FlowPolicy, Normalizer, PolicyConfig


def flow(steps: int = 1, block: str = "plain", obs_history: int = 2) -> FlowPolicy:
    """A random flow of ``steps``: observation statistics away from 0 and 1, action
    statistics and bounds that bind, the last observation term ignored."""
    gen = torch.Generator().manual_seed(3)
    obs_dim, A = 5, 2
    obs_norm = Normalizer(torch.randn(obs_dim, generator=gen),
                          0.5 + torch.rand(obs_dim, generator=gen))
    act_norm = Normalizer(0.1 * torch.randn(A, generator=gen), 0.2 + torch.rand(A, generator=gen))
    cfg = PolicyConfig(horizon=3, obs_history=obs_history, width=16, blocks=2, block=block,
                       flow_steps=steps, ignore_obs=("last_action",))
    names = ["ee.0", "ee.1", "ee.2", "last_action.0", "last_action.1"]
    policy = FlowPolicy(cfg, obs_norm, act_norm, (torch.tensor([-0.3, -1.0]),
                                                  torch.tensor([0.5, 1.0])), names)
    with torch.no_grad():  # weights of a trained size, not PyTorch's small initial ones
        for p in policy.net.parameters():
            p.add_(0.3 * torch.randn(p.shape, generator=gen))
    return policy.eval()


@pytest.mark.parametrize("block", ["plain", "residual"])
def test_the_folded_graph_equals_the_policy(block: str) -> None:
    policy = flow(block=block)
    assert float(policy.obs_seen.sum()) == 3.0  # the mask is part of what is folded
    folded, plain = OneStepFlowGraph(policy), NoisyChunkGraph(policy)
    gen = torch.Generator().manual_seed(7)
    obs = 3.0 * torch.randn(200, 2 * 5, generator=gen)  # some past the normalizer's clip
    noise = torch.randn(200, 3 * 2, generator=gen)
    want = plain(obs, noise)
    torch.testing.assert_close(folded(obs, noise), want, atol=1e-5, rtol=0)
    # the bounds bind somewhere, so the clip is exercised
    assert bool((want == 0.5).any()) and bool((want == -0.3).any())


def test_export_folds_one_step_flows_only() -> None:
    assert isinstance(noisy_chunk_graph(flow(steps=1)), OneStepFlowGraph)
    assert isinstance(noisy_chunk_graph(flow(steps=2)), NoisyChunkGraph)
    with pytest.raises(ValueError, match="one step"):
        OneStepFlowGraph(flow(steps=2))


def test_a_fold_that_does_not_match_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check at construction compares with the unfolded graph: a wrong fold (here
    the time features of t = 0.5 instead of 0) raises."""
    import robot_rl.export.onestep_graph as og

    real = og.time_embedding
    monkeypatch.setattr(og, "time_embedding", lambda t, dim: real(t + 0.5, dim))
    with pytest.raises(ArtifactError, match="differs from the policy"):
        OneStepFlowGraph(flow())


def test_the_folded_graph_exports_fewer_operations(tmp_path: Path) -> None:
    """As the artifact exports graphs (a dynamic batch): under half the ONNX nodes."""
    onnx = pytest.importorskip("onnx")
    policy = flow()
    sizes = {}
    for name, module in (("folded", OneStepFlowGraph(policy)), ("plain", NoisyChunkGraph(policy))):
        _write_graph(module, (torch.zeros(1, 10), torch.zeros(1, 6)), ("obs", "noise"),
                     "action", tmp_path, f"{name}.onnx", f"{name}.pt")
        sizes[name] = len(onnx.load(str(tmp_path / f"{name}.onnx")).graph.node)
    assert sizes["folded"] < sizes["plain"] / 2
