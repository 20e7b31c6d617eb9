"""The behaviour-cloning kind: ``robot-rl bc`` (a chunked policy, flow matching or MLP,
from a dataset) and ``robot-rl bc-filtered`` (BC re-trained on its own successful
rollouts, which writes a bc run)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from robot_rl.kinds.base import EvalOptions, Evaluation, Run
from robot_rl.kinds.chunked import ChunkedKind, ChunkedPolicy
from robot_rl.kinds.command import Command
from robot_rl.kinds.training import plot_curve


class BCKind(ChunkedKind):
    name = "bc"

    def commands(self) -> dict[str, Command]:
        from robot_rl.bc.config import BCConfig, FilteredBCConfig

        return {"bc": Command(BCConfig, train), "bc-filtered": Command(FilteredBCConfig,
                                                                       train_filtered)}

    def flow_run(self, run: Run) -> Path:
        return run.checkpoint

    def policy_evaluation(self, run: Run, opts: EvalOptions) -> Evaluation:
        from robot_rl.bc import bc_env, evaluate_chunked, load_bc_policy

        policy, cfg, _ = load_bc_policy(run.checkpoint, run.state)
        env = bc_env(run.state, run.checkpoint, "evaluation", opts.num_envs, opts.seed,
                     dr=opts.dr)
        return Evaluation(env, f"{run.state['task']} / {cfg.algo}",
                          lambda n, **kw: evaluate_chunked(policy, env, n,
                                                           ensemble=cfg.ensemble, **kw))

    def chunked_policy(self, run: Run) -> ChunkedPolicy:
        from robot_rl.bc import load_bc_policy
        from robot_rl.export.modules import ChunkGraph
        from robot_rl.export.onestep_graph import noisy_chunk_graph

        policy, cfg, state = load_bc_policy(run.checkpoint)
        module = noisy_chunk_graph(policy) if policy.kind == "flow" else ChunkGraph(policy)
        provenance = {"run": str(run.dir), "grad_steps": state["grad_steps"],
                      "policy": cfg.algo, "data": state.get("data")}
        return ChunkedPolicy(module, policy, state, provenance, cfg.ensemble)


def train(cfg: Any) -> None:
    """``robot-rl bc``: behaviour cloning, then the learning curve (success where it was
    evaluated, else the action error on held-out demonstrations)."""
    from robot_rl.bc import BCRunner
    from robot_rl.plot import plot_action_error

    runner = BCRunner(cfg)
    history = runner.train()
    label = f"{runner.demos.task or cfg.demos.name} / {runner.cfg.algo}"
    if curve := [h for h in history if h["success_rate"] == h["success_rate"]]:  # evaluated
        plot_curve(runner.run_dir, label, curve)
    elif curve := [h for h in history if h["action_rmse"] == h["action_rmse"]]:
        png = plot_action_error(runner.run_dir / "learning_curve.png", label, curve,
                                title=runner.run_dir.name)
        Console().print(f"learning curve: {png}")


def train_filtered(cfg: Any) -> None:
    """``robot-rl bc-filtered``: rounds of rollouts and BC on the successes, then the
    learning curve."""
    from robot_rl.bc.filtered import FilteredBC
    from robot_rl.plot import plot_curves

    fb = FilteredBC(cfg)
    history = fb.train()
    png = plot_curves(fb.run_dir / "learning_curve.png", [("filtered bc", history)],
                      title=fb.run_dir.name)
    Console().print(f"run: {fb.run_dir} (a bc run: eval, export, dsrl and distill take it); "
                    f"learning curve: {png}", soft_wrap=True)


KIND = BCKind()
