"""benchmarks/demo_busy.py reads a ``make demo`` log: the figures it reports come from the
right lines (the artifact's success from its check, not the push rollout's table after it)."""

from __future__ import annotations

import pytest

from benchmarks.demo_busy import parse_demo_log

LOG = """\
[   100,016/400,000 env steps,    155 s]  success 100.0%  return   114.31
stopped: target success 95% reached. 100,016 env steps in 155 s; last eval
success 100%, episode cost 0.00; training cost 0.
checkpoint: runs/demo/reach/checkpoints/latest.pt
reach / actor: 32 episodes (dr as trained)
│ success rate                          │                                96.9% │
│ student / teacher            │    0.968 │
reach / artifact runs/demo/reach/export: 32 episodes (dr default)
│ success rate                            │ 93.8% │
success 93.8% is below the required 95%
│ success rate                  │                                   100% │
"""


def test_a_demo_log_gives_each_figure_from_its_own_line():
    got = parse_demo_log(LOG)
    assert got == pytest.approx({"stop": "target success 95% reached", "env_steps": 100_016,
                                 "train_s": 155, "train_success": 1.0,
                                 "teacher_success": 0.969, "student_over_teacher": 0.968,
                                 "artifact_success": 0.938})
    assert parse_demo_log("make: *** [demo] Error 2") == dict.fromkeys(got)


def test_the_makefiles_demo_recipe_is_the_benchmarks():
    from pathlib import Path

    from benchmarks.sac_reach import demo_env_flags, demo_flags

    text = (Path(__file__).resolve().parents[2] / "Makefile").read_text()
    block = text.split("DEMO_SAC :=", 1)[1]
    lines = []
    for line in block.splitlines():
        lines.append(line.rstrip("\\").strip())
        if not line.endswith("\\"):
            break
    assert _by_flag(" ".join(lines).split()) == _by_flag(demo_flags())
    env = text.split("DEMO_ENV :=", 1)[1].splitlines()[0].split()
    assert _by_flag(env) == _by_flag(demo_env_flags())


def _by_flag(args: list[str]) -> dict[str, list[float]]:
    """{flag: its values as numbers} of a flag list (1e-3 and 0.001 alike)."""
    out: dict[str, list[float]] = {}
    for a in args:
        if a.startswith("--"):
            key = a
            out[key] = []
        else:
            out[key].append(float(a))
    return out
