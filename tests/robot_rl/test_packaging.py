"""The distribution lists every package of the source tree (a non-editable install, or a
colcon build, ships only the packages pyproject.toml names)."""

from __future__ import annotations

from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[2]


def test_every_source_package_is_in_pyproject() -> None:
    setup = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(setup["packages"])
    folders = {name: ROOT / path for name, path in setup["package-dir"].items()}
    found = set()
    for name, folder in folders.items():
        for init in folder.rglob("__init__.py"):
            rel = init.parent.relative_to(folder)
            if any(part.startswith((".", "__")) for part in rel.parts):
                continue
            found.add(".".join([name, *rel.parts]))
    # a folder mapped on its own (robot_rl.sim = sim/) is not also a sub-package of robot_rl
    assert found - listed == set(), f"packages missing from pyproject.toml: {found - listed}"

    def folder_of(package: str) -> Path:
        base = max((n for n in folders if package == n or package.startswith(n + ".")),
                   key=len)
        return folders[base].joinpath(*package[len(base):].split(".")[1:])

    absent = {p for p in listed if not folder_of(p).is_dir()}
    assert not absent, f"pyproject.toml lists packages with no folder: {absent}"


CYCLES = """
import graphlib, sys
import grimp
graph = grimp.build_graph("robot_rl", cache_dir=None)
deps = {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}
try:
    graphlib.TopologicalSorter(deps).prepare()
except graphlib.CycleError as e:
    print(" -> ".join(reversed(e.args[1])))
    sys.exit(1)
print(f"{len(deps)} modules, no cycle")
"""


def test_no_module_imports_itself_through_others(tmp_path: Path) -> None:
    """No import cycle between modules, in the package as installed (sim/, controllers/,
    hardware/ inside robot_rl), imports inside functions and under TYPE_CHECKING included:
    grimp reads them all."""
    import shutil
    import subprocess
    import sys

    skip = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "robot_rl", tmp_path / "robot_rl", ignore=skip)
    for folder in ("sim", "controllers", "hardware", "launch"):
        shutil.copytree(ROOT / folder, tmp_path / "robot_rl" / folder, ignore=skip)
    out = subprocess.run([sys.executable, "-c", CYCLES], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120, env={"PYTHONPATH": str(tmp_path)})
    assert out.returncode == 0, f"import cycle: {out.stdout}{out.stderr}"
    assert "no cycle" in out.stdout
