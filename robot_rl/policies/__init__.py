"""Chunked policies learned from demonstrations: flow matching (diffusion-style) and the
plain MLP baseline, their training samples and their step-by-step execution.

    policy = make_policy(PolicyConfig(horizon=8), "flow", obs_dim, act_dim, obs, actions)
    run = ChunkExecutor(lambda h: policy.sample(h), 8, 8)      # obs (E, O) -> action (E, A)
"""

from typing import TYPE_CHECKING

from robot_rl.lazy import lazy_exports

if TYPE_CHECKING:
    from robot_rl.policies.chunk_policy import ChunkPolicy, FlowPolicy, MLPChunkPolicy, make_policy
    from robot_rl.policies.chunks import ChunkData, chunk_indices
    from robot_rl.policies.config import PolicyConfig, PolicyKind
    from robot_rl.policies.execution import ChunkExecutor, ObsHistory
    from robot_rl.policies.normalizer import Normalizer

_EXPORTS = {
    "ChunkPolicy": "robot_rl.policies.chunk_policy",
    "FlowPolicy": "robot_rl.policies.chunk_policy",
    "MLPChunkPolicy": "robot_rl.policies.chunk_policy",
    "PolicyConfig": "robot_rl.policies.config",
    "PolicyKind": "robot_rl.policies.config",
    "make_policy": "robot_rl.policies.chunk_policy",
    "ChunkData": "robot_rl.policies.chunks",
    "chunk_indices": "robot_rl.policies.chunks",
    "ChunkExecutor": "robot_rl.policies.execution",
    "ObsHistory": "robot_rl.policies.execution",
    "Normalizer": "robot_rl.policies.normalizer",
}
"""Where each exported name lives; imported on first use (``robot_rl.lazy``)."""

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = ["ChunkData", "ChunkExecutor", "ChunkPolicy", "FlowPolicy", "MLPChunkPolicy",
           "Normalizer", "ObsHistory", "PolicyConfig", "PolicyKind", "chunk_indices",
           "make_policy"]
