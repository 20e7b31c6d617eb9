"""Fixtures of the learning-side tests."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

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



@pytest.fixture(scope="session")
def push_flow_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny bc-flow run of push (24-step episodes, chunks of 4) that tests read and never
    change (dsrl and filtered BC start from it)."""
    from tests.robot_rl.flow_runs import tiny_bc_runs

    root = tmp_path_factory.mktemp("push_flow")
    tiny_bc_runs(root, "push", episode_length=24, horizon=4)
    return root / "bc-flow"
