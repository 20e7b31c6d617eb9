"""gymnasium registration, env_checker, the VectorEnv adapter, SB3 and CleanRL-style use."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import robot_rl  # noqa: F401  (registers the ids)
from robot_rl.gym_registration import GYM_IDS
from robot_rl.sim.gym import RobotRLVectorEnv


@pytest.mark.parametrize("env_id", sorted(GYM_IDS.values()))
def test_env_checker_passes(env_id: str) -> None:
    env = gymnasium.make(env_id)
    check_env(env.unwrapped, skip_render_check=True)
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)


def test_single_env_returns_final_observation_then_resets() -> None:
    env = gymnasium.make("robot_rl/Reach-v0", episode_length=3)
    obs, _ = env.reset(seed=0)
    for _ in range(3):
        obs, reward, terminated, truncated, info = env.step(np.zeros(7, np.float32))
        assert isinstance(reward, float) and isinstance(info["cost"], float)
    assert truncated and not terminated
    assert set(info["cost_terms"]) == {"joint_limit", "joint_velocity", "workspace",
                                       "table_contact"}
    obs2, _ = env.reset(seed=0)
    assert obs2.shape == obs.shape


def test_render_rgb_array() -> None:
    env = gymnasium.make("robot_rl/Lift-v0", render_mode="rgb_array")
    env.reset(seed=0)
    frame = env.render()
    assert frame.shape == (480, 640, 3) and frame.dtype == np.uint8 and frame.std() > 10
    env.close()


def test_vector_env_same_step_autoreset() -> None:
    venv = RobotRLVectorEnv("push", 4, episode_length=5)
    assert venv.metadata["autoreset_mode"] == gymnasium.vector.AutoresetMode.SAME_STEP
    obs, _ = venv.reset(seed=0)
    assert venv.observation_space.contains(obs)
    for t in range(5):
        obs, reward, terminated, truncated, infos = venv.step(venv.action_space.sample())
        assert reward.shape == (4,) and infos["cost"].shape == (4,)
        assert ("final_obs" in infos) == (t == 4)
    assert truncated.all() and infos["_final_obs"].all()
    final = np.stack(infos["final_obs"])
    assert final.shape == obs.shape and not np.array_equal(final, obs)


def test_cleanrl_style_loop() -> None:
    """The loop CleanRL's SAC runs: real next obs from final_obs where an env finished. The
    final observation belongs to the episode that ended (its target is the one the env was
    reaching), the returned one to the next (a new target)."""
    envs = RobotRLVectorEnv("reach", 3, episode_length=4)
    start = 0
    for name, width in envs.env.obs_layout:
        if name == "target":
            break
        start += width
    target = slice(start, start + 3)
    obs, _ = envs.reset(seed=1)
    ended = 0
    for _ in range(9):
        actions = np.array([envs.single_action_space.sample() for _ in range(envs.num_envs)])
        next_obs, rewards, terminations, truncations, infos = envs.step(actions)
        real_next_obs = next_obs.copy()
        for idx, trunc in enumerate(truncations):
            if trunc:
                real_next_obs[idx] = infos["final_obs"][idx]
                ended += 1
        for idx in range(envs.num_envs):
            np.testing.assert_array_equal(real_next_obs[idx, target], obs[idx, target])
            if truncations[idx]:
                assert not np.array_equal(next_obs[idx, target], obs[idx, target])
            else:
                np.testing.assert_array_equal(real_next_obs[idx], next_obs[idx])
        obs = next_obs
    assert ended == 2 * envs.num_envs  # steps 4 and 8


def test_stable_baselines3_sac_trains_on_the_env() -> None:
    """SB3's SAC collects from the env and takes gradient steps: its replay buffer holds the
    env's transitions and its actor's weights move."""
    sb3 = pytest.importorskip("stable_baselines3")
    import torch

    env = gymnasium.make("robot_rl/Reach-v0", episode_length=20)
    model = sb3.SAC("MlpPolicy", env, learning_starts=32, batch_size=32, verbose=0, seed=0)
    before = [p.detach().clone() for p in model.actor.parameters()]
    model.learn(64)
    assert model.replay_buffer.size() == 64
    rewards = model.replay_buffer.rewards[:64, 0]
    assert np.isfinite(rewards).all() and np.unique(rewards).size > 10  # dense, per step
    moved = [not torch.equal(a, b) for a, b in zip(before, model.actor.parameters(),
                                                   strict=True)]
    assert any(moved), "no gradient step reached the actor"
    action, _ = model.predict(env.reset(seed=0)[0], deterministic=True)
    assert env.action_space.contains(action)


@pytest.mark.parametrize("first", ["robot_rl", "gymnasium"])
def test_importing_robot_rl_registers_the_ids_whichever_is_imported_first(first) -> None:
    """``import robot_rl`` no longer imports gymnasium (a fifth of a second of every
    ``--help``): the ids are registered the moment gymnasium is imported, or at once where
    it was imported before."""
    import subprocess
    import sys

    second = "gymnasium.spaces" if first == "robot_rl" else "robot_rl"
    # a library's probe of whether gymnasium is installed runs no module: it must not spend
    # the registration
    code = (f"import importlib.util, sys\nimport {first}\n"
            f"lazy = 'gymnasium' not in sys.modules\nimportlib.util.find_spec('gymnasium')\n"
            f"import {second}\nimport gymnasium\n"
            f"print(lazy, all(i in gymnasium.registry for i in {list(GYM_IDS.values())!r}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == (["True", "True"] if first == "robot_rl" else ["False", "True"])
