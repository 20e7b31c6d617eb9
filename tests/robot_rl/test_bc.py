"""``robot-rl bc``: a run directory like the training runner's, evaluation in simulation
through the chunk executor, resume, ``robot-rl eval`` of the run, clear errors."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from robot_rl.bc import BCRunner, load_bc_policy
from robot_rl.bc.config import BCConfig
from robot_rl.checkpoint import CHECKPOINT
from robot_rl.data import Dataset, DatasetError
from robot_rl.errors import ConfigError
from robot_rl.policies import PolicyConfig
from robot_rl.recording.config import RecordConfig
from robot_rl.recording.record import record

EP_LEN = 30


@pytest.fixture(scope="module")
def demos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bc") / "push-mm"
    record(RecordConfig(task="push", teleop="expert", expert_style="multimodal", episodes=3,
                        out=out, episode_length=EP_LEN, progress=False))
    return out


def _cfg(demos: Path, runs: Path, **kw) -> BCConfig:
    base = dict(demos=demos, policy=PolicyConfig(horizon=4, execute=2, width=32, blocks=1,
                                                 flow_steps=2),
                steps=20, batch_size=32, eval_every=10, eval_episodes=2, eval_envs=2,
                log_every=5, runs_dir=runs, run_name="bc", progress=False)
    base.update(kw)
    return BCConfig(**base)  # type: ignore[arg-type]


def test_recorded_styles_are_named_in_the_episodes(demos: Path) -> None:
    rows = Dataset(demos).episodes
    assert [r["robot_rl/source"] for r in rows] == ["expert:multimodal"] * 3


def test_a_run_trains_evaluates_checkpoints_and_resumes(demos: Path, tmp_path: Path) -> None:
    runner = BCRunner(_cfg(demos, tmp_path), console=Console(file=sys.stderr))
    history = runner.train()
    run = tmp_path / "bc"
    assert (run / "config.json").is_file() and (run / CHECKPOINT).is_file()
    assert any((run / "tb").iterdir())
    assert [h["grad_steps"] for h in history] == [10.0, 20.0]
    for h in history:  # evaluated in simulation, episodes of the recorded length
        assert 0.0 <= h["success_rate"] <= 1.0 and h["loss"] > 0
    with open(run / "eval.csv") as f:
        assert len(list(csv.DictReader(f))) == 2
    resumed = BCRunner(_cfg(demos, tmp_path, resume=run, steps=30),
                       console=Console(file=sys.stderr))
    assert resumed.grad_steps == 20
    assert [h["grad_steps"] for h in resumed.train()] == [10.0, 20.0, 30.0]
    policy, cfg, state = load_bc_policy(run)
    assert cfg.algo == "bc-flow" and state["grad_steps"] == 30
    assert (policy.horizon, policy.obs_dim) == (4, runner.policy.obs_dim)
    assert state["env"]["episode_length"] == EP_LEN


@pytest.mark.slow
def test_eval_command_runs_a_bc_run(demos: Path, tmp_path: Path) -> None:
    BCRunner(_cfg(demos, tmp_path, algo="bc-mlp", steps=5, eval_episodes=0),
             console=Console(file=sys.stderr)).train()
    out = subprocess.run([sys.executable, "-m", "robot_rl.cli", "eval", str(tmp_path / "bc"),
                          "--episodes", "2", "--num-envs", "2"], capture_output=True,
                         text=True, timeout=300, env={"COLUMNS": "200", **_env()})
    assert out.returncode == 0, out.stderr
    assert "push / bc-mlp: 2 episodes" in out.stdout and "success rate" in out.stdout


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "COLUMNS"}


def test_bad_requests_fail_before_a_run_directory(demos: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--max-episodes 9: .* holds 3 episodes"):
        BCRunner(_cfg(demos, tmp_path, max_episodes=9))
    with pytest.raises(DatasetError):
        BCRunner(_cfg(tmp_path / "missing", tmp_path))
    with pytest.raises(ConfigError, match="execute <= horizon"):
        BCRunner(_cfg(demos, tmp_path, policy=PolicyConfig(horizon=2, execute=3)))
    assert not (tmp_path / "bc").exists()


def test_drop_idle_leaves_out_the_frames_whose_action_is_zero() -> None:
    import numpy as np

    from robot_rl.bc.demos import drop_idle

    action = np.array([[0, 0, 0], [0.1, 0, 0], [0, 0, 0], [0, -1e-7, 0], [0, 0, -0.5]],
                      dtype=np.float32)
    frames = {"action": action, "episode_index": np.array([0, 0, 0, 1, 1]),
              "observation.state": np.arange(10.0).reshape(5, 2)}
    kept, dropped = drop_idle(frames)
    assert dropped == 3
    assert kept["episode_index"].tolist() == [0, 1]
    assert kept["observation.state"].tolist() == [[2.0, 3.0], [8.0, 9.0]]
    assert kept["action"].tolist() == [[np.float32(0.1), 0, 0], [0, 0, -0.5]]


@pytest.mark.slow
def test_a_run_learns_without_the_pauses_of_human_like_demos(tmp_path: Path) -> None:
    import numpy as np

    out = tmp_path / "push-mmh"
    record(RecordConfig(task="push", teleop="expert", expert_style="multimodal-human",
                        episodes=2, out=out, episode_length=100, progress=False))
    action = Dataset(out).frames()["action"]
    idle = int((np.abs(action).max(axis=1) == 0).sum())
    assert idle > 0  # the human-like style pauses about once a second
    runner = BCRunner(_cfg(out, tmp_path, eval_episodes=0), console=Console(file=sys.stderr))
    assert (runner.demos.idle_dropped, len(runner.data)) == (idle, len(action) - idle)
    kept = BCRunner(_cfg(out, tmp_path, eval_episodes=0, run_name="all", drop_idle=False),
                    console=Console(file=sys.stderr))
    assert (kept.demos.idle_dropped, len(kept.data)) == (0, len(action))


def test_mirror_learns_every_episode_also_as_its_mirror_image(demos: Path, tmp_path: Path
                                                              ) -> None:
    import numpy as np

    from robot_rl.data.mirror import mirror_signs

    frames = Dataset(demos).frames()
    runner = BCRunner(_cfg(demos, tmp_path, eval_episodes=0, drop_idle=False, mirror=True),
                      console=Console(file=sys.stderr))
    n = len(frames["action"])
    assert (runner.demos.mirrored, len(runner.data)) == (3, 2 * n)
    signs = mirror_signs(Dataset(demos).spec)  # push in joint offsets: joints 1, 3, 5, 7
    assert signs.action.tolist() == [-1, 1, -1, 1, -1, 1, -1]
    np.testing.assert_array_equal(runner.demos.train["observation.state"][n:],
                                  frames["observation.state"] * signs.obs)
    np.testing.assert_array_equal(runner.demos.train["action"][n:], frames["action"] * signs.action)
    assert runner.train()[-1]["loss"] > 0


def test_runs_from_before_drop_idle_kept_every_frame(demos: Path, tmp_path: Path) -> None:
    from robot_rl.bc.runner import saved_config
    from robot_rl.config_io import to_dict

    cfg = to_dict(_cfg(demos, tmp_path))
    assert saved_config({"config": cfg}).drop_idle is True
    del cfg["drop_idle"]
    assert saved_config({"config": cfg}).drop_idle is False
