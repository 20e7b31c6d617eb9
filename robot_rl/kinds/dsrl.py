"""The DSRL kind: ``robot-rl dsrl``, SAC that chooses a bc run's flow noise (its cost critic
scores noise, not actions: the artifact has no gate; the shield still guards every
action)."""

from __future__ import annotations

from typing import Any

from robot_rl.kinds.chunked import ChunkedPolicy, FlowFinetuneKind


def _flow_with_chosen_noise(actor: Any, cfg: Any, env: Any, policy: Any, bc_cfg: Any,
                            bc_state: dict[str, Any], provenance: dict[str, Any]
                            ) -> ChunkedPolicy:
    """The flow with its noise chosen by the trained actor inside the graph."""
    from robot_rl.export.modules import ChunkGraph

    steps = bc_cfg.policy.executed if cfg.noise == "executed" else policy.horizon
    return ChunkedPolicy(ChunkGraph(policy, actor, cfg.noise_scale, steps), policy, bc_state,
                         {**provenance, "noise_scale": cfg.noise_scale}, bc_cfg.ensemble)


KIND = FlowFinetuneKind("dsrl", "robot_rl.finetune.dsrl", ("DSRLConfig", "DSRLRunner", "load_dsrl"),
                        "over", _flow_with_chosen_noise,
                        config_module="robot_rl.finetune.configs")
