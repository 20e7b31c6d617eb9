"""``robot-rl export``: a run's policy as the deploy artifact (ONNX + TorchScript +
policy.json), for every kind of run.

    robot-rl export runs/reach__sac__0__20261121-101500       # -> <run>/export/
    robot-rl export runs/push__bc-flow__0__20261123-101500 --policy student
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Any, Literal

import torch
import tyro
from rich.console import Console

from robot_rl.errors import ConfigError


@dataclasses.dataclass(kw_only=True)
class ExportConfig:
    """Export a run's policy as the deploy artifact (ONNX + TorchScript + policy.json).

    Example: robot-rl export runs/reach__sac__0__20261121-101500 --out export/reach
    """

    run: Annotated[Path, tyro.conf.Positional]
    """Run directory, or a pixel student file (robot-rl distill-pixels)."""
    out: Path | None = None
    """Artifact folder (default: <run>/export; for a pixel student, its file name without
    .pt)."""
    policy: Literal["student", "teacher"] | None = None
    """student: the distilled MLP (robot-rl distill); teacher: the trained actor's mean, or
    a bc / dsrl / residual run's chunked policy (the flow's integration unrolled in the
    graph; a residual run's with its residual graph). Default: student for train and
    finetune runs, teacher for bc, dsrl and residual runs."""
    threshold: float | None = None
    """Deploy gate threshold on the estimated discounted cost (default: the training one)."""
    candidates: int | None = None
    """Deploy gate candidates per decision (default: the training number)."""
    candidate_noise: float | None = None
    """Std of the Gaussian perturbations that form the deploy gate's other candidates
    (default: the training one, which training-time evaluation used)."""


def export_cmd(cfg: ExportConfig) -> None:
    from robot_rl.checkpoint import checkpoint_kind, resolve_checkpoint, run_dir_of
    from robot_rl.distill import load_student, teacher_policy
    from robot_rl.export.artifact import artifact_meta, export_artifact
    from robot_rl.export.modules import DeployCost, ObsNorm
    from robot_rl.runner import load_agent, make_train_env

    if _is_pixel_student(cfg.run):
        _export_pixel_student(cfg)
        return
    ckpt = resolve_checkpoint(cfg.run)
    run = run_dir_of(ckpt)
    kind = checkpoint_kind(ckpt)
    if kind in ("bc", "dsrl", "residual"):
        _export_chunked(cfg, kind, ckpt, run)
        return
    if kind == "pixel_sac":  # the pixel policy file its checkpoints write
        from robot_rl.vision.pixel_runner import PIXEL_POLICY

        _export_pixel_student(dataclasses.replace(cfg, run=run / PIXEL_POLICY,
                                                  out=cfg.out or run / "export"))
        return
    agent, train_cfg, state = load_agent(ckpt)
    teacher = teacher_policy(agent)
    which = cfg.policy or "student"
    policy = load_student(run) if which == "student" else teacher
    env = make_train_env(train_cfg, 1, 0)
    safety = None
    cost = None
    if agent.cost_critic is not None:
        sc = agent.safety_cfg
        noise = sc.candidate_noise if cfg.candidate_noise is None else cfg.candidate_noise
        if noise < 0:
            raise ConfigError("--candidate-noise must be >= 0")
        safety = {"mode": sc.mode, "gamma": sc.gamma, "pessimism": sc.pessimism,
                  "threshold": sc.threshold if cfg.threshold is None else cfg.threshold,
                  "candidates": sc.candidates if cfg.candidates is None else cfg.candidates,
                  "candidate_noise": noise, "fallback": sc.fallback}
        norm = teacher.norm
        cost = DeployCost(ObsNorm(norm.mean, norm.std, norm.clip), agent.cost_critic.q,
                          sc.pessimism)
    meta = artifact_meta(env, policy, safety, {
        "run": str(run), "checkpoint_env_steps": state["env_steps"],
        "policy": which, "safety_mode": train_cfg.safety})
    out = export_artifact(cfg.out or run / "export", policy, meta, cost=cost)
    files = ", ".join(sorted(p.name for p in out.iterdir()))
    Console().print(f"exported {which} policy to {out}: {files}")


def _is_pixel_student(path: Path) -> bool:
    """``path`` is a file ``robot-rl distill-pixels`` wrote."""
    from robot_rl.vision.dagger import PIXEL_STUDENT_FORMAT

    if not path.is_file():
        return False
    try:
        state = torch.load(path, map_location="cpu", weights_only=False)
    except Exception:
        return False
    return isinstance(state, dict) and state.get("format") == PIXEL_STUDENT_FORMAT


def _export_pixel_student(cfg: ExportConfig) -> None:
    """The pixel student's artifact: its graph takes the images next to the observation."""
    from robot_rl.vision.export import export_pixel_student

    if cfg.policy == "teacher":
        raise ConfigError(f"{cfg.run} is a pixel policy; it has no teacher in it (a "
                          "distill-pixels teacher is exported from its own run)")
    out = export_pixel_student(cfg.run, cfg.out or cfg.run.with_suffix(""))
    files = ", ".join(sorted(p.name for p in out.iterdir()))
    Console().print(f"exported pixel student {cfg.run} to {out}: {files}")


def _flow_run(kind: str, ckpt: Path) -> Path:
    """The bc run a chunked run's policy comes from: itself, or the flow a dsrl or residual
    run learnt on (its saved config's ``policy``; no agent or env is built)."""
    if kind == "bc":
        return ckpt
    from robot_rl.checkpoint import load_checkpoint
    from robot_rl.finetune.dsrl import DSRLConfig
    from robot_rl.finetune.residual import ResidualConfig

    config = DSRLConfig if kind == "dsrl" else ResidualConfig
    return Path(config.from_saved(load_checkpoint(ckpt)["config"]).policy)


def _export_chunked(cfg: ExportConfig, kind: str, ckpt: Path, run: Path) -> None:
    """Export a bc run's chunked policy, or a dsrl run's (its noise chosen by the trained
    actor inside the graph), or with ``--policy student`` the run's one-step student
    (robot-rl distill). A DSRL cost critic scores noise, not actions: the artifact has no
    gate (the shield still guards every action)."""
    from robot_rl.bc import bc_env, load_bc_policy
    from robot_rl.distill import teacher_policy
    from robot_rl.export.artifact import artifact_meta, chunk_meta, export_artifact
    from robot_rl.export.modules import ChunkGraph, ResidualGraph
    from robot_rl.export.onestep_graph import noisy_chunk_graph

    residual = None
    if cfg.policy == "student":
        from robot_rl.finetune.onestep import load_onestep

        student, record = load_onestep(run)
        _, _, state = load_bc_policy(_flow_run(kind, ckpt))
        module: Any = noisy_chunk_graph(student) if student.kind == "flow" else \
            ChunkGraph(student)
        provenance = {"run": str(run), "policy": "student",
                      "student": f"one-step {student.kind} (DAgger from the run's policy)",
                      "teacher_run": record["teacher_run"],
                      "teacher_success": record["teacher_success"],
                      "student_success": record["student_success"]}
        policy, ensemble = student, None
    elif kind == "bc":
        policy, bc_cfg, state = load_bc_policy(ckpt)
        module = noisy_chunk_graph(policy) if policy.kind == "flow" else ChunkGraph(policy)
        provenance = {"run": str(run), "grad_steps": state["grad_steps"],
                      "policy": bc_cfg.algo, "data": state.get("data")}
        ensemble = bc_cfg.ensemble
    elif kind == "residual":
        from robot_rl.finetune.residual import load_residual

        agent, res_cfg, res_env = load_residual(ckpt, 1, 0)
        policy, bc_cfg, state = load_bc_policy(res_cfg.policy)
        module = ChunkGraph(policy)  # the flow with zero noise, as the residual learnt on it
        every = res_env.every  # as the run's env held each correction
        residual = ResidualGraph(teacher_policy(agent), res_cfg.scale, every)
        provenance = {"run": str(run), "policy": "residual", "flow_policy": str(res_cfg.policy),
                      "scale": res_cfg.scale, "every": every}
        ensemble = None
    else:
        from robot_rl.finetune.dsrl import load_dsrl

        agent, dsrl_cfg, _ = load_dsrl(ckpt, 1, 0)
        policy, bc_cfg, state = load_bc_policy(dsrl_cfg.policy)
        steps = bc_cfg.policy.executed if dsrl_cfg.noise == "executed" else policy.horizon
        module = ChunkGraph(policy, teacher_policy(agent), dsrl_cfg.noise_scale, steps)
        provenance = {"run": str(run), "policy": "dsrl", "flow_policy": str(dsrl_cfg.policy),
                      "noise_scale": dsrl_cfg.noise_scale}
        ensemble = bc_cfg.ensemble
    env = bc_env(state, run, "an exported policy", 1, 0)
    chunk = chunk_meta(policy.cfg, policy.kind, not isinstance(module, ChunkGraph), ensemble)
    meta = artifact_meta(env, policy, None, provenance, chunk=chunk)
    out = export_artifact(cfg.out or run / "export", module, meta, residual=residual)
    files = ", ".join(sorted(p.name for p in out.iterdir()))
    what = "one-step student" if cfg.policy == "student" else "chunked policy"
    Console().print(f"exported the {kind} run's {what} (H={policy.horizon}, execute "
                    f"{policy.cfg.executed}) to {out}: {files}")
