"""The deploy runtime with a chunked artifact: every policy step applies the next action of
the chunk (the graph runs once per K steps), holds and a person's steps start a new chunk."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from robot_rl.export import load_policy
from robot_rl.hardware.configs import DeployConfig
from robot_rl.hardware.runtime import DeployRuntime
from robot_rl.hardware.runtime_hooks import PolicyStep
from tests.hardware.conftest import ScriptedRobot

H, K = 4, 2


@pytest.fixture(scope="module")
def chunk_artifact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from robot_rl.bc import BCRunner
    from robot_rl.bc.config import BCConfig
    from robot_rl.kinds.base import ExportConfig
    from robot_rl.kinds.export import export_path
    from robot_rl.policies import PolicyConfig
    from robot_rl.recording.config import RecordConfig
    from robot_rl.recording.record import record

    root = tmp_path_factory.mktemp("chunked_deploy")
    record(RecordConfig(task="reach", teleop="expert", episodes=2, out=root / "demos",
                        episode_length=30, progress=False))
    BCRunner(BCConfig(demos=root / "demos", algo="bc-mlp",
                      policy=PolicyConfig(horizon=H, execute=K, obs_history=2, width=16,
                                          blocks=1),
                      steps=5, eval_episodes=0, runs_dir=root, run_name="bc", progress=False),
             console=Console(file=sys.stderr)).train()
    export_path(ExportConfig(run=root / "bc", out=root / "art"))
    return root / "art"


@pytest.mark.slow
def test_policy_steps_execute_chunks_and_restart_them_after_a_hold(chunk_artifact) -> None:
    r = ScriptedRobot()
    art = load_policy(chunk_artifact)
    rt = DeployRuntime(art, r, DeployConfig(goal=(0.5, -0.15, 0.3), rate_hz=art.control_hz,
                                            sliced_policy=False))
    steps: list[PolicyStep] = []
    rt.on_step = steps.append
    period = 1.0 / art.control_hz
    q = np.asarray(r.spec.home, dtype=float)
    calls0 = art._executor.calls  # the warm-up's
    for k in range(5):
        r.set(q + 0.002 * k, stamp=k * period)
        rt.tick(r.observe(), now=k * period)
    assert len(steps) == 5 and art._executor.calls == calls0 + 3  # steps 0, 2, 4
    o = [s.obs for s in steps]
    first = art.chunk(np.stack([o[0], o[0]])[None])[0]
    second = art.chunk(np.stack([o[1], o[2]])[None])[0]
    for got, want in zip([s.action for s in steps[:4]], [first[0], first[1], second[0],
                                                          second[1]], strict=True):
        np.testing.assert_allclose(got, want, atol=1e-6)
    rt.stop()
    ok, why = rt.start(now=5 * period)
    assert ok, why
    r.set(q, stamp=5 * period)
    rt.tick(r.observe(), now=5 * period)
    assert art._executor.calls == calls0 + 4  # after the hold, a new chunk at once
    rt.override = lambda obs, reading, arm: np.zeros(art.act_dim)
    r.set(q, stamp=6 * period)
    rt.tick(r.observe(), now=6 * period)
    rt.override = None
    r.set(q, stamp=7 * period)
    rt.tick(r.observe(), now=7 * period)
    assert art._executor.calls == calls0 + 5  # the person's step dropped the chunk
    assert steps[-2].intervention and not steps[-1].intervention
