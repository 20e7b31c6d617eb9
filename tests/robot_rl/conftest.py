"""Fixtures of the learning-side tests."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator

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


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[object]:
    """Two Ray nodes of one CPU each on this machine, this process connected to them; the
    second has the custom resource "robot" (the robot's machine)."""
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    store = 256 * 1024**2  # small object stores: a CI container's /dev/shm may be small
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "include_dashboard": False, "object_store_memory": store})
    cluster.add_node(num_cpus=1, resources={"robot": 1}, object_store_memory=store)
    ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
    cluster.wait_for_nodes()
    yield cluster
    ray.shutdown()
    cluster.shutdown()

