"""Evaluation measures the policy that ships: ``robot-rl eval RUN`` and ``robot-rl eval
RUN/export`` give the same episodes for every deterministic kind of run (SAC screened by its
gate, DSRL, a residual, MLP behaviour cloning; a fine-tuned run is a SAC run)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from rich.console import Console

from robot_rl.algos.configs import SACConfig
from robot_rl.finetune import DSRLRunner
from robot_rl.finetune.configs import DSRLConfig, ResidualConfig
from robot_rl.finetune.residual import ResidualRunner
from robot_rl.kinds.base import ExportConfig
from robot_rl.kinds.eval_config import EvalConfig
from robot_rl.kinds.evaluation import evaluate_path
from robot_rl.kinds.export import export_path
from robot_rl.runner import Runner
from robot_rl.sim import make_task_config
from robot_rl.train_config import TrainConfig
from tests.robot_rl.flow_runs import tiny_bc_runs

TINY = dict(batch_size=16, learning_starts=48, actor_hidden=(16,), critic_hidden=(16,))


def _evaluate(path: Path) -> tuple[float, float]:
    """(success rate, mean return) of robot-rl eval's episodes of ``path``."""
    res = evaluate_path(EvalConfig(path=path, episodes=6, num_envs=3, seed=7)).result
    return res.success_rate, res.return_mean


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("agree")
    tiny_bc_runs(root, "reach", episode_length=20, horizon=4, execute=2,
                 algos=("bc-flow", "bc-mlp"))
    return root


@pytest.mark.slow
def test_run_and_artifact_agree_for_every_kind(runs: Path) -> None:
    quiet = Console(file=sys.stderr)
    Runner(TrainConfig(task="reach", safety="both", num_envs=4, total_steps=400,
                       env=make_task_config("reach", episode_length=20), eval_every=400,
                       eval_episodes=2, runs_dir=runs, run_name="sac", progress=False,
                       sac=SACConfig(**TINY),  # type: ignore[arg-type]
                       safety_critic=dict_safety()), console=quiet).train()
    DSRLRunner(DSRLConfig(policy=runs / "bc-flow", num_envs=2, total_steps=96, eval_every=96,
                          eval_episodes=2, runs_dir=runs, run_name="dsrl", progress=False,
                          sac=SACConfig(**TINY)), console=quiet).train()  # type: ignore[arg-type]
    ResidualRunner(ResidualConfig(policy=runs / "bc-flow", num_envs=2, total_steps=96,
                                  eval_every=96, eval_episodes=2, runs_dir=runs,
                                  run_name="residual", progress=False,
                                  sac=SACConfig(**TINY)),  # type: ignore[arg-type]
                   console=quiet).train()
    for name in ("sac", "dsrl", "residual", "bc-mlp"):
        export_path(ExportConfig(run=runs / name, policy="teacher"))
        run_success, run_return = _evaluate(runs / name)
        art_success, art_return = _evaluate(runs / name / "export")
        assert abs(run_success - art_success) <= 0.03, name
        assert art_return == pytest.approx(run_return, rel=1e-4, abs=1e-4), name


def dict_safety():  # type: ignore[no-untyped-def]
    from robot_rl.algos.configs import SafetyConfig

    # gated, with a threshold the untrained critic never exceeds: where the policy's action
    # is safe both keep it (a rejected action's replacement is random in both, by design)
    return SafetyConfig(hidden=(16,), threshold=1e3)
