"""``robot-rl eval``, ``distill`` and ``distill-pixels``: what they print. Training
commands belong to their kinds (``robot_rl.kinds``), ``robot-rl export`` is in
``cli/export.py``.

    robot-rl eval runs/reach__sac__0__20261121-101500 --episodes 50 --video eval.mp4
    robot-rl distill runs/reach__sac__0__20261121-101500
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from robot_rl.kinds.eval_config import EvalConfig
from robot_rl.kinds.evaluation import EvalReport, artifact_policy, evaluate_path

__all__ = ["EvalConfig", "EvalReport", "artifact_policy", "distill_cmd", "distill_pixels_cmd",
           "eval_cmd", "evaluate_path"]


def eval_cmd(cfg: EvalConfig) -> None:
    console = Console()
    report = evaluate_path(cfg, console)
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


def distill_cmd(cfg: Any) -> None:
    from robot_rl.kinds import load_run, run_kind

    console = Console()
    run = load_run(cfg.run)
    report = run_kind(run).distill(run, cfg, console)
    _print_distilled(console, "distilled student", report, f"dr {cfg.dagger.dr}")


def distill_pixels_cmd(cfg: Any) -> None:
    from robot_rl.distill.pixels import distill_pixels

    console = Console()
    _, report = distill_pixels(cfg, console)
    rows = [("wall clock", f"{report.seconds:.0f} s")]
    if report.state_policy is not None:
        rows.append(("action MLP on the true state", f"{report.state_policy.success_rate:.1%}"))
    rows += [(f"estimate RMS error: {t} (closed loop)", f"{v:.4f}")
             for t, v in report.estimate_rmse.items()]
    _print_distilled(console, "pixel student", report,
                     f"dr {cfg.dagger.dr}, visual {cfg.inputs.visual}", rows)


def _print_distilled(console: Console, what: str, report: Any, conditions: str,
                     extra: list[tuple[str, str]] | None = None) -> None:
    """A distillation's report table, then where the student is (a line of its own, never
    wrapped, so it can be copied) and a warning where the teacher never succeeded."""
    console.print(_distill_table(what, report, conditions, extra))
    console.print(f"{what}: {report.path}", soft_wrap=True, highlight=False)
    if report.teacher is not None and report.teacher.success_rate == 0:
        console.print("[bold yellow]warning[/]: the teacher never succeeded here, so the "
                      "student learned to copy a policy that fails; train the teacher on "
                      "(robot-rl train ... --resume RUN) before distilling it")


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
        table.add_row("student / teacher", "-" if report.teacher.success_rate == 0
                      else f"{report.success_ratio:.3f}")
    return table
