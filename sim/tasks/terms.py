"""Term functions shared by the tasks: safety costs, common observations and rewards.

Every term is a pure function ``(state, cfg) -> Tensor`` over the batch (E = num_envs).
The safety cost terms return a bool (E,): 1 while their condition holds, 0 otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from robot_rl.sim.state import SimState
from robot_rl.sim.tasks.base import Term
from robot_rl.sim.tasks.config import TaskConfig

# -- safety costs ---------------------------------------------------------------------------


def cost_joint_limit(state: SimState, cfg: TaskConfig) -> torch.Tensor:
    """Any arm joint within ``safety.joint_limit_margin`` of a position limit."""
    lim = state.limits
    return ((state.joint_pos - lim.q_soft_mid).abs() > lim.q_soft_half).any(dim=1)


def cost_joint_velocity(state: SimState, cfg: TaskConfig) -> torch.Tensor:
    """Any arm joint faster than ``safety.velocity_fraction`` of its velocity limit."""
    return (state.joint_vel.abs() > state.limits.qd_soft).any(dim=1)


def cost_workspace(state: SimState, cfg: TaskConfig) -> torch.Tensor:
    """End effector outside the workspace box."""
    lim = state.limits
    return ((state.sensors["ee_pos"] - lim.ws_mid).abs() > lim.ws_half).any(dim=1)


def cost_table_contact(state: SimState, cfg: TaskConfig) -> torch.Tensor:
    """Net arm-table contact force above ``safety.table_force_limit``."""
    f = state.sensors["arm_table_force"]
    return (f * f).sum(dim=1) > state.limits.table_force_sq


SAFETY_COSTS: dict[str, Term] = {
    "joint_limit": cost_joint_limit,
    "joint_velocity": cost_joint_velocity,
    "workspace": cost_workspace,
    "table_contact": cost_table_contact,
}

# -- observations ---------------------------------------------------------------------------


def obs_joint_pos(state: SimState, cfg: TaskConfig) -> torch.Tensor:
    """(E, n) joint positions relative to the home pose."""
    return state.joint_pos - state.limits.home


def obs_joint_vel(state: SimState, cfg: TaskConfig) -> torch.Tensor:
    """(E, n) joint velocities."""
    return state.joint_vel


def obs_ee_pos(state: SimState, cfg: TaskConfig) -> torch.Tensor:
    """(E, 3) end-effector position."""
    return state.sensors["ee_pos"]


def obs_last_action(state: SimState, cfg: TaskConfig) -> torch.Tensor:
    """(E, A) the action applied at the last step."""
    return state.action


def obs_prev_action(state: SimState, cfg: TaskConfig) -> torch.Tensor:
    """(E, A) the action of the step before the last (``TaskConfig.observe_prev_action``)."""
    return state.prev_action


# -- rewards --------------------------------------------------------------------------------


def reward_action_rate(state: SimState, cfg: TaskConfig) -> torch.Tensor:
    """-||a_t - a_{t-1}||^2: discourages jerky actions."""
    d = state.action - state.prev_action
    return -(d * d).sum(dim=1)


def reward_joint_vel(state: SimState, cfg: TaskConfig) -> torch.Tensor:
    """-||qd||^2 [rad^2/s^2]: an arm that has arrived stops, in every joint (its null space
    included, which the end-effector terms do not see)."""
    qd = state.joint_vel
    return -(qd * qd).sum(dim=1)


def reward_shield(state: SimState, cfg: TaskConfig) -> torch.Tensor:
    """-1 in a control step whose motion a shield layer reshaped (``MOTION_LAYERS``), else
    0: a policy that leans on the shield (presses its hand on the floor layer, asks for
    speeds the velocity layer cuts) pays for it, so the shield stays a safety net (issue
    48). The action's own checks (NaN, bounds, rate limit) are not counted: exploration
    noise sets off the rate limit by itself (half of a near-uniform policy's steps), and a
    penalty for it taught SAC to keep still; ``action_rate`` is the term for jumpy actions."""
    return -state.shield_active.to(state.dtype)


def reward_posture(state: SimState, cfg: TaskConfig) -> torch.Tensor:
    """-||q - q_home||^2 [rad^2]: a slope towards the home posture where the task's terms are
    flat (a 7-joint arm's null space)."""
    d = state.joint_pos - state.limits.home
    return -(d * d).sum(dim=1)


def indicator(condition: Term) -> Term:
    """A reward term that is 1 while ``condition`` (a bool term, e.g. success) holds."""

    def term(state: SimState, cfg: TaskConfig) -> torch.Tensor:
        return condition(state, cfg).to(state.dtype)

    term.__doc__ = f"1 while {condition.__name__} holds."
    return term


def fell_off_table(sensor: str) -> Term:
    """A termination term: the object whose position sensor is ``sensor`` fell off the table."""

    def term(state: SimState, cfg: TaskConfig) -> torch.Tensor:
        return state.sensors[sensor][:, 2] < -0.05

    term.__doc__ = f"{sensor} is below the table top."
    return term


def closeness(dist: torch.Tensor, scale: float = 0.1) -> torch.Tensor:
    """1 at zero distance, falling smoothly to 0 beyond a few ``scale`` [m]."""
    return 1.0 - torch.tanh(dist / scale)


def uniform_away(state: SimState, lo: Sequence[float], hi: Sequence[float], n: int,
                 gen: torch.Generator, ref: torch.Tensor, min_distance: float) -> torch.Tensor:
    """(n, k) samples uniform in the box [lo, hi], each at least ``min_distance`` from its
    reference point ``ref`` ((n, k), or (k,) for all rows). Batched rejection sampling: only
    the rows still too close are redrawn."""
    x = uniform(state, lo, hi, n, gen)
    close = torch.linalg.vector_norm(x - ref, dim=1) < min_distance
    while bool(close.any()):
        x = torch.where(close[:, None], uniform(state, lo, hi, n, gen), x)
        close = torch.linalg.vector_norm(x - ref, dim=1) < min_distance
    return x


def uniform(state: SimState, lo: Sequence[float], hi: Sequence[float], n: int,
            gen: torch.Generator) -> torch.Tensor:
    """(n, k) samples uniform in the box [lo, hi] (k corners each), in the state's dtype."""
    lo_t = torch.tensor(lo, dtype=state.dtype, device=state.device)
    hi_t = torch.tensor(hi, dtype=state.dtype, device=state.device)
    u = torch.rand((n, lo_t.shape[0]), generator=gen, device=state.device, dtype=state.dtype)
    return lo_t + (hi_t - lo_t) * u
