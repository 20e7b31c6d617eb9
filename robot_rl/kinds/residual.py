"""The residual kind: ``robot-rl residual``, a bounded correction learned by SAC on top of a
bc run's flow (the flow with zero noise, as the residual learnt on it); the artifact holds
both graphs."""

from __future__ import annotations

from typing import Any

from robot_rl.kinds.base import Run
from robot_rl.kinds.chunked import ChunkedPolicy, FlowFinetuneKind
from robot_rl.kinds.command import Command
from robot_rl.kinds.training import train_runner


class ResidualKind(FlowFinetuneKind):
    name = "residual"

    def commands(self) -> dict[str, Command]:
        from robot_rl.finetune.residual import ResidualConfig

        return {"residual": Command(ResidualConfig, train)}

    def config_type(self) -> Any:
        from robot_rl.finetune.residual import ResidualConfig

        return ResidualConfig

    def load(self, run: Run, num_envs: int, seed: int, dr: Any = None) -> tuple[Any, Any, Any]:
        from robot_rl.finetune.residual import load_residual

        return load_residual(run.checkpoint, num_envs, seed, dr=dr)

    def describe(self, cfg: Any) -> str:
        return f"residual on {cfg.policy}"

    def chunked_policy(self, run: Run) -> ChunkedPolicy:
        from robot_rl.bc import load_bc_policy
        from robot_rl.distill import teacher_policy
        from robot_rl.export.modules import ChunkGraph, ResidualGraph

        agent, cfg, env = self.load(run, 1, 0)
        policy, _, state = load_bc_policy(cfg.policy)
        every = env.every  # as the run's env held each correction
        residual = ResidualGraph(teacher_policy(agent), cfg.scale, every)
        provenance = {"run": str(run.dir), "policy": "residual", "flow_policy": str(cfg.policy),
                      "scale": cfg.scale, "every": every}
        return ChunkedPolicy(ChunkGraph(policy), policy, state, provenance, residual=residual)


def train(cfg: Any) -> None:
    """``robot-rl residual``."""
    from robot_rl.finetune.residual import ResidualRunner

    train_runner(cfg, ResidualRunner, lambda r: f"{r.cfg.task} / residual")


KIND = ResidualKind()
