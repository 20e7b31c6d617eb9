"""The residual kind: ``robot-rl residual``, a bounded correction learned by SAC on top of a
bc run's flow (the flow with zero noise, as the residual learnt on it); the artifact holds
both graphs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from robot_rl.kinds.base import EvalOptions, Evaluation, Run
from robot_rl.kinds.chunked import ChunkedKind, ChunkedPolicy
from robot_rl.kinds.command import Command
from robot_rl.kinds.training import train_runner


class ResidualKind(ChunkedKind):
    name = "residual"

    def commands(self) -> dict[str, Command]:
        from robot_rl.finetune.residual import ResidualConfig

        return {"residual": Command(ResidualConfig, train)}

    def flow_run(self, run: Run) -> Path:
        from robot_rl.finetune.residual import ResidualConfig

        return Path(ResidualConfig.from_saved(run.state["config"]).policy)

    def policy_evaluation(self, run: Run, opts: EvalOptions) -> Evaluation:
        from robot_rl.evaluate import evaluate_agent
        from robot_rl.finetune.residual import load_residual

        agent, cfg, env = load_residual(run.checkpoint, opts.num_envs, opts.seed, dr=opts.dr)
        # ungated by default, as its artifact decides
        return Evaluation(env, f"{cfg.task} / residual on {cfg.policy}",
                          lambda n, **kw: evaluate_agent(agent, env, n, gate=bool(opts.gate),
                                                         **kw))

    def chunked_policy(self, run: Run) -> ChunkedPolicy:
        from robot_rl.bc import load_bc_policy
        from robot_rl.distill import teacher_policy
        from robot_rl.export.modules import ChunkGraph, ResidualGraph
        from robot_rl.finetune.residual import load_residual

        agent, cfg, env = load_residual(run.checkpoint, 1, 0)
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
