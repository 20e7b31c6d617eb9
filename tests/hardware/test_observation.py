"""The deploy observation is the env's observation: same terms, same numbers."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from robot_rl.errors import ConfigError
from robot_rl.hardware.observation import TaskObserver
from robot_rl.sim import make_env, make_task_config


@pytest.mark.parametrize(("task", "extra"), [("reach", {}), ("reach_hazard", {}),
                                             ("reach", {"observe_prev_action": True})])
def test_observer_matches_the_env_on_the_same_state(task, extra):
    env = make_env(task, 1, seed=3, **extra)
    obs = env.reset(seed=3)
    observer = TaskObserver(make_task_config(task, **extra))
    assert observer.layout == env.obs_layout
    for name, buf in env.state.buffers.items():  # same goal (and hazard)
        observer.state.buffers[name][:] = buf
    gen = torch.Generator().manual_seed(0)
    for _ in range(5):
        obs, *_ = env.step(torch.rand(1, env.act_dim, generator=gen) * 2 - 1)
        s = env.state
        got = observer(s.joint_pos[0].numpy(), s.joint_vel[0].numpy(), s.action[0].numpy(),
                       s.prev_action[0].numpy())
        np.testing.assert_allclose(got, obs[0].numpy(), atol=1e-5)
        assert observer.success() == bool(env.task.success(s, env.cfg)[0])


def test_goal_can_be_set_and_is_observed():
    observer = TaskObserver(make_task_config("reach"))
    observer.set_goal((0.5, 0.1, 0.3))
    q = np.asarray(observer.state.robot.home)
    obs = observer(q, np.zeros(7), np.zeros(7), np.zeros(7))
    start = sum(w for n, w in observer.layout[:observer.layout.index(("target", 3))])
    np.testing.assert_allclose(obs[start:start + 3], (0.5, 0.1, 0.3), atol=1e-6)
    with pytest.raises(ConfigError, match="3 finite numbers"):
        observer.set_goal((0.5, float("nan"), 0.3))


def test_tasks_observing_unmeasured_state_are_refused_by_term_name():
    with pytest.raises(ConfigError, match="puck_pos") as e:
        TaskObserver(make_task_config("push"))
    # and the refusal names the way that deploys push: a pixel student
    assert "robot-rl distill-pixels --task push" in str(e.value)
    assert "robot-rl deploy runs/pixel_student" in str(e.value)


def test_a_layout_that_differs_from_the_task_is_refused():
    with pytest.raises(ConfigError, match="layout"):
        TaskObserver(make_task_config("reach"), layout=[("joint_pos", 7), ("joint_vel", 6)])
