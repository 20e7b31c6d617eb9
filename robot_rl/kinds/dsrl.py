"""The DSRL kind: ``robot-rl dsrl``, SAC that chooses a bc run's flow noise (its cost critic
scores noise, not actions: the artifact has no gate; the shield still guards every
action)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from robot_rl.kinds.base import EvalOptions, Evaluation, Run
from robot_rl.kinds.chunked import ChunkedKind, ChunkedPolicy
from robot_rl.kinds.command import Command
from robot_rl.kinds.training import train_runner


class DSRLKind(ChunkedKind):
    name = "dsrl"

    def commands(self) -> dict[str, Command]:
        from robot_rl.finetune import DSRLConfig

        return {"dsrl": Command(DSRLConfig, train)}

    def flow_run(self, run: Run) -> Path:
        from robot_rl.finetune.dsrl import DSRLConfig

        return Path(DSRLConfig.from_saved(run.state["config"]).policy)

    def policy_evaluation(self, run: Run, opts: EvalOptions) -> Evaluation:
        from robot_rl.evaluate import evaluate_agent
        from robot_rl.finetune.dsrl import load_dsrl

        agent, cfg, env = load_dsrl(run.checkpoint, opts.num_envs, opts.seed, dr=opts.dr)
        # ungated by default, as its artifact decides
        return Evaluation(env, f"{cfg.task} / dsrl over {cfg.policy}",
                          lambda n, **kw: evaluate_agent(agent, env, n, gate=bool(opts.gate),
                                                         **kw))

    def chunked_policy(self, run: Run) -> ChunkedPolicy:
        """The flow with its noise chosen by the trained actor inside the graph."""
        from robot_rl.bc import load_bc_policy
        from robot_rl.distill import teacher_policy
        from robot_rl.export.modules import ChunkGraph
        from robot_rl.finetune.dsrl import load_dsrl

        agent, cfg, _ = load_dsrl(run.checkpoint, 1, 0)
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
