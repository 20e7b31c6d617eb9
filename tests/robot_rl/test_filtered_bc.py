"""Filtered BC: rollouts keep exactly the successful episodes' frames, and a run re-trains
a BC run on them round by round, as a BC run eval and export take."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest
import torch
from rich.console import Console

from robot_rl.bc.config import FilteredBCConfig
from robot_rl.bc.filtered import FilteredBC, successful_rollouts
from robot_rl.checkpoint import load_checkpoint
from robot_rl.policies import PolicyConfig
from robot_rl.sim import make_env


class _Expert:
    """A one-step 'chunk policy' that asks the env's scripted expert (every env each step)."""

    def __init__(self, env):  # type: ignore[no-untyped-def]
        self.env = env
        self.cfg = PolicyConfig(horizon=1)
        self.calls: list[torch.Tensor] = []

    def sample(self, obs_hist: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        assert obs_hist.shape[0] == self.env.num_envs
        a = self.env.expert_action()
        self.calls.append(a)
        return a[:, None]


@pytest.mark.slow
def test_rollouts_keep_the_successful_episodes_frames():
    env = make_env("push", 4, seed=0, episode_length=120)
    expert = _Expert(env)
    ro = successful_rollouts(expert, env, episodes=6, seed=3,  # type: ignore[arg-type]
                             gen=torch.Generator().manual_seed(0))
    assert ro.episodes == 6 and 0 < ro.successes <= 6
    assert ro.env_steps == 4 * len(expert.calls)
    # every kept episode is a whole 120-step episode of the expert's actions, in order
    assert len(ro.obs) == len(ro.actions) == 120 * ro.successes
    assert ro.episode.tolist() == [k for k in range(ro.successes) for _ in range(120)]
    executed = torch.stack(expert.calls)  # (T, E, A)
    first = ro.actions[:120]
    assert any(torch.equal(first, executed[:120, i]) for i in range(4))


@pytest.fixture
def bc_run(push_flow_run: Path) -> Path:
    return push_flow_run


@pytest.mark.slow
def test_a_filtered_run_trains_round_by_round_as_a_bc_run(bc_run: Path, tmp_path: Path):
    from robot_rl.bc import load_bc_policy

    fb = FilteredBC(FilteredBCConfig(policy=bc_run, rounds=2, rollouts=3, steps=4,
                                     num_envs=2, eval_episodes=2, runs_dir=tmp_path,
                                     run_name="fbc"), console=Console(file=sys.stderr))
    start, _, _ = load_bc_policy(bc_run)
    for net in (fb.runner.policy, fb.runner.acting):  # both start from the acting weights
        for (k, v), w in zip(net.state_dict().items(), start.state_dict().values(),
                             strict=True):
            torch.testing.assert_close(v, w, msg=k)
    history = fb.train()
    assert [h["round"] for h in history] == [0, 1, 2]
    steps = [h["env_steps"] for h in history]
    assert steps[0] == 0 and steps[1] > 0 and steps[2] > steps[1]
    assert fb.runner.grad_steps == 8
    with open(tmp_path / "fbc" / "eval.csv") as f:
        assert len(list(csv.DictReader(f))) == 3
    state = load_checkpoint(tmp_path / "fbc")
    assert state["kind"] == "bc" and state["grad_steps"] == 8
    load_bc_policy(tmp_path / "fbc")  # eval, export and dsrl load it as a bc run


def test_kept_episodes_join_the_demonstrations(bc_run: Path, tmp_path: Path):
    from robot_rl.bc.filtered import Rollouts

    fb = FilteredBC(FilteredBCConfig(policy=bc_run, rounds=1, rollouts=1, steps=1,
                                     num_envs=2, eval_episodes=1, runs_dir=tmp_path,
                                     run_name="join"), console=Console(file=sys.stderr))
    fb._demo_episodes = torch.as_tensor(fb.runner.demos.train["episode_index"]).long()
    n_demo = len(fb.demos)
    n_obs, A = fb.env.obs_dim, fb.env.act_dim  # type: ignore[union-attr]
    kept = Rollouts(torch.ones(10, n_obs), torch.full((10, A), 0.5),
                    torch.tensor([0] * 4 + [1] * 6), 2, 2, 40, 0.0)
    data = fb._data([kept])
    assert len(data) == n_demo + 10
    torch.testing.assert_close(data.actions[n_demo:], torch.full((10, A), 0.5))
    # a kept episode's chunks stay inside it: the last frame of the first one repeats
    obs, chunk, mask = data.rows(torch.tensor([n_demo + 3]))
    assert mask[0].tolist() == [True, False, False, False]


def test_a_filtered_run_stops_on_its_time_budget_in_the_shared_loop(bc_run: Path,
                                                                    tmp_path: Path):
    # the loop is every run's (RunLoop): the budget is read after each round's evaluation,
    # the checkpoint is written on leaving, TensorBoard is written, the stop line printed
    out = Console(file=None, record=True, width=200)
    fb = FilteredBC(FilteredBCConfig(policy=bc_run, rounds=3, rollouts=1, steps=1,
                                     num_envs=2, eval_episodes=1, time_budget=1e-6,
                                     runs_dir=tmp_path, run_name="budget", progress=False),
                    console=out)
    history = fb.train()
    assert [h["round"] for h in history] == [0, 1]
    assert load_checkpoint(tmp_path / "budget")["grad_steps"] == 1
    assert any((tmp_path / "budget" / "tb").iterdir())
    assert "stopped: time budget" in out.export_text()


def test_a_filtered_run_refuses_resume_and_a_bad_target(bc_run: Path, tmp_path: Path):
    from robot_rl.errors import ConfigError

    with pytest.raises(ConfigError, match="does not resume"):
        FilteredBCConfig(policy=bc_run, resume=tmp_path).validate()
    with pytest.raises(ConfigError, match="--target-success must be in"):
        FilteredBCConfig(policy=bc_run, target_success=1.5).validate()
