"""The ``pusher`` task against gymnasium's Pusher-v5, from the same state with the same actions.

Reference: ``gymnasium.make("Pusher-v5")``. Tolerance: the physics state is compared
bitwise; observations and rewards within float32 rounding (ours are float32).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from robot_rl.sim import make_env

gymnasium = pytest.importorskip("gymnasium")


def test_pusher_matches_gymnasium_pusher_v5() -> None:
    pytest.importorskip("imageio")  # gymnasium's MuJoCo envs need it (the bench extra)
    env = make_env("pusher", 2)
    env.reset(seed=0)
    ref = gymnasium.make("Pusher-v5").unwrapped
    ref.reset(seed=0)
    ref.set_state(env.state.qpos[0].numpy().copy(), env.state.qvel[0].numpy().copy())
    rng = np.random.default_rng(0)
    for _ in range(99):  # one step short of the time-out, so env 0 is never reset
        action = rng.uniform(-1, 1, (2, 7)).astype(np.float32)
        obs, reward, *_ = env.step(torch.from_numpy(action))
        ref_obs, ref_reward, *_ = ref.step(2.0 * action[0])  # gymnasium's range is [-2, 2]
        assert np.array_equal(env.state.qpos[0].numpy(), ref.data.qpos)
        assert np.array_equal(env.state.qvel[0].numpy(), ref.data.qvel)
        np.testing.assert_allclose(obs[0].numpy(), ref_obs.astype(np.float32), rtol=1e-6,
                                   atol=1e-6)
        assert float(reward[0]) == pytest.approx(ref_reward, rel=1e-5, abs=1e-5)
