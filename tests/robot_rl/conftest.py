"""Fixtures of the learning-side tests."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import pytest


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
        ) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``robot-rl ARGS`` through ``main`` in this process: its status, stdout and stderr."""
    from robot_rl.cli import main

    monkeypatch.setenv("COLUMNS", "200")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        capsys.readouterr()
        code = 0
        try:
            main(list(args))
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
        got = capsys.readouterr()
        return subprocess.CompletedProcess(list(args), code, got.out, got.err)

    return run
