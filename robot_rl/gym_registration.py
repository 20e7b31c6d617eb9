"""Registers the gymnasium ids ``robot_rl/<Task>-v0`` (entry points only, nothing heavy)."""

from __future__ import annotations

GYM_IDS = {"reach": "robot_rl/Reach-v0", "push": "robot_rl/Push-v0", "lift": "robot_rl/Lift-v0"}


def register_all() -> None:
    import gymnasium

    for task, env_id in GYM_IDS.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point="robot_rl.sim.gym:RobotRLEnv",
                               kwargs={"task": task}, disable_env_checker=True)
