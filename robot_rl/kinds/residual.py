"""The residual kind: ``robot-rl residual``, a bounded correction learned by SAC on top of a
bc run's flow (the flow with zero noise, as the residual learnt on it); the artifact holds
both graphs."""

from __future__ import annotations

from typing import Any

from robot_rl.kinds.chunked import ChunkedPolicy, FlowFinetuneKind


def _flow_and_residual(actor: Any, cfg: Any, env: Any, policy: Any, bc_cfg: Any,
                       bc_state: dict[str, Any], provenance: dict[str, Any]) -> ChunkedPolicy:
    """The flow's graph with the residual's beside it, each correction held as the run's
    env held it."""
    from robot_rl.export.modules import ChunkGraph, ResidualGraph

    every = env.every
    return ChunkedPolicy(ChunkGraph(policy), policy, bc_state,
                         {**provenance, "scale": cfg.scale, "every": every},
                         residual=ResidualGraph(actor, cfg.scale, every))


KIND = FlowFinetuneKind("residual", "robot_rl.finetune.residual",
                        ("ResidualConfig", "ResidualRunner", "load_residual"), "on",
                        _flow_and_residual, config_module="robot_rl.finetune.configs")
