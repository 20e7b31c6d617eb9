"""The DSRL kind: ``robot-rl dsrl``, SAC that chooses a bc run's flow noise (its cost critic
scores noise, not actions: the artifact has no gate; the shield still guards every
action)."""

from __future__ import annotations

from typing import Any

from robot_rl.kinds.base import Run
from robot_rl.kinds.chunked import ChunkedPolicy, FlowFinetuneKind
from robot_rl.kinds.command import Command
from robot_rl.kinds.training import train_runner


class DSRLKind(FlowFinetuneKind):
    name = "dsrl"

    def commands(self) -> dict[str, Command]:
        from robot_rl.finetune import DSRLConfig

        return {"dsrl": Command(DSRLConfig, train)}

    def config_type(self) -> Any:
        from robot_rl.finetune import DSRLConfig

        return DSRLConfig

    def load(self, run: Run, num_envs: int, seed: int, dr: Any = None) -> tuple[Any, Any, Any]:
        from robot_rl.finetune.dsrl import load_dsrl

        return load_dsrl(run.checkpoint, num_envs, seed, dr=dr)

    def describe(self, cfg: Any) -> str:
        return f"dsrl over {cfg.policy}"

    def chunked_policy(self, run: Run) -> ChunkedPolicy:
        """The flow with its noise chosen by the trained actor inside the graph."""
        from robot_rl.bc import load_bc_policy
        from robot_rl.distill import teacher_policy
        from robot_rl.export.modules import ChunkGraph

        agent, cfg, _ = self.load(run, 1, 0)
        policy, bc_cfg, state = load_bc_policy(cfg.policy)
        steps = bc_cfg.policy.executed if cfg.noise == "executed" else policy.horizon
        module = ChunkGraph(policy, teacher_policy(agent), cfg.noise_scale, steps)
        provenance = {"run": str(run.dir), "policy": "dsrl", "flow_policy": str(cfg.policy),
                      "noise_scale": cfg.noise_scale}
        return ChunkedPolicy(module, policy, state, provenance, bc_cfg.ensemble)


def train(cfg: Any) -> None:
    """``robot-rl dsrl``."""
    from robot_rl.finetune import DSRLRunner

    train_runner(cfg, DSRLRunner, lambda r: f"{r.cfg.task} / dsrl")


KIND = DSRLKind()
