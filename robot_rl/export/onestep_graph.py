"""A one-step flow policy (a distilled student, ``robot_rl.distill.chunked``) as few graph
operations as its arithmetic allows, for the deploy loop's call latency.

    graph = noisy_chunk_graph(policy)    # OneStepFlowGraph where it applies, else NoisyChunkGraph
    chunk = graph(obs, noise)            # obs (B, T O), noise (B, H A) -> chunk (B, H A)

A flow policy with one Euler step computes, for observation history o and noise x0,
``clip(act_norm⁻¹(x0 + v(x0, t=0, cond(o))))``. Its graph as traced spends most of a
single call in operations on constants: the time features of t = 0 (built per call from
the batch's shape), the observation mask, the action statistics. ``OneStepFlowGraph``
folds them into the first and last layers' weights once, at export:

    z = clip((o - mean) / std, -c, c)                       # (B, T O), the policy's own
    h = [x0, z] @ W_in'ᵀ + b_in'                            # time features, mask folded in
    h = out_norm_act(blocks(h))                             # the denoiser's own layers
    chunk = clip(x0 * s + h @ W_out'ᵀ + b_out', low, high)  # action statistics folded in

with ``W_in' = [W_x, W_c * mask]``, ``b_in' = b_in + W_t · time_features(0)``,
``s`` the action std tiled over the chunk, ``W_out' = s * W_out`` and ``b_out' = s * b_out +
mean``. It equals ``NoisyChunkGraph`` up to float rounding (checked when it is built); on
a 256 x 3 student its ONNX graph has about half the operations
(docs/performance/history/learners-3.md).
"""

from __future__ import annotations

import copy
from typing import TypeGuard

import torch
from torch import nn

from robot_rl.export.modules import NoisyChunkGraph
from robot_rl.export.policy import ArtifactError
from robot_rl.policies import ChunkPolicy, FlowPolicy
from robot_rl.policies.denoisers import MLPDenoiser, time_embedding

TOLERANCE = 1e-4
"""Largest difference in normalized action units between the folded graph and the
policy on random inputs that ``OneStepFlowGraph`` accepts."""


class OneStepFlowGraph(nn.Module):
    """A one-step MLP flow policy, its constants folded (module docstring)."""

    w_in: torch.Tensor
    b_in: torch.Tensor
    w_out: torch.Tensor
    b_out: torch.Tensor
    obs_mean: torch.Tensor
    obs_std: torch.Tensor
    act_std: torch.Tensor
    low: torch.Tensor
    high: torch.Tensor

    def __init__(self, policy: FlowPolicy):
        super().__init__()
        if not applies(policy):
            raise ValueError("OneStepFlowGraph takes a flow policy of one step with an MLP "
                             "denoiser")
        policy = policy.eval()
        net = policy.net
        assert isinstance(net, MLPDenoiser)
        T, H = policy.obs_history, policy.horizon
        self.shape = (T * policy.obs_dim, H * policy.act_dim)
        HA = H * policy.act_dim
        with torch.no_grad():
            w = net.inp.weight.detach()
            w_x, w_t, w_c = w[:, :HA], w[:, HA:HA + net.time_dim], w[:, HA + net.time_dim:]
            t0 = time_embedding(torch.zeros(1), net.time_dim)[0]
            seen = policy.obs_seen.repeat(T)
            self.register_buffer("w_in", torch.cat([w_x, w_c * seen], dim=1).clone())
            self.register_buffer("b_in", (net.inp.bias.detach() + w_t @ t0).clone())
            out = net.out[-1]
            assert isinstance(out, nn.Linear)
            s = policy.act_norm.std.repeat(H)
            self.register_buffer("w_out", (out.weight.detach() * s[:, None]).clone())
            self.register_buffer("b_out", (out.bias.detach() * s
                                           + policy.act_norm.mean.repeat(H)).clone())
            self.register_buffer("act_std", s.clone())
            self.register_buffer("obs_mean", policy.obs_norm.mean.repeat(T).clone())
            self.register_buffer("obs_std", policy.obs_norm.std.repeat(T).clone())
            self.register_buffer("low", policy.low.repeat(H).clone())
            self.register_buffer("high", policy.high.repeat(H).clone())
        self.clip = float(policy.obs_norm.clip)
        self.blocks = copy.deepcopy(net.blocks)
        self.head = copy.deepcopy(net.out[:-1])
        """The denoiser's LayerNorm and activation before its last layer."""
        self._check(policy)

    def forward(self, obs: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        z = ((obs - self.obs_mean) / self.obs_std).clamp(-self.clip, self.clip)
        h = nn.functional.linear(torch.cat([noise, z], dim=1), self.w_in, self.b_in)
        h = nn.functional.linear(self.head(self.blocks(h)), self.w_out, self.b_out)
        return torch.maximum(torch.minimum(noise * self.act_std + h, self.high), self.low)

    @torch.no_grad()
    def _check(self, policy: ChunkPolicy, batch: int = 64) -> None:
        """The folded graph acts as ``NoisyChunkGraph(policy)`` on random inputs."""
        gen = torch.Generator().manual_seed(0)
        obs_dim, chunk_dim = self.shape
        obs = self.obs_mean + 2.0 * self.obs_std * torch.randn(batch, obs_dim, generator=gen)
        noise = torch.randn(batch, chunk_dim, generator=gen)
        want = NoisyChunkGraph(policy)(obs, noise)
        err = ((self(obs, noise) - want) / self.act_std).abs().max()
        if not float(err) <= TOLERANCE:
            raise ArtifactError(f"the folded one-step graph differs from the policy by "
                                f"{float(err):.2e} in normalized action units (tolerance "
                                f"{TOLERANCE:g})")


def applies(policy: ChunkPolicy) -> TypeGuard[FlowPolicy]:
    """Whether ``OneStepFlowGraph`` can fold ``policy``: a flow of one step, MLP denoiser."""
    return (isinstance(policy, FlowPolicy) and policy.cfg.flow_steps == 1
            and isinstance(policy.net, MLPDenoiser) and isinstance(policy.net.out[-1], nn.Linear))


def noisy_chunk_graph(policy: ChunkPolicy) -> nn.Module:
    """The exported graph of a flow policy whose noise the runtime draws: a one-step MLP
    flow folded (``OneStepFlowGraph``), any other unrolled (``NoisyChunkGraph``)."""
    return OneStepFlowGraph(policy) if applies(policy) else NoisyChunkGraph(policy)
