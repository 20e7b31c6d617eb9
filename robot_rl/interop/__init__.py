"""Bridges between robot_rl's env protocol and other RL stacks' env surfaces.

    isaacgym.py   VecTaskAdapter: any VecEnv as an IsaacGymEnvs VecTask (skrl, rl_games);
                  IsaacGymVecEnv: an Isaac Gym VecTask as a VecEnv (our Runner on it)
"""

from __future__ import annotations

from robot_rl.interop.isaacgym import IsaacGymVecEnv, VecTaskAdapter

__all__ = ["IsaacGymVecEnv", "VecTaskAdapter"]
