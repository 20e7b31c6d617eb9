"""``robot-rl train`` (and finetune, dsrl, residual, train-pixels), ``bc``, ``bc-filtered``,
``eval`` and ``distill``; ``robot-rl export`` is in ``cli/export.py``.

    robot-rl train --task reach --safety gate --time-budget 300
    robot-rl eval runs/reach__sac__0__20261121-101500 --episodes 50 --video eval.mp4
    robot-rl distill runs/reach__sac__0__20261121-101500
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Any

import torch
import tyro
from rich.console import Console
from rich.table import Table

from robot_rl.errors import ConfigError
from robot_rl.sim.randomization import DRPreset


@dataclasses.dataclass(kw_only=True)
class EvalConfig:
    """Evaluate a run, checkpoint, student or exported artifact: success, cost, shield.

    Example: robot-rl eval runs/reach__sac__0__20261121-101500 --episodes 50 --video eval.mp4
    """

    path: Annotated[Path, tyro.conf.Positional]
    """Run directory (robot-rl train, finetune or bc), checkpoint file (.pt), or exported
    artifact folder (with policy.json)."""
    episodes: int = 32
    """Episodes to run."""
    num_envs: int = 16
    """Parallel envs."""
    dr: DRPreset | None = None
    """Domain randomization preset (default: as trained)."""
    student: bool = False
    """Evaluate the run's distilled student instead of its policy: student.pt of a train
    or finetune run, onestep.pt of a bc, dsrl or residual run (``robot-rl distill``)."""
    gate: bool | None = None
    """Use the safety-critic gate (default: as trained; artifacts: when they have a critic)."""
    video: Path | None = None
    """Write an mp4 of the evaluation here (25 frames a second at most: at 50 Hz every second
    control step)."""
    video_envs: tuple[int, ...] = (0,)
    """Env indices shown side by side in the video."""
    camera: str = "corner"
    """Scene camera of the video."""
    width: int = 480
    """Video width per env [px]."""
    height: int = 360
    """Video height [px]."""
    seed: int = 100
    """Seed of the evaluation episodes."""
    min_success: float | None = None
    """Exit with status 1 when the success rate is below this (a check for scripts and CI;
    make demo checks its artifact with 0.95)."""
    view: bool = False
    """Watch env 0 in MuJoCo's viewer (with the shield's workspace box), the episodes paced
    at the control rate (needs a display: a desktop or xvfb-run)."""
    rerun: Path | None = None
    """Log env 0's episodes into this Rerun .rrd file (open it: rerun FILE): joint states,
    commanded and applied actions, reward and cost terms, success, and each shield layer's
    interventions, step by step."""


def train(cfg: Any) -> None:
    """``robot-rl train``, ``robot-rl finetune`` (a FinetuneConfig: from demonstrations),
    ``robot-rl dsrl`` (a DSRLConfig: a flow policy's noise) and ``robot-rl train-pixels``
    (a PixelTrainConfig: asymmetric SAC on cameras)."""
    from robot_rl.finetune import DSRLConfig, DSRLRunner, FinetuneConfig, FinetuneRunner
    from robot_rl.finetune.residual import ResidualConfig, ResidualRunner
    from robot_rl.plot import plot_curves
    from robot_rl.runner import Runner
    from robot_rl.vision.pixel_runner import PIXEL_POLICY, PixelRunner, PixelTrainConfig

    if getattr(cfg, "ray", None) is not None:
        from robot_rl.cli.dist import train_on_ray_cmd

        train_on_ray_cmd(cfg)
        return
    if isinstance(cfg, PixelTrainConfig):
        runner: Runner = PixelRunner(cfg)
        label = f"{runner.cfg.task} / pixel sac" + (" from a student" if cfg.student else "")
    elif isinstance(cfg, FinetuneConfig):
        runner = FinetuneRunner(cfg)
        label = f"{cfg.task} / {cfg.method}"
    elif isinstance(cfg, DSRLConfig):
        runner = DSRLRunner(cfg)
        label = f"{runner.cfg.task} / dsrl"
    elif isinstance(cfg, ResidualConfig):
        runner = ResidualRunner(cfg)
        label = f"{runner.cfg.task} / residual"
    else:
        runner = Runner(cfg)
        label = f"{runner.cfg.task} / safety {runner.cfg.safety}"
    history = runner.train()
    png = plot_curves(runner.run_dir / "learning_curve.png", [(label, history)],
                      title=runner.run_dir.name)
    Console().print(f"learning curve: {png}")
    if isinstance(runner, PixelRunner):
        Console().print(f"pixel policy (export it with robot-rl export {runner.run_dir}): "
                        f"{runner.run_dir / PIXEL_POLICY}")


def bc_cmd(cfg: Any) -> None:
    """``robot-rl bc``: behaviour cloning, then the learning curve."""
    from robot_rl.bc import BCRunner
    from robot_rl.plot import plot_action_error, plot_curves

    runner = BCRunner(cfg)
    history = runner.train()
    label = f"{runner.demos.task or cfg.demos.name} / {runner.cfg.algo}"
    png = None
    if curve := [h for h in history if h["success_rate"] == h["success_rate"]]:  # evaluated
        png = plot_curves(runner.run_dir / "learning_curve.png", [(label, curve)],
                          title=runner.run_dir.name)
    elif curve := [h for h in history if h["action_rmse"] == h["action_rmse"]]:
        png = plot_action_error(runner.run_dir / "learning_curve.png", label, curve,
                                title=runner.run_dir.name)
    if png is not None:
        Console().print(f"learning curve: {png}")


def filtered_bc_cmd(cfg: Any) -> None:
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


@dataclasses.dataclass
class EvalReport:
    """What ``evaluate_path`` measured: the episodes' summary and what was written."""

    result: Any
    """The ``EvalResult``."""
    label: str
    """What was evaluated (task / kind)."""
    video_frames: int | None = None
    rerun: str | None = None


def evaluate_path(cfg: EvalConfig) -> EvalReport:
    """Evaluate a run, checkpoint, student or artifact as ``robot-rl eval`` does (the
    decision that ships: an artifact's own, a run's as its artifact makes it)."""
    from robot_rl.checkpoint import load_checkpoint
    from robot_rl.evaluate import evaluate, evaluate_agent
    from robot_rl.runner import load_agent, make_train_env
    from robot_rl.sim.render import EnvRenderer, VideoWriter

    if cfg.episodes < 1 or cfg.num_envs < 1:
        raise ConfigError("--episodes and --num-envs must be >= 1")
    if cfg.min_success is not None and not 0.0 <= cfg.min_success <= 1.0:
        raise ConfigError(f"--min-success is a rate in [0, 1], got {cfg.min_success}")
    artifact = (cfg.path / "policy.json").is_file()
    state = None if artifact else load_checkpoint(cfg.path)
    kind = "artifact" if state is None else str(state.get("kind", "sac"))
    bc_state = state if kind == "bc" else None
    if artifact:
        env, policy_fn, label, loaded = artifact_policy(cfg)
    elif kind == "pixel_sac":
        from robot_rl.vision.pixel_runner import evaluate_pixel_agent, load_pixel_run

        if cfg.dr is not None:
            raise ConfigError("--dr: a train-pixels run is evaluated as trained")
        pix_agent, pix_cfg, env, cols = load_pixel_run(cfg.path, min(cfg.num_envs,
                                                                     cfg.episodes), cfg.seed)
        label = f"{pix_cfg.task} / pixel sac (cameras {', '.join(pix_cfg.cameras)})"
    elif kind == "dsrl":
        from robot_rl.finetune.dsrl import load_dsrl

        agent, dsrl_cfg, env = load_dsrl(cfg.path, min(cfg.num_envs, cfg.episodes), cfg.seed,
                                         dr=cfg.dr)
        label = f"{dsrl_cfg.task} / dsrl over {dsrl_cfg.policy}"
    elif kind == "residual":
        from robot_rl.finetune.residual import load_residual

        agent, res_cfg, env = load_residual(cfg.path, min(cfg.num_envs, cfg.episodes),
                                            cfg.seed, dr=cfg.dr)
        label = f"{res_cfg.task} / residual on {res_cfg.policy}"
    elif bc_state is not None:
        from robot_rl.bc import bc_env, load_bc_policy

        chunked, bc_cfg, _ = load_bc_policy(cfg.path, bc_state)
        env = bc_env(bc_state, cfg.path, "evaluation", min(cfg.num_envs, cfg.episodes),
                     cfg.seed, dr=cfg.dr)
        label = f"{bc_state['task']} / {bc_cfg.algo}"
    else:
        agent, train_cfg, _ = load_agent(cfg.path)
        env = make_train_env(train_cfg, min(cfg.num_envs, cfg.episodes), cfg.seed,
                             dr=cfg.dr)
        label = f"{train_cfg.task} / {'student' if cfg.student else 'actor'}"
    onestep = None  # a chunked run's one-step student, on the task's own env
    if cfg.student and kind in ("bc", "dsrl", "residual"):
        from robot_rl.checkpoint import resolve_checkpoint, run_dir_of
        from robot_rl.finetune.onestep import load_onestep

        onestep, _ = load_onestep(run_dir_of(resolve_checkpoint(cfg.path)))
        env = getattr(env, "env", env)  # a dsrl or residual env's own: one action per step
        label = f"{label}: its one-step student"
    renderer = writer = None
    if cfg.video is not None:  # a DSRL env's frames: one per executed chunk
        renderer = EnvRenderer(getattr(env, "env", env), cfg.video_envs, camera=cfg.camera,
                               width=cfg.width, height=cfg.height)
        writer = VideoWriter.of_steps(cfg.video, env.control_dt)
    view = None
    if cfg.view:  # the simulation's own env (a DSRL env steps it once per action)
        from robot_rl.sim.view import EnvView

        view = EnvView(getattr(env, "env", env), title=f"robot-rl eval {label}")
        view.watch(realtime=True)
    logger = None
    if cfg.rerun is not None:
        from robot_rl.data.rerun_log import EnvRerunLog, rerun_recording

        rec = rerun_recording(f"robot-rl eval {label}")
        rec.save(str(cfg.rerun))
        logger = EnvRerunLog(rec, getattr(env, "env", env))
        logger.watch()
    try:
        if artifact:
            result = evaluate(policy_fn, env, cfg.episodes, seed=cfg.seed, video=writer,
                              renderer=renderer, gate_rejected=policy_fn.rejected,
                              episode_start=lambda done: loaded.reset(done.numpy()))
        elif onestep is not None:
            from robot_rl.bc import evaluate_chunked

            result = evaluate_chunked(onestep, env, cfg.episodes, seed=cfg.seed, video=writer,
                                      renderer=renderer)
        elif bc_state is not None:
            from robot_rl.bc import evaluate_chunked

            result = evaluate_chunked(chunked, env, cfg.episodes, seed=cfg.seed,
                                      ensemble=bc_cfg.ensemble, video=writer,
                                      renderer=renderer)
        elif kind == "pixel_sac":
            result = evaluate_pixel_agent(pix_agent, env, cfg.episodes, cols, seed=cfg.seed,
                                          gate=cfg.gate, video=writer, renderer=renderer)
        elif cfg.student:
            from robot_rl.checkpoint import resolve_checkpoint, run_dir_of
            from robot_rl.distill import load_student
            from robot_rl.evaluate import module_policy

            student = load_student(run_dir_of(resolve_checkpoint(cfg.path)))
            result = evaluate(module_policy(student), env, cfg.episodes, seed=cfg.seed,
                              video=writer, renderer=renderer)
        elif kind in ("dsrl", "residual"):  # ungated by default, as their artifacts decide
            result = evaluate_agent(agent, env, cfg.episodes, seed=cfg.seed,
                                    gate=bool(cfg.gate), video=writer, renderer=renderer)
        else:
            if cfg.gate is not None and cfg.gate != agent.safety_cfg.gate:
                agent.safety_cfg = dataclasses.replace(
                    agent.safety_cfg, mode="gate" if cfg.gate else "off")
            result = evaluate_agent(agent, env, cfg.episodes, seed=cfg.seed, video=writer,
                                    renderer=renderer)
    finally:
        if writer is not None:
            writer.close()
        if renderer is not None:
            renderer.close()
        if view is not None:
            view.close()
        if logger is not None:
            logger.close()
    return EvalReport(result, label, None if writer is None else writer.frames,
                      None if logger is None else f"{cfg.rerun} ({logger.steps} steps of env "
                                                   f"0, {logger.episode} episodes)")


def eval_cmd(cfg: EvalConfig) -> None:
    console = Console()
    report = evaluate_path(cfg)
    result, label = report.result, report.label

    table = Table(title=f"{label}: {result.episodes} episodes (dr {cfg.dr or 'as trained'})",
                  title_justify="left")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_row("success rate", f"{result.success_rate:.1%}")
    table.add_row("return (mean)", f"{result.return_mean:.2f}")
    table.add_row("episode cost (mean)", f"{result.cost_mean:.3f}")
    table.add_row("episode length (mean)", f"{result.length_mean:.1f}")
    table.add_row("gate rejections / episode", f"{result.gate_rejections:.2f}")
    for name, v in result.interventions.items():
        table.add_row(f"safety/{name} (steps / episode)", f"{v:.2f}")
    if report.video_frames is not None:
        table.add_row("video", f"{cfg.video} ({report.video_frames} frames)")
    if report.rerun is not None:
        table.add_row("rerun", report.rerun)
    console.print(table)
    if cfg.min_success is not None:
        met = result.success_rate >= cfg.min_success
        console.print(f"success {result.success_rate:.1%} "
                      f"{'meets' if met else '[bold red]is below[/]'} the required "
                      f"{cfg.min_success:.0%}")
        if not met:
            raise SystemExit(1)


def artifact_policy(cfg: EvalConfig, env_overrides: dict[str, Any] | None = None
                    ) -> tuple[Any, Any, str, Any]:
    """Env and batched policy function of an exported artifact (evaluated through ONNX);
    ``env_overrides``: task config fields of the env to replace (``identified``)."""
    import numpy as np

    from robot_rl.export import load_policy
    from robot_rl.sim import make_env

    policy = load_policy(cfg.path)
    meta = policy.meta
    overrides = dict(env_overrides or {})
    task: Any = meta["task"]
    if meta.get("env"):  # the env of its training (episode length, randomization, cameras):
        from robot_rl.config_io import from_dict  # the run's own evaluation's episodes
        from robot_rl.sim.tasks import TaskConfig

        task = from_dict(TaskConfig, meta["env"])
    env = make_env(task, min(cfg.num_envs, cfg.episodes), seed=cfg.seed, dr=cfg.dr,
                   **overrides)
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


def distill_cmd(cfg: Any) -> None:
    from robot_rl.checkpoint import checkpoint_kind, resolve_checkpoint
    from robot_rl.distill import distill

    console = Console()
    if checkpoint_kind(resolve_checkpoint(cfg.run)) in ("bc", "dsrl", "residual"):
        from robot_rl.finetune.onestep import distill_chunked

        _, report = distill_chunked(cfg, console)
    else:
        _, report = distill(cfg, console)
    console.print(_distill_table(f"distilled student: {report.path}", report, f"dr {cfg.dr}"))


def distill_pixels_cmd(cfg: Any) -> None:
    from robot_rl.vision.dagger import distill_pixels

    console = Console()
    _, report = distill_pixels(cfg, console)
    rows = [("wall clock", f"{report.seconds:.0f} s")]
    if report.state_policy is not None:
        rows.append(("action MLP on the true state", f"{report.state_policy.success_rate:.1%}"))
    rows += [(f"estimate RMS error: {t} (closed loop)", f"{v:.4f}")
             for t, v in report.estimate_rmse.items()]
    console.print(_distill_table(f"pixel student: {report.path}", report,
                                 f"dr {cfg.dr}, visual {cfg.visual}", rows))


def _distill_table(title: str, report: Any, conditions: str,
                   extra: list[tuple[str, str]] | None = None) -> Table:
    """A distillation's report: samples, loss, teacher and student success."""
    table = Table(title=title, title_justify="left")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_row("DAgger samples", f"{report.samples:,}")
    table.add_row("final MSE", f"{report.final_loss:.2e}")
    for row in extra or []:
        table.add_row(*row)
    if report.teacher is not None and report.student is not None:
        table.add_row(f"teacher success ({conditions})", f"{report.teacher.success_rate:.1%}")
        table.add_row(f"student success ({conditions})", f"{report.student.success_rate:.1%}")
        table.add_row("student / teacher", f"{report.success_ratio:.3f}")
    return table
