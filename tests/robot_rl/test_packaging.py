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
