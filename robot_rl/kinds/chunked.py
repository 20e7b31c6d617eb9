"""What the kinds of chunked policies share (bc, and dsrl and residual, which fine-tune a bc
run's flow): the one-step student that ``robot-rl distill`` fits to a run's policy, its
evaluation and export, and the artifact of a chunked policy."""

from __future__ import annotations

import abc
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from robot_rl.kinds.base import EvalOptions, Evaluation, ExportConfig, Exported, Kind, Run
from robot_rl.kinds.command import Command
from robot_rl.kinds.training import train_runner


class ChunkedPolicy:
    """A run's chunked policy as its artifact holds it."""

    def __init__(self, module: Any, policy: Any, bc_state: dict[str, Any],
                 provenance: dict[str, Any], ensemble: float | None = None,
                 residual: Any = None):
        self.module = module
        """The graph exported (``ChunkGraph``, or the flow with its noise as an input)."""
        self.policy = policy
        """The ``ChunkPolicy`` (its config: horizon, executed steps)."""
        self.bc_state = bc_state
        """The checkpoint of the bc run the flow comes from (its task and env)."""
        self.provenance = provenance
        self.ensemble = ensemble
        self.residual = residual
        """A residual run's ``ResidualGraph``, exported beside the flow."""


class ChunkedKind(Kind):
    """A kind whose runs act in chunks of a bc run's policy."""

    @abc.abstractmethod
    def flow_run(self, run: Run) -> Path:
        """The bc run the run's policy comes from (itself, for a bc run)."""

    @abc.abstractmethod
    def policy_evaluation(self, run: Run, opts: EvalOptions) -> Evaluation:
        """The run's own chunked decision, ready to evaluate."""

    @abc.abstractmethod
    def chunked_policy(self, run: Run) -> ChunkedPolicy:
        """The run's policy as its artifact holds it."""

    def evaluation(self, run: Run, opts: EvalOptions) -> Evaluation:
        ev = self.policy_evaluation(run, opts)
        if not opts.student:
            return ev
        from robot_rl.bc import evaluate_chunked
        from robot_rl.distill.chunked import load_onestep

        onestep, _ = load_onestep(run.dir)
        env = getattr(ev.env, "env", ev.env)  # a dsrl or residual env's own: one action a step
        return Evaluation(env, f"{ev.label}: its one-step student",
                          lambda n, **kw: evaluate_chunked(onestep, env, n, **kw))

    def export(self, run: Run, cfg: ExportConfig) -> Exported:
        """The run's chunked policy, or with ``--policy student`` its one-step student
        (``robot-rl distill``)."""
        from robot_rl.bc import bc_env
        from robot_rl.export.artifact import artifact_meta, chunk_meta, export_artifact
        from robot_rl.export.modules import ChunkGraph

        p = self.student_policy(run) if cfg.policy == "student" else self.chunked_policy(run)
        env = bc_env(p.bc_state, run.dir, "an exported policy", 1, 0)
        chunk = chunk_meta(p.policy.cfg, p.policy.kind, not isinstance(p.module, ChunkGraph),
                           p.ensemble)
        meta = artifact_meta(env, p.policy, None, p.provenance, chunk=chunk)
        out = export_artifact(cfg.out or run.dir / "export", p.module, meta,
                              residual=p.residual)
        what = "one-step student" if cfg.policy == "student" else "chunked policy"
        return Exported(out, f"the {self.name} run's {what} (H={p.policy.horizon}, execute "
                             f"{p.policy.cfg.executed})")

    def student_policy(self, run: Run) -> ChunkedPolicy:
        """The run's one-step student (``robot-rl distill``) as its artifact holds it."""
        from robot_rl.bc import load_bc_policy
        from robot_rl.distill.chunked import load_onestep
        from robot_rl.export.modules import ChunkGraph
        from robot_rl.export.onestep_graph import noisy_chunk_graph

        student, record = load_onestep(run.dir)
        _, _, state = load_bc_policy(self.flow_run(run))
        module = noisy_chunk_graph(student) if student.kind == "flow" else ChunkGraph(student)
        provenance = {"run": str(run.dir), "policy": "student",
                      "student": f"one-step {student.kind} (DAgger from the run's policy)",
                      "teacher_run": record["teacher_run"],
                      "teacher_success": record["teacher_success"],
                      "student_success": record["student_success"]}
        return ChunkedPolicy(module, student, state, provenance)

    def distill(self, run: Run, cfg: Any, console: Any) -> Any:
        from robot_rl.distill.chunked import distill_chunked

        return distill_chunked(cfg, console)[1]


Artifact = Callable[[Any, Any, Any, Any, Any, dict[str, Any], dict[str, Any]], ChunkedPolicy]
"""(the agent's deterministic actor, the run's config, its env, the flow, the flow's bc
config, its bc checkpoint, the provenance so far) -> the run's chunked policy."""


class FlowFinetuneKind(ChunkedKind):
    """A kind whose SAC agent fine-tunes a bc run's flow (dsrl, residual): its config names
    the flow's run (``policy``), and its decision is the agent's, ungated unless asked (its
    artifact has no gate). It is made of its name (its command's too), its learner's module
    and what in it is the config, the runner and the loader, and how its artifact is
    built."""

    def __init__(self, name: str, module: str, names: tuple[str, str, str], relation: str,
                 artifact: Artifact, config_module: str | None = None):
        self.name = name
        self.module = module
        """The learner's module (``robot_rl.finetune.dsrl``)."""
        self.config_module = config_module or module
        """The module of its config (``robot_rl.finetune.configs``: without torch, so
        ``--help`` is quick); the learner's by default."""
        self.config_name, self.runner_name, self.loader_name = names
        """The loader: ``(checkpoint, num_envs, seed, dr=) -> (agent, config, env)``."""
        self.relation = relation
        """How the run relates to its flow, for tables (``over``: ``dsrl over runs/...``)."""
        self.artifact = artifact

    def _learner(self, attr: str) -> Any:
        return getattr(importlib.import_module(self.module), attr)

    def commands(self) -> dict[str, Command]:
        return {self.name: Command(self.config_type(), self.train)}

    def config_type(self) -> Any:
        """The config class of its runs (``from_saved``)."""
        return getattr(importlib.import_module(self.config_module), self.config_name)

    def load(self, run: Run, num_envs: int, seed: int, dr: Any = None) -> tuple[Any, Any, Any]:
        """The run's agent, config and an env of ``num_envs`` on which it acts."""
        return self._learner(self.loader_name)(run.checkpoint, num_envs, seed, dr=dr)

    def describe(self, cfg: Any) -> str:
        """What the run is, for tables (``dsrl over runs/...``)."""
        return f"{self.name} {self.relation} {cfg.policy}"

    def train(self, cfg: Any) -> None:
        """Its command: the runner trains (``kinds.training.train_runner``)."""
        train_runner(cfg, self._learner(self.runner_name),
                     lambda c: f"{c.task} / {self.name}")

    def chunked_policy(self, run: Run) -> ChunkedPolicy:
        from robot_rl.bc import load_bc_policy
        from robot_rl.distill import teacher_policy

        agent, cfg, env = self.load(run, 1, 0)
        policy, bc_cfg, state = load_bc_policy(cfg.policy)
        provenance = {"run": str(run.dir), "policy": self.name, "flow_policy": str(cfg.policy)}
        return self.artifact(teacher_policy(agent), cfg, env, policy, bc_cfg, state, provenance)

    def flow_run(self, run: Run) -> Path:
        return Path(self.config_type().from_saved(run.state["config"]).policy)

    def policy_evaluation(self, run: Run, opts: EvalOptions) -> Evaluation:
        from robot_rl.evaluate import evaluate_agent

        agent, cfg, env = self.load(run, opts.num_envs, opts.seed, opts.dr)
        return Evaluation(env, f"{cfg.task} / {self.describe(cfg)}",
                          lambda n, **kw: evaluate_agent(agent, env, n, gate=bool(opts.gate),
                                                         **kw))
