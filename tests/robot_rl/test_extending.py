"""docs/extending.md runs as written: its task, its learner kind (trained, evaluated and
exported through the command line), its robots (an MJCF and a URDF) and its gymnasium env.

Each ``<!-- example: NAME -->`` block of the page is run here; a block marked ``(file F)``
is written to the module file F that the next block imports."""

from __future__ import annotations

import re
import runpy
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[2] / "docs" / "extending.md"


def _examples() -> dict[str, str]:
    found = re.findall(r"<!-- example: ([^>]*?) -->\n```python\n(.*?)```", PAGE.read_text(),
                       re.S)
    return dict(found)


def _run(code: str, where: Path) -> None:
    script = where / "example.py"
    script.write_text(code)
    runpy.run_path(str(script), run_name="__example__")


@pytest.fixture
def restore_registries() -> Iterator[None]:
    """The registries as they were before the example (its task, kind and robot added)."""
    from robot_rl import kinds, robots
    from robot_rl.sim import tasks

    registries = (kinds.KINDS, robots._ROBOTS, tasks._TASKS, tasks._CONFIGS,
                  tasks.CONFIG_CLASSES)
    saved = tuple(dict(r) for r in registries)
    yield
    for registry, before in zip(registries, saved, strict=True):
        registry.clear()
        registry.update(before)  # type: ignore[arg-type]


def test_the_page_has_its_examples() -> None:
    assert list(_examples()) == ["task", "learner (file linear_bc.py)", "learner (run)",
                                 "robot", "robot from urdf", "env"]


def test_the_task_example(tmp_path: Path, restore_registries: None) -> None:
    _run(_examples()["task"], tmp_path)  # asserts that the expert touches every point
    from robot_rl.sim.tasks import list_tasks

    assert "touch" in list_tasks()


@pytest.mark.slow
def test_the_learner_example_trains_evaluates_and_exports_through_the_cli(
        tmp_path: Path, restore_registries: None, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    examples = _examples()
    (tmp_path / "linear_bc.py").write_text(examples["learner (file linear_bc.py)"])
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("COLUMNS", "200")
    try:
        _run(examples["learner (run)"], tmp_path)
    finally:
        sys.modules.pop("linear_bc", None)
    out = capsys.readouterr().out
    assert "run: runs/linear" in out
    assert "reach / linear bc: 16 episodes" in out and "success rate" in out
    assert "exported linear policy to runs/linear/export" in out

    import numpy as np

    from robot_rl.cli import summaries, top_level
    from robot_rl.export import load_policy

    assert "linear-bc" in top_level() and "linear policy" in summaries()["linear-bc"]
    policy = load_policy(tmp_path / "runs" / "linear" / "export")
    action = policy(np.zeros(policy.obs_dim, np.float32))
    assert action.shape == (policy.act_dim,) and np.all(np.abs(action) <= 1.0)
    assert policy.meta["provenance"]["policy"] == "linear bc"


def test_the_robot_example(tmp_path: Path, restore_registries: None) -> None:
    _run(_examples()["robot"], tmp_path)  # asserts that the expert moves the arm to targets
    from robot_rl.robots import list_robots

    assert "three_link" in list_robots()


def test_the_urdf_example(tmp_path: Path, restore_registries: None) -> None:
    _run(_examples()["robot from urdf"], tmp_path)  # asserts the limits and the lift


def test_the_env_example(tmp_path: Path) -> None:
    _run(_examples()["env"], tmp_path)  # asserts the adapter, discount, run name and steps


def test_a_kind_that_does_not_define_its_commands_is_refused(restore_registries: None) -> None:
    from robot_rl.errors import ConfigError
    from robot_rl.kinds import Registration, command_kind, register

    with pytest.raises(ConfigError, match="already belongs"):
        register(Registration("other", "robot_rl.kinds.sac", {"train": "again"}))
    register(Registration("not_a_kind", "robot_rl.errors", {"nothing": "no KIND there"}))
    with pytest.raises(ConfigError, match="does not define KIND"):
        command_kind("nothing")
