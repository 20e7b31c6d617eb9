"""Evaluate what ``robot-rl eval`` takes: a run of any kind, one of its kept checkpoints,
its student, or an exported artifact (through ONNX, as deploy runs it).

    report = evaluate_path(EvalConfig(path=Path("runs/push__residual__0__<time>"),
                                      episodes=200))
    report.result.success_rate
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
from rich.console import Console

from robot_rl.errors import ConfigError
from robot_rl.kinds import load_run, run_kind
from robot_rl.kinds.base import EvalOptions, Evaluation
from robot_rl.kinds.eval_config import EvalConfig
from robot_rl.work_progress import WorkProgress


@dataclasses.dataclass
class EvalReport:
    """What ``evaluate_path`` measured: the episodes' summary and what was written."""

    result: Any
    """The ``EvalResult``."""
    label: str
    """What was evaluated (task / kind)."""
    video_frames: int | None = None
    rerun: str | None = None


def evaluate_path(cfg: EvalConfig, console: Console | None = None) -> EvalReport:
    """Evaluate a run, checkpoint, student or artifact as ``robot-rl eval`` does (the
    decision that ships: an artifact's own, a run's as its artifact makes it); the episodes'
    progress goes to ``console`` (default: stderr)."""
    from robot_rl.evaluate import evaluate
    from robot_rl.sim.render import EnvRenderer, VideoWriter

    if cfg.episodes < 1 or cfg.num_envs < 1:
        raise ConfigError("--episodes and --num-envs must be >= 1")
    if cfg.min_success is not None and not 0.0 <= cfg.min_success <= 1.0:
        raise ConfigError(f"--min-success is a rate in [0, 1], got {cfg.min_success}")
    num_envs = min(cfg.num_envs, cfg.episodes)
    if (cfg.path / "policy.json").is_file():
        env, policy_fn, label, loaded = artifact_policy(cfg)

        def episodes(n: int, **kw: Any) -> Any:
            return evaluate(policy_fn, env, n, gate_rejected=policy_fn.rejected,
                            episode_start=lambda done: loaded.reset(done.numpy()), **kw)

        ev = Evaluation(env, label, episodes)
    else:
        run = load_run(cfg.path)
        ev = run_kind(run).evaluation(run, EvalOptions(num_envs, cfg.seed, cfg.dr, cfg.gate,
                                                       cfg.student))
    sim_env = getattr(ev.env, "env", ev.env)  # a wrapper's own simulation (dsrl, residual)
    renderer = writer = None
    if cfg.video is not None:  # a DSRL env's frames: one per executed chunk
        renderer = EnvRenderer(sim_env, cfg.video_envs, camera=cfg.camera,
                               width=cfg.width, height=cfg.height)
        writer = VideoWriter.of_steps(cfg.video, ev.env.control_dt)
    view = None
    if cfg.view:
        from robot_rl.sim.view import EnvView

        view = EnvView(sim_env, title=f"robot-rl eval {ev.label}")
        view.watch(realtime=True)
    logger = None
    if cfg.rerun is not None:
        from robot_rl.data.rerun_log import EnvRerunLog, rerun_recording

        rec = rerun_recording(f"robot-rl eval {ev.label}")
        rec.save(str(cfg.rerun))
        logger = EnvRerunLog(rec, sim_env)
        logger.watch()
    work = WorkProgress(console or Console(stderr=True), f"eval {ev.label}", cfg.episodes,
                        "episodes")
    try:
        with work:
            result = ev.episodes(cfg.episodes, seed=cfg.seed, video=writer, renderer=renderer,
                                 on_episodes=lambda n, rate: work.update(
                                     n, f"success {rate:.0%}"))
    finally:
        if writer is not None:
            writer.close()
        if renderer is not None:
            renderer.close()
        if view is not None:
            view.close()
        if logger is not None:
            logger.close()
    return EvalReport(result, ev.label, None if writer is None else writer.frames,
                      None if logger is None else f"{cfg.rerun} ({logger.steps} steps of env "
                                                   f"0, {logger.episode} episodes)")


def artifact_policy(cfg: EvalConfig, env_overrides: dict[str, Any] | None = None,
                    env: Any = None) -> tuple[Any, Any, str, Any]:
    """Env and batched policy function of an exported artifact (evaluated through ONNX);
    ``env_overrides``: task config fields of the env to replace (``identified``); ``env``:
    a BatchedEnv of the artifact's task to evaluate on instead (a held-out arm's)."""
    import numpy as np

    from robot_rl.export import load_policy
    from robot_rl.sim import make_env

    policy = load_policy(cfg.path)
    meta = policy.meta
    if env is None:
        env = make_env(artifact_task(meta), min(cfg.num_envs, cfg.episodes), seed=cfg.seed,
                       dr=cfg.dr, **dict(env_overrides or {}))
    cols = _artifact_columns(env.obs_layout, meta["observation"]["layout"])
    if cols is None or env.act_dim != policy.act_dim or \
            list(env.robot.joint_names) != policy.joint_names:
        raise ConfigError(f"artifact {cfg.path} does not fit task {meta['task']!r} on robot "
                          f"{env.robot.name!r} (observation terms, action dims or joint names "
                          "differ)")
    gate = policy.has_cost_critic if cfg.gate is None else cfg.gate

    rejected = torch.zeros(env.num_envs, dtype=torch.bool)

    def act(obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        x = obs[:, cols].numpy()
        images = {k: v.numpy() for k, v in env.last_images.items()} if policy.images else None
        actions = policy(x, images)  # a chunked policy: each env's next action of its chunk
        if not gate:
            return torch.from_numpy(actions), None
        out = [policy.gate(o, a) for o, a in zip(x, actions, strict=True)]
        rejected[:] = torch.tensor([r for _, _, r in out])
        hold = torch.tensor([h for _, h, _ in out])
        return torch.from_numpy(np.stack([a for a, _, _ in out])), hold

    act.rejected = lambda: rejected  # type: ignore[attr-defined]  # the gate's last rejections

    return env, act, f"{meta['task']} / artifact {cfg.path}", policy


def artifact_task(meta: dict[str, Any]) -> Any:
    """The task config an artifact's ``policy.json`` names: the env of its training
    (episode length, randomization, cameras; the run's own evaluation's episodes), or, for
    an artifact exported before that was recorded, its task's name."""
    if not meta.get("env"):
        return meta["task"]
    from robot_rl.config_io import from_dict
    from robot_rl.sim.tasks.config import TaskConfig

    return from_dict(TaskConfig, meta["env"])


def _artifact_columns(env_layout: list[tuple[str, int]], layout: list[dict[str, Any]]
                      ) -> torch.Tensor | None:
    """Columns of the env's observation that make the artifact's (its terms, in its order;
    a pixel student sees a subset), or None when some term is missing or of another width."""
    from robot_rl.sim.vec_env import layout_columns, term_slices

    at = term_slices(env_layout)
    names = [str(t["name"]) for t in layout]
    if any(n not in at or at[n].stop - at[n].start != int(t["width"])
           for n, t in zip(names, layout, strict=True)):
        return None
    return torch.tensor(layout_columns(env_layout, names), dtype=torch.long)
