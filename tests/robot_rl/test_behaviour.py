"""The behaviour benchmark's measurement (robot_rl.bench.behaviour) on a scripted env whose
joint speeds, shield flags and success are known: every figure by hand."""

from __future__ import annotations

import types

import torch

from robot_rl.bench.behaviour import measure
from robot_rl.controllers import LAYERS


class _Env:
    """One env, one joint, 4-step episodes at 0.5 s per step: joint speeds 0, 1, 3, 6, 10
    (accelerations 2, 4, 6, 8; jerk 4, 4, 4); the joint-velocity layer intervenes at step 2
    and the table-floor layer at steps 2 and 3; the episode succeeds."""

    num_envs, max_episode_length, control_dt = 1, 4, 0.5
    SPEEDS = (0.0, 1.0, 3.0, 6.0, 10.0)

    def __init__(self) -> None:
        self.t = 0
        self.state = types.SimpleNamespace(joint_vel=torch.zeros(1, 1))

    def reset(self, seed: int) -> torch.Tensor:
        self.t = 0
        self.state.joint_vel = torch.tensor([[self.SPEEDS[0]]])
        return torch.zeros(1, 2)

    def step(self, action: torch.Tensor, hold: torch.Tensor | None = None) -> tuple:
        self.t += 1
        last = self.t == self.max_episode_length
        self.state.joint_vel = torch.tensor([[self.SPEEDS[self.t]]])
        safety = {name: torch.zeros(1, dtype=torch.bool) for name in LAYERS}
        safety["joint_velocity"][0] = self.t == 2
        safety["table_floor"][0] = self.t in (2, 3)
        info: dict = {"safety": safety}
        done = torch.tensor([last])
        if last:
            info["episode"] = {"done": done, "success": torch.tensor([True])}
        return torch.zeros(1, 2), None, None, torch.tensor([False]), done, info


def test_measure_by_hand() -> None:
    starts: list[bool] = []
    b = measure(_Env(), lambda obs: (torch.zeros(1, 1), None),
                lambda mask: starts.append(bool(mask[0])), rounds=2, seed=0)
    assert b.episodes == 2 and b.success == 1.0
    assert b.any_layer == 0.5  # steps 2 and 3 of 4
    assert b.layers == {"joint_velocity": 0.25, "table_floor": 0.5}
    # the last step resets the env: its speed (10) is the next episode's, left out
    assert abs(b.speed_mean - (0 + 1 + 3 + 6) / 4) < 1e-6
    assert abs(b.accel_p99 - 6.0) < 0.1  # |qdd| 2, 4, 6 per episode
    assert abs(b.jerk_rms - 4.0) < 1e-6  # (4 - 2) / 0.5, (6 - 4) / 0.5
    assert starts[0] and starts.count(True) == 4  # each round's reset, each episode's end
