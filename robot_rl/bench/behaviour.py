"""How a policy moves the arm in simulation: the shield's interventions per layer, joint
speed, acceleration and jerk, and success, for the scripted experts and exported artifacts,
with the motion profile of joint targets off and on (``benchmarks/behaviour.py``, which also
loads the artifacts).

Every count is of control steps of the episodes measured (E envs x rounds x episode length;
an env's step that resets it is left out of the motion statistics). Joint acceleration and
jerk are finite differences of the joint speeds at the control rate.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch

from robot_rl.controllers import LAYERS, ActionConfig, MotionConfig

Act = Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor | None]]
"""Observations (E, O) -> (actions (E, A), hold (E,) bool or None)."""


@dataclasses.dataclass
class Behaviour:
    """What ``measure`` reports for one policy in one env."""

    episodes: int
    success: float
    """Share of the episodes that succeeded (the test held at their last step, as ``robot-rl
    eval`` counts)."""
    any_layer: float
    """Share of control steps with an intervention of any shield layer."""
    layers: dict[str, float]
    """Share of control steps each layer intervened in (the layers that did)."""
    speed_mean: float
    """Mean joint speed |qd| over joints and steps [rad/s]."""
    accel_p99: float
    """99th percentile of |qdd| over joints and steps [rad/s^2]."""
    jerk_rms: float
    """Root mean square of the joint jerk [rad/s^3]."""


class _ShieldTally:
    """The shield's interventions over control steps: per layer, and steps with any."""

    def __init__(self) -> None:
        self.counts = torch.zeros(len(LAYERS))
        self.any = 0.0

    def add(self, safety: dict[str, torch.Tensor]) -> None:
        """One step's ``info["safety"]`` ({layer: (E,) bool})."""
        flags = torch.stack([safety[name].cpu() for name in LAYERS])  # (L, E)
        self.counts += flags.sum(1)
        self.any += float(flags.any(0).sum())

    def layers(self, steps: int) -> dict[str, float]:
        """Share of ``steps`` each layer intervened in (the layers that did)."""
        return {name: float(c) / steps for name, c in zip(LAYERS, self.counts, strict=True)
                if c > 0}


@torch.no_grad()
def measure(env: Any, act: Act, start: Callable[[torch.Tensor], None], rounds: int,
            seed: int) -> Behaviour:
    """Run ``rounds`` x num_envs episodes of ``act`` in ``env`` (each round reset with seed
    ``seed + round``; ``start`` gets the (E,) mask of envs that begin an episode)."""
    E, T, dt = env.num_envs, env.max_episode_length, env.control_dt
    shield = _ShieldTally()
    success: list[bool] = []
    speeds, accels, jerks = [], [], []
    for r in range(rounds):
        obs = env.reset(seed=seed + r)
        start(torch.ones(E, dtype=torch.bool))
        qd = [env.state.joint_vel.clone()]
        for _ in range(T):
            action, hold = act(obs)
            obs, _, _, terminated, truncated, info = env.step(action, hold=hold)
            done = terminated | truncated
            start(done)
            shield.add(info["safety"])
            # the state after a reset is the next episode's: the episode's motion ends here
            qd.append(torch.where(done[:, None], torch.nan, env.state.joint_vel))
            if "episode" in info:
                ended = info["episode"]["done"].cpu()
                success += [bool(s) for s in info["episode"]["success"][ended].cpu()]
            if bool(done.all()):
                break
        v = torch.stack(qd)  # (T + 1, E, n); NaN after a reset
        a = (v[1:] - v[:-1]) / dt
        j = (a[1:] - a[:-1]) / dt
        speeds.append(v[v.isfinite()].abs())
        accels.append(a[a.isfinite()].abs())
        jerks.append(j[j.isfinite()])
    steps = rounds * T * E
    acc = torch.cat(accels)
    jerk = torch.cat(jerks)
    return Behaviour(
        episodes=len(success), success=sum(success) / max(len(success), 1),
        any_layer=shield.any / steps, layers=shield.layers(steps),
        speed_mean=float(torch.cat(speeds).mean()),
        accel_p99=float(torch.quantile(acc[torch.randperm(len(acc))[:1_000_000]], 0.99)),
        jerk_rms=float(jerk.square().mean().sqrt()))


def expert_policy(task: str, style: str, motion: bool, num_envs: int, seed: int,
                  action: ActionConfig | None = None, episode_length: int | None = None,
                  control_hz: float | None = None, ramp: bool = False
                  ) -> tuple[Any, Act, Callable[[Any], None]]:
    """(env, act, start) of ``task``'s scripted expert in ``style`` with the motion profile
    on or off (``action``, ``episode_length``, ``control_hz``: other than the task's own;
    ``ramp``: joint commands ramped over each step)."""
    from robot_rl.sim import make_env, make_task_config
    from robot_rl.sim.experts import make_expert
    from robot_rl.sim.tasks.config import decimation_for

    extra: dict[str, Any] = {} if action is None else {"action": action}
    if episode_length is not None:
        extra["episode_length"] = episode_length
    if control_hz is not None:
        extra["decimation"] = decimation_for(control_hz, make_task_config(task).physics_dt)
    env = make_env(task, num_envs, seed=seed, motion=MotionConfig(enabled=motion, ramp=ramp),
                   **extra)
    expert = make_expert(env, style, seed=seed)  # type: ignore[arg-type]
    return env, (lambda _: (expert(env.state), None)), (lambda _: None)


@dataclasses.dataclass
class Hold:
    """What ``hold`` reports: one long episode per env, success judged at its end."""

    goals: int
    held: int
    """Envs in success (the task's test) at the episode's last step."""
    final_error: list[float]
    """Per env, the task's distance at the end [m] (reach: end effector to target)."""
    layers: dict[str, float]
    """Share of steps each shield layer intervened in (the layers that did)."""
    any_layer: float
    """Share of steps with any shield intervention."""


@torch.no_grad()
def hold(env: Any, act: Act, start: Callable[[torch.Tensor], None], seed: int,
         distance: Callable[[Any], torch.Tensor]) -> Hold:
    """One episode of ``env.max_episode_length`` control steps per env (all but the step
    that would reset it); ``distance(env)``: (E,) the task's error at the end."""
    E, T = env.num_envs, env.max_episode_length
    obs = env.reset(seed=seed)
    start(torch.ones(E, dtype=torch.bool))
    shield = _ShieldTally()
    success = torch.zeros(E, dtype=torch.bool)
    for _ in range(T - 1):
        action, h = act(obs)
        obs, _, _, _, _, info = env.step(action, hold=h)
        shield.add(info["safety"])
        success = info["success"].bool().cpu()
    steps = (T - 1) * E
    return Hold(goals=E, held=int(success.sum()),
                final_error=[round(float(d), 4) for d in distance(env)],
                layers={k: round(v, 4) for k, v in shield.layers(steps).items()},
                any_layer=shield.any / steps)
