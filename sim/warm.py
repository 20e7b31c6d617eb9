"""Compile the numba kernels of the control path (the shield, the joint-target and action
layers, the OSC law, the CPU backend's arm kinematics) into numba's on-disk cache, so the
first env, control loop or test loads them instead of compiling them for seconds.
``make setup`` runs it once after installing.

    python -m robot_rl.sim.warm
"""

from __future__ import annotations

import time
from typing import Any

import torch

from robot_rl.controllers import EEDeltaConfig, EEPoseConfig, OSCConfig
from robot_rl.controllers.configs import DiffIKConfig
from robot_rl.sim import make_env


def warm() -> float:
    """Build and step one env of every arm task with each controller family; the seconds it
    took (compiling, or loading from the cache)."""
    start = time.perf_counter()
    setups: list[dict[str, Any]] = [
        {}, {"action": EEPoseConfig(), "controller": OSCConfig()},
        {"action": EEDeltaConfig(), "controller": DiffIKConfig()}]
    for task in ("reach", "push", "lift"):
        for overrides in setups:
            env = make_env(task, 2, **overrides)
            env.reset(seed=0)
            for _ in range(3):
                env.step(torch.zeros(env.num_envs, env.act_dim))
    return time.perf_counter() - start


if __name__ == "__main__":
    print(f"numba kernels compiled or loaded from the cache in {warm():.1f} s")
