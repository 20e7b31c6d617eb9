"""Chunked policies learned from demonstrations: flow matching (diffusion-style) and the
plain MLP baseline, their training samples and their step-by-step execution.

    policy = make_policy(PolicyConfig(horizon=8), "flow", obs_dim, act_dim, obs, actions)
    run = ChunkExecutor(lambda h: policy.sample(h), 8, 8)      # obs (E, O) -> action (E, A)
"""

from robot_rl.policies.chunk_policy import (
    ChunkPolicy,
    FlowPolicy,
    MLPChunkPolicy,
    PolicyConfig,
    PolicyKind,
    make_policy,
)
from robot_rl.policies.chunks import ChunkData, chunk_indices
from robot_rl.policies.execution import ChunkExecutor, ObsHistory
from robot_rl.policies.normalizer import Normalizer

__all__ = ["ChunkData", "ChunkExecutor", "ChunkPolicy", "FlowPolicy", "MLPChunkPolicy",
           "Normalizer", "ObsHistory", "PolicyConfig", "PolicyKind", "chunk_indices",
           "make_policy"]
