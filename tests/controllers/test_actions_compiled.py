"""The compiled action layers (controllers/actions_compiled.py) against the array reference:
the same actions and flags, bit for bit, with every layer firing."""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from robot_rl.controllers.configs import EEPoseConfig, OSCConfig
from robot_rl.sim import make_env


def _batch(rng: np.random.Generator, e: int, a: int) -> tuple[np.ndarray, np.ndarray]:
    action = rng.uniform(-1.6, 1.6, (e, a))
    action[rng.random((e, a)) < 0.03] = np.nan
    action[rng.random((e, a)) < 0.01] = np.inf
    prev = rng.uniform(-1.0, 1.0, (e, a))
    return action, prev


def test_the_compiled_action_layers_match_the_reference() -> None:
    env = make_env("reach", 1, action=EEPoseConfig(gripper=False), controller=OSCConfig())
    shield = env.pipeline.shield
    assert shield.compiled and shield.cfg.max_action_delta is not None
    rng = np.random.default_rng(0)
    fired = {"nan_guard": 0, "action_bounds": 0, "rate_limit": 0}
    for e, dtype in ((1, np.float64), (1, np.float32), (7, np.float64), (64, np.float32)):
        for _ in range(80):
            action, prev = (x.astype(dtype) for x in _batch(rng, e, 6))
            got, got_hold, got_flags = shield.filter_action(action, prev)
            want, want_hold, want_flags = shield.filter_action_reference(action, prev)
            assert got.dtype == want.dtype == dtype
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(got_hold, want_hold)
            assert got_flags.keys() == want_flags.keys()
            for name, flag in want_flags.items():
                np.testing.assert_array_equal(got_flags[name], flag, err_msg=name)
                fired[name] += int(flag.sum())
    assert all(fired.values()), fired  # every layer acted on some of the samples

    # read-only, strided inputs take the same path without a new signature
    before = len(shield_signatures())
    action, prev = _batch(rng, 4, 12)
    action = action[:, ::2]
    prev = prev[:, ::2]
    prev.flags.writeable = False
    got = shield.filter_action(action, prev)[0]
    np.testing.assert_array_equal(got, shield.filter_action_reference(action, prev)[0])
    assert len(shield_signatures()) == before

    # without a rate limit (the shield off): no rate_limit flag, as the reference
    cfg = shield.cfg
    shield.cfg = dataclasses.replace(cfg, enabled=False)
    try:
        action, prev = _batch(rng, 3, 6)
        got_flags = shield.filter_action(action, prev)[2]
        assert got_flags.keys() == shield.filter_action_reference(action, prev)[2].keys() \
            == {"nan_guard", "action_bounds"}
    finally:
        shield.cfg = cfg

    # torch tensors take the reference
    t_action = torch.tensor([[2.0, 0.0, 0.0, 0.0, 0.0, 0.0]])
    out, _, flags = shield.filter_action(t_action, torch.zeros(1, 6))
    assert isinstance(out, torch.Tensor) and bool(flags["action_bounds"][0])


def shield_signatures() -> list:
    from robot_rl.controllers import actions_compiled

    return list(actions_compiled.filter_action.signatures)
