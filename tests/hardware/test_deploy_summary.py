"""robot-rl deploy's exit summary: camera frame ages only for a policy that saw cameras, the
reading-to-command delay once measured."""

from __future__ import annotations

from rich.console import Console

from robot_rl.hardware.deploy_stats import DeployStats
from robot_rl.hardware.summary import print_summary


def _printed(stats: DeployStats) -> str:
    summary = stats.summary()
    summary.update(mode="run", watchdog_trips=0, estops=0, success=True, rate_hz=500.0,
                   policy_hz=50.0, gate=False)
    console = Console(record=True, width=120)
    print_summary(console, summary)
    return console.export_text()


def test_frame_age_is_shown_only_where_frames_were_seen() -> None:
    stats = DeployStats(ticks=20, policy_steps=2)
    for x in (1e-4, 2e-4):
        stats.compute.add(x)
        stats.inference.add(x)
    text = _printed(stats)
    assert "camera frame age" not in text and "nan" not in text.lower()
    stats.frame_age.add(0.004)
    stats.frame_age.add(0.006)
    assert "camera frame age" in _printed(stats)


def test_the_delay_from_reading_to_command_is_shown_once_measured() -> None:
    stats = DeployStats(ticks=20, policy_steps=2)
    assert "reading to command" not in _printed(stats)
    stats.sense_to_act.add(0.004)
    assert "reading to command" in _printed(stats) and "p50 4.0" in _printed(stats)
