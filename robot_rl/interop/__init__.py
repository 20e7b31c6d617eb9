"""Bridges between robot_rl's env protocol and other RL stacks' env surfaces.

    isaacgym.py       VecTaskAdapter: any VecEnv as an IsaacGymEnvs VecTask (skrl, rl_games);
                      IsaacGymVecEnv: an Isaac Gym VecTask as a VecEnv (our Runner on it)
    gymnasium_env.py  GymVecEnv: any gymnasium env (id, factory or vector env) as a VecEnv,
                      cost and success from its infos (our SAC and safety critic on it)
"""

from __future__ import annotations

from robot_rl.interop.gymnasium_env import GymVecEnv
from robot_rl.interop.isaacgym import IsaacGymVecEnv, VecTaskAdapter

__all__ = ["GymVecEnv", "IsaacGymVecEnv", "VecTaskAdapter"]
