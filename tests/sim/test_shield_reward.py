"""The ``shield`` reward term: -weight in each control step whose motion a shield layer
reshaped (``MOTION_LAYERS``), in the env, in the robot's observation mirror and in the
deploy runtime's steps (issue 48)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from robot_rl.controllers import MOTION_LAYERS, MotionConfig
from robot_rl.hardware.observation import TaskObserver
from robot_rl.sim import make_env, make_task_config
from tests.conftest import ARM_TASKS


@pytest.mark.parametrize("task", ARM_TASKS)
def test_every_arm_task_has_the_term_off_by_default(task: str) -> None:
    cfg = make_task_config(task)
    assert cfg.reward_weights.get("shield", 0.0) == 0.0
    env = make_env(task, 1)
    assert "shield" in env.task.rewards


def test_the_term_is_minus_its_weight_where_the_shield_changed_the_motion() -> None:
    env = make_env("reach", 2, seed=0, reward_weights={"reach": 1.0, "shield": 2.0})
    env.reset(seed=0)
    # env 0 asks every joint for its whole step at once (the joint-velocity layer cuts it),
    # env 1 holds still
    action = torch.zeros(2, env.act_dim)
    action[0] = 1.0
    for _ in range(3):
        _, reward, *_, info = env.step(action)
        assert info["safety"]["joint_velocity"].tolist() == [True, False]
        assert info["reward_terms"]["shield"].tolist() == [-2.0, 0.0]
        terms = info["reward_terms"]
        assert torch.allclose(reward.double(), terms["reach"] + terms["shield"])


def test_the_action_checks_are_not_counted() -> None:
    """Exploration noise sets off the rate limit by itself: only the layers that reshape the
    motion count (with the profile on, actions that flip sign each step)."""
    env = make_env("reach", 8, seed=0, reward_weights={"shield": 1.0},
                   motion=MotionConfig(enabled=True))
    env.reset(seed=0)
    gen = torch.Generator().manual_seed(0)
    rate_only = 0
    for k in range(20):
        sign = 1.0 if k % 2 else -1.0
        action = sign * (0.6 + 0.4 * torch.rand(8, env.act_dim, generator=gen))
        *_, info = env.step(action)
        flags = info["safety"]
        motion = torch.stack([flags[n] for n in MOTION_LAYERS]).any(dim=0)
        assert info["reward_terms"]["shield"].tolist() == (-motion.double()).tolist()
        rate_only += int((flags["rate_limit"] & ~motion).sum())
    assert rate_only > 0  # the rate limit acted where no motion layer did, unpenalized


def test_the_observation_mirror_counts_what_the_runtime_tells_it() -> None:
    cfg = make_task_config("reach")
    cfg.reward_weights = {**cfg.reward_weights, "shield": 0.5}
    observer = TaskObserver(cfg)
    q = np.asarray(observer.state.robot.home)
    zeros = np.zeros(len(q))
    observer(q, zeros, zeros, zeros)
    clear, _ = observer.reward_cost()
    observer.note_shield(True)
    shielded, _ = observer.reward_cost()
    assert shielded == pytest.approx(clear - 0.5)
    observer.note_shield(False)
    assert observer.reward_cost()[0] == pytest.approx(clear)
