"""The one DAgger loop (``robot_rl.distill.dagger``) and the configs it composes into."""

from __future__ import annotations

import io

import pytest
import torch
from rich.console import Console

from robot_rl.config_io import to_dict
from robot_rl.distill.configs import DaggerConfig, PixelDistillConfig
from robot_rl.distill.dagger import dagger, mix
from robot_rl.errors import ConfigError
from robot_rl.vision.configs import PixelInputs, PixelPolicyConfig, PixelTrainConfig
from robot_rl.vision.student import PixelPolicy
from robot_rl.vision.student_file import PIXEL_STUDENT_FORMAT, load_pixel_student, student_record


class _Line:
    """A 1-D env whose episodes last ``length`` steps; the observation is the step count."""

    num_envs, max_episode_length = 64, 5

    def __init__(self) -> None:
        self.t = torch.zeros(self.num_envs, 1)

    def reset(self, seed: int | None = None) -> torch.Tensor:
        self.t.zero_()
        return self.t.clone()

    def step(self, action: torch.Tensor, hold: torch.Tensor | None = None):
        self.t += 1
        done = self.t[:, 0] >= self.max_episode_length
        self.t[done] = 0
        false = torch.zeros(self.num_envs, dtype=torch.bool)
        return self.t.clone(), torch.zeros(self.num_envs), torch.zeros(self.num_envs), false, \
            done, {}


class _Counting:
    """Teacher +1, student -1; counts what was executed per iteration and what was fit."""

    def __init__(self) -> None:
        self.executed: list[list[float]] = [[]]
        self.kept = 0
        self.fits: list[int] = []
        self.gen = torch.Generator().manual_seed(0)
        self.ends = 0

    @property
    def samples(self) -> int:
        return self.kept

    def act(self, obs: torch.Tensor, beta: float) -> torch.Tensor:
        self.kept += obs.shape[0]
        action = mix(torch.ones(obs.shape[0], 1), -torch.ones(obs.shape[0], 1), beta, self.gen)
        self.executed[-1].append(float((action > 0).float().mean()))
        return action

    def stepped(self, result) -> None:
        self.ends += int(result[4].sum())

    def fit(self) -> dict[str, float]:
        self.fits.append(self.kept)
        self.executed.append([])
        return {"loss": 1.0 / len(self.fits), "other": 2.0}


def test_dagger_rolls_out_the_teacher_first_then_mixes_by_beta_and_fits_the_aggregate():
    learner, out = _Counting(), io.StringIO()
    cfg = DaggerConfig(iterations=3, beta_decay=0.25, rollout_steps=40)
    losses, samples = dagger(_Line(), learner, cfg, Console(file=out, width=200))
    teacher_share = [sum(x) / len(x) for x in learner.executed[:3]]
    assert teacher_share[0] == 1.0  # iteration 0: the teacher alone
    assert abs(teacher_share[1] - 0.25) < 0.05 and abs(teacher_share[2] - 0.0625) < 0.03
    assert learner.fits == [40 * 64, 80 * 64, 120 * 64]  # each fit on everything so far
    assert samples == 120 * 64 and losses == {"loss": 1 / 3, "other": 2.0}
    assert learner.ends == 24 * 64  # episodes of 5 steps, 120 steps
    lines = out.getvalue().splitlines()  # not a terminal: one line per iteration
    assert len(lines) == 3 and lines[1].startswith("[distill iteration 2/3, ")
    assert "beta 0.25" in lines[1] and "samples 5,120" in lines[1] and "other" in lines[1]


def test_one_episode_per_iteration_by_default_and_bad_schedules_refused():
    learner = _Counting()
    dagger(_Line(), learner, DaggerConfig(iterations=1), Console(file=io.StringIO()))
    assert learner.fits == [5 * 64]
    for bad in (dict(iterations=0), dict(beta_decay=1.5), dict(batch_size=0),
                dict(eval_episodes=-1)):
        with pytest.raises(ConfigError):
            DaggerConfig(**bad).validate()  # type: ignore[arg-type]


def test_pixel_configs_saved_flat_before_composition_still_load(tmp_path):
    """A pixel student file and a train-pixels config written before ``inputs`` and
    ``dagger`` were configs of their own (their fields flat) read as they were written."""
    flat = {"task": "push", "teacher": None, "cameras": ["front"], "size": 24, "depth": True,
            "visual": "off", "dr": "strong", "policy": {"features": 8, "hidden": [16]},
            "drop_terms": ["last_action"], "iterations": 3, "num_envs": 5,
            "beta_decay": 0.5, "state_weight": 0.0, "seed": 7}
    cfg = PixelDistillConfig.from_saved(flat)
    assert cfg.inputs == PixelInputs(cameras=("front",), size=24, depth=True, visual="off",
                                     drop_terms=("last_action",))
    assert (cfg.dagger.iterations, cfg.dagger.num_envs, cfg.dagger.dr, cfg.dagger.seed) == \
        (3, 5, "strong", 7)
    assert cfg.policy.activation == "relu"  # files from before the choice
    assert PixelDistillConfig.from_saved(to_dict(cfg)) == cfg  # and today's round trip

    shapes = {"front.rgb": (3, 24, 24)}
    policy = PixelPolicy(PixelPolicyConfig(features=8, hidden=(16,)), shapes, 4, 2)
    old = {"format": PIXEL_STUDENT_FORMAT, "config": flat, "task": {"name": "push"},
           "image_shapes": shapes, "obs_dim": 4, "act_dim": 2, "state_dim": 0,
           "state_dict": policy.state_dict()}
    torch.save(old, tmp_path / "old.pt")
    loaded, state = load_pixel_student(tmp_path / "old.pt")
    record = student_record(state)
    assert record.inputs == cfg.inputs and record.dr == "strong" and record.task == "push"
    assert record.state_weight == 0.0 and record.teacher is None
    assert all(torch.equal(a, b) for a, b in zip(loaded.state_dict().values(),
                                                 policy.state_dict().values(), strict=True))

    run = PixelTrainConfig.from_saved({"task": "push", "cameras": ["wrist"], "size": 32})
    assert run.inputs.cameras == ("wrist",) and run.inputs.size == 32


def test_distill_flags_keep_their_names(cli):
    """The composed configs' fields are flags without a prefix, as before."""
    for command, flags in (("distill", ("--iterations", "--num-envs", "--dr", "--beta-decay")),
                           ("distill-pixels", ("--cameras", "--size", "--iterations",
                                               "--grad-steps", "--policy-envs")),
                           ("train-pixels", ("--cameras", "--size", "--drop-terms"))):
        out = cli(command, "--help").stdout
        assert all(f in out for f in flags), (command, [f for f in flags if f not in out])
        assert "--dagger." not in out and "--inputs." not in out
