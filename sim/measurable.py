"""Which observation terms a real robot can compute: those that depend only on what it
measures (its joint state), on what it is told (the goal) and on its own last actions.

    unmeasured_terms(env)      # e.g. ["puck_pos", "puck_to_goal"] for push

The probe moves everything else in one env (the objects' and other joints' positions and
velocities, the mocap markers), recomputes the kinematics, and names each term whose value
changed; the env's state is restored afterwards. Two users, one rule: the deploy side refuses
tasks whose observation has such terms (``hardware.observation.TaskObserver``), and an env
with cameras gives its policy only the other terms, next to the images (the objects are in
the pixels), while the critic keeps them all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from robot_rl.sim.scene_env import SceneEnv


def unmeasured_terms(env: SceneEnv, env_id: int = 0) -> list[str]:
    """Names of the task's observation terms that depend on state the robot does not
    measure, probed at env ``env_id``'s current state (see module docstring)."""
    s, cfg, b = env.state, env.cfg, env.backend
    ids = torch.tensor([env_id], dtype=torch.long, device=env.device)
    terms = env.observation_terms

    def values() -> dict[str, torch.Tensor]:
        return {n: f(s, cfg)[env_id].clone() for n, f in terms.items()}

    before = values()
    saved = (s.qpos[env_id].clone(), s.qvel[env_id].clone(), b.mocap_pos[env_id].clone())
    arm_q = {int(s.model.joint(j).qposadr[0]) for j in s.robot.joint_names}
    others = [i for i in range(s.qpos.shape[1]) if i not in arm_q]
    gen = torch.Generator().manual_seed(1)
    bump = 0.05 + 0.1 * torch.rand(len(others), generator=gen, dtype=torch.float64)
    s.qpos[env_id, others] += bump.to(s.qpos.device, s.qpos.dtype)
    arm_v = set(s.joint_dofs)
    s.qvel[env_id, [i for i in range(s.qvel.shape[1]) if i not in arm_v]] += 0.3
    b.mocap_pos[env_id] += 0.05
    b.forward(ids)
    after = values()
    s.qpos[env_id] = saved[0]
    s.qvel[env_id] = saved[1]
    b.mocap_pos[env_id] = saved[2]
    b.forward(ids)
    return [n for n in terms if not torch.allclose(before[n], after[n])]
