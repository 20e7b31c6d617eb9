"""The training runner: run directory, checkpoints (round trip, resume, corruption, Ctrl-C)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from robot_rl.algos.configs import SACConfig, SafetyConfig
from robot_rl.checkpoint import (
    CHECKPOINT,
    REPLAY,
    CheckpointError,
    kept_checkpoint,
    load_checkpoint,
    read_curve,
)
from robot_rl.runner import Runner, load_agent
from robot_rl.sim import make_task_config
from robot_rl.train_config import TrainConfig

ROBOT_RL = str(Path(sys.executable).parent / "robot-rl")


def tiny_config(tmp_path: Path, **overrides: object) -> TrainConfig:
    small = dict(actor_hidden=(32, 32), critic_hidden=(32, 32), batch_size=32,
                 buffer_size=5_000, learning_starts=80)
    fields: dict = dict(task="reach", num_envs=4, total_steps=240,
                        env=make_task_config("reach", episode_length=20),
                        eval_every=10**9, eval_episodes=2, log_every=40, runs_dir=tmp_path,
                        run_name="tiny", progress=False, safety="both",
                        sac=SACConfig(**small), safety_critic=SafetyConfig(hidden=(32, 32)))
    fields.update(overrides)
    return TrainConfig(**fields)


@pytest.mark.slow
def test_run_dir_checkpoint_round_trip_and_resume(tmp_path):
    runner = Runner(tiny_config(tmp_path, keep_every=100))
    history = runner.train()
    run = tmp_path / "tiny"
    assert (run / "config.json").is_file() and (run / CHECKPOINT).is_file()
    assert (run / REPLAY).is_file() and any((run / "tb").iterdir())
    saved = json.loads((run / "config.json").read_text())
    assert saved["safety"] == "both" and saved["sac"]["batch_size"] == 32
    assert read_curve(run)[-1]["env_steps"] == 240 == history[-1]["env_steps"]

    agent, cfg, state = load_agent(run)
    assert cfg.safety == "both" and state["env_steps"] == 240
    for (name, a), b in zip(runner.agent.state_dict().items(), agent.state_dict().values(),
                            strict=True):
        torch.testing.assert_close(a, b, msg=name)

    kept = sorted(p.name for p in (run / "checkpoints").glob("step_*.pt"))
    assert kept == ["step_100.pt", "step_200.pt"]  # rounds of 4 envs cross 100 at 100
    at_100 = load_checkpoint(run / kept_checkpoint(100))
    assert at_100["env_steps"] == 100 and all(h["env_steps"] <= 100 for h in at_100["history"])
    assert load_agent(run / kept_checkpoint(200))[2]["env_steps"] == 200

    resumed = Runner(TrainConfig(resume=run, total_steps=480, progress=False))
    assert resumed.env_steps == 240 and len(resumed.buffer) == 240
    torch.testing.assert_close(resumed.agent.normalizer.mean, runner.agent.normalizer.mean)
    assert resumed.agent.updates == runner.agent.updates
    assert torch.equal(resumed._action_gen.get_state(), runner._action_gen.get_state())
    resumed.train()
    assert load_checkpoint(run)["env_steps"] == 480
    assert resumed.agent.updates == runner.agent.updates + 240 // 4
    assert sorted(p.name for p in (run / "checkpoints").glob("step_*.pt")) == \
        ["step_100.pt", "step_200.pt", "step_300.pt", "step_400.pt"]


@pytest.mark.slow
def test_a_run_stopped_by_its_target_keeps_that_steps_checkpoint(tmp_path):
    """The first evaluation (after one round of 4 envs) reaches a target of 0%: the run
    stops there, and ``keep_every`` 4 has kept that step's checkpoint first."""
    runner = Runner(tiny_config(tmp_path, keep_every=4, target_success=0.0))
    runner.train()
    assert runner.env_steps == 4
    assert load_checkpoint(tmp_path / "tiny" / kept_checkpoint(4))["env_steps"] == 4


@pytest.mark.slow
def test_corrupt_or_missing_checkpoint_is_one_clear_error(tmp_path):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint at all")
    with pytest.raises(CheckpointError, match="bad.pt"):
        load_checkpoint(bad)
    with pytest.raises(CheckpointError, match="no checkpoint"):
        load_checkpoint(tmp_path / "nowhere")
    torch.save({"weights": 1}, tmp_path / "other.pt")
    with pytest.raises(CheckpointError, match="not a robot_rl training checkpoint"):
        load_checkpoint(tmp_path / "other.pt")
    out = subprocess.run([ROBOT_RL, "eval", str(bad)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "bad.pt" in lines[0] and "error" in lines[0]


@pytest.mark.slow
def test_ctrl_c_leaves_a_resumable_checkpoint(tmp_path):
    cmd = [ROBOT_RL, "train", "--task", "reach", "--num-envs", "4", "--total-steps",
           "100000000", "--env.episode-length", "20", "--eval-every", "1000000000",
           "--eval-episodes", "2", "--runs-dir", str(tmp_path), "--run-name", "ctrlc",
           "--checkpoint-every", "0.5", "--no-progress", "--sac.learning-starts", "100",
           "--sac.batch-size", "32", "--sac.actor-hidden", "32", "32",
           "--sac.critic-hidden", "32", "32", "--safety", "off"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ckpt = tmp_path / "ctrlc" / CHECKPOINT
    deadline = time.monotonic() + 120
    while not ckpt.is_file() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert ckpt.is_file(), proc.communicate()[1]
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted" in err
    state = load_checkpoint(ckpt)
    steps = state["env_steps"]
    assert steps > 0
    assert not [p for p in ckpt.parent.iterdir() if p.name.endswith(".tmp")]
    resumed = Runner(TrainConfig(resume=tmp_path / "ctrlc", total_steps=steps + 40,
                                 progress=False))
    assert resumed.env_steps == steps
    resumed.train()
    assert load_checkpoint(ckpt)["env_steps"] == steps + 40


def test_resume_of_a_missing_run_is_refused(tmp_path):
    with pytest.raises(CheckpointError):
        Runner(TrainConfig(resume=tmp_path / "missing", progress=False))


@pytest.mark.slow
def test_short_training_run_on_the_warp_backend(tmp_path):
    """SAC with the safety critic trains on MuJoCo Warp (Warp's CPU device here; the same
    code runs with --device cuda): transitions reach the buffer in float32, updates run,
    evaluation and the checkpoint work, and the saved config names the backend."""
    pytest.importorskip("mujoco_warp", reason="the warp backend comes with the gpu extra")
    cfg = tiny_config(tmp_path, backend="warp", total_steps=120, eval_episodes=2)
    runner = Runner(cfg)
    assert runner.env.backend.dtype == torch.float32
    history = runner.train()
    assert history[-1]["env_steps"] == 120 and runner.agent.updates >= (120 - 80) // 4
    assert runner.buffer.obs[:120].isfinite().all()
    saved = json.loads((tmp_path / "tiny" / "config.json").read_text())
    assert saved["backend"] == "warp" and saved["warp"]["nconmax"] is None
    agent, loaded, _ = load_agent(tmp_path / "tiny")
    assert loaded.backend == "warp"


def test_a_robot_fine_tuning_run_loads_as_its_base_config(tmp_path):
    """robot-rl export / evaluate read any run through load_agent(TrainConfig): a
    finetune-robot run's own fields (init, robot, ...) are dropped, its agent loads."""
    from robot_rl.checkpoint import FORMAT_VERSION
    from robot_rl.config_io import to_dict
    from robot_rl.finetune.robot.configs import RobotFinetuneConfig
    from robot_rl.runner import make_agent

    cfg = RobotFinetuneConfig(init=tmp_path / "sim_run", runs_dir=tmp_path,
                              sac=SACConfig(actor_hidden=(16,), critic_hidden=(16,)))
    agent = make_agent(cfg, 30, 7)
    path = tmp_path / "latest.pt"
    torch.save({"format": FORMAT_VERSION, "config": to_dict(cfg), "obs_dim": 30, "act_dim": 7,
                "agent": agent.full_state()}, path)
    loaded, base, _ = load_agent(path)
    assert type(base) is TrainConfig and base.sac.actor_hidden == (16,)
    x = torch.zeros(1, 30)
    torch.testing.assert_close(loaded.act(x, deterministic=True, gate=False).action,
                               agent.act(x, deterministic=True, gate=False).action)


class _ThreadRecordingRunner(Runner):
    """Records torch's thread count at every gradient update."""

    seen: set[int]

    def learn(self) -> dict[str, float]:
        self.seen.add(torch.get_num_threads())
        return super().learn()


@pytest.mark.slow
def test_learner_threads_and_a_run_that_stops_short_of_its_target(tmp_path, cli):
    from io import StringIO

    from rich.console import Console

    with pytest.raises(Exception, match="threads must be >= 1"):
        tiny_config(tmp_path, threads=0).validate()
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        out = StringIO()
        runner = _ThreadRecordingRunner(tiny_config(tmp_path, threads=1, target_success=1.0,
                                                    time_budget=600.0),
                                        console=Console(file=out, width=200))
        runner.seen = set()
        runner.train()
        assert runner.seen == {1}  # the learner's count while training ...
        assert torch.get_num_threads() == 2  # ... and the caller's restored after it
    finally:
        torch.set_num_threads(before)
    text = out.getvalue()
    assert "target success 100% not reached (last evaluation 0%)" in text
    assert f"robot-rl train --resume {tmp_path / 'tiny'} --time-budget 1200" in text

    # the same policy through ``robot-rl eval --min-success``: status 1 below it, 0 at it
    run = str(tmp_path / "tiny")
    low = cli("eval", run, "--episodes", "2", "--num-envs", "2", "--min-success", "0.5")
    assert low.returncode == 1 and "is below the required 50%" in low.stdout
    ok = cli("eval", run, "--episodes", "2", "--num-envs", "2", "--min-success", "0")
    assert ok.returncode == 0 and "meets the required 0%" in ok.stdout
    bad = cli("eval", run, "--min-success", "95")
    assert bad.returncode == 2 and "rate in [0, 1]" in bad.stderr


def test_the_target_must_hold_for_target_evals_evaluations_in_a_row():
    from robot_rl.run_control import StopRules

    rules = StopRules(0.95, None, 1e9, target_evals=2)
    got = [rules.target_reached(x) for x in (0.97, 0.90, 0.97, 1.0)]
    assert got == [None, None, None, "target success 95% reached in 2 evaluations in a row"]
    once = StopRules(0.95, None, 1e9)
    assert once.target_reached(0.95) == "target success 95% reached"
    assert StopRules(None, None, 1e9, target_evals=3).target_reached(1.0) is None
    with pytest.raises(ValueError, match="target_evals"):
        StopRules(0.95, None, 1e9, target_evals=0)
