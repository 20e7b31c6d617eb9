"""The deploy runtime's exit summary as a table (``robot-rl deploy`` and
``robot-rl finetune-robot`` print it)."""

from __future__ import annotations

import math
from typing import Any

from rich.console import Console
from rich.table import Table


def print_summary(console: Console, s: dict[str, Any]) -> None:
    """The runtime's exit summary as a table."""
    table = Table(title="deploy summary", show_header=False, box=None)
    table.add_column(style="bold")
    table.add_column()

    def pct(key: str) -> str:
        p50, p99, mx = s.get(key, (math.nan,) * 3)
        return f"p50 {p50:.1f}  p99 {p99:.1f}  max {mx:.1f} µs"

    table.add_row("ticks / policy steps", f"{s['ticks']} / {s['policy_steps']} "
                  f"({s['rate_hz']:g} Hz / {s['policy_hz']:g} Hz)")
    if "period_error_us" in s:
        table.add_row("period error", pct("period_error_us"))
        table.add_row("overruns / skipped ticks", f"{s['overruns']} / {s.get('skipped_ticks', 0)}")
    table.add_row("tick compute", pct("compute_us"))
    table.add_row("policy inference", pct("inference_us"))
    if s.get("gate"):
        table.add_row("gate", pct("gate_us") + f"  rejections {s['gate_rejections']}, "
                      f"holds {s['gate_holds']}")
    table.add_row("hold ticks", str(s["hold_ticks"]))
    table.add_row("policy steps waited for", str(s.get("policy_waits", 0)))
    table.add_row("watchdog trips / e-stops", f"{s['watchdog_trips']} / {s['estops']}")
    table.add_row("bad readings dropped", str(s["bad_readings"]))
    shield = ", ".join(f"{k} {v}" for k, v in s["shield"].items() if v) or "none"
    table.add_row("shield interventions", shield)
    lag = s.get("sense_to_act_ms")
    if lag and s["policy_steps"] and all(math.isfinite(x) for x in lag):
        p50, p99, mx = lag
        table.add_row("reading to command", f"p50 {p50:.1f}  p99 {p99:.1f}  max {mx:.1f} ms "
                      f"(train for it plus the arm's actuation delay: --env.dr.action-delay)")
    ages = s.get("frame_age_ms")
    if ages and s["policy_steps"] and all(math.isfinite(x) for x in ages):  # saw cameras
        p50, p99, mx = ages
        table.add_row("camera frame age", f"p50 {p50:.1f}  p99 {p99:.1f}  max {mx:.1f} ms; "
                      f"holds for stale frames {s['camera_holds']}")
    if "episodes" in s:
        n = len(s["episodes"])
        table.add_row("episode success (at the end)",
                      f"{round(s['episode_success_rate'] * n)}/{n} "
                      f"({s['episode_success_rate']:.0%})")
    else:
        table.add_row("task success (last step)", str(s["success"]))
    if "ee_goal_distance_m" in s:
        table.add_row("end effector to goal", f"{s['ee_goal_distance_m'] * 100:.1f} cm")
    console.print(table)
