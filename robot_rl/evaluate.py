"""Evaluation: run a policy for N whole episodes in a batched env and summarize them.

    result = evaluate(policy, env, episodes=50)      # policy(obs (E, O)) -> (action, hold|None)
    result.success_rate, result.cost_mean, result.interventions
    evaluate(policy, env, 50, episode_start=run.reset)   # a stateful policy (chunk queues)

Each env contributes its first finished episode per round, then all envs are reset for the
next round, so short (failed or terminated) episodes are not over-counted.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch

from robot_rl.algos.sac import SAC, ActStep
from robot_rl.sim.render import EnvRenderer, VideoWriter
from robot_rl.sim.vec_env import RolloutEnv, VecEnv

EvalPolicy = Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor | None]]


@dataclasses.dataclass
class EvalResult:
    """Summary of evaluation episodes."""

    episodes: int
    success_rate: float
    return_mean: float
    cost_mean: float
    """Mean episode cost (summed cost terms, steps in violation)."""
    length_mean: float
    interventions: dict[str, float]
    """Mean number of control steps per episode in which each shield layer acted."""
    gate_rejections: float
    """Mean number of steps per episode in which the gate rejected every candidate."""

    def metrics(self, prefix: str = "eval") -> dict[str, float]:
        """Namespaced scalars for logging."""
        out = {f"{prefix}/success_rate": self.success_rate,
               f"{prefix}/return": self.return_mean, f"{prefix}/episode_cost": self.cost_mean,
               f"{prefix}/episode_length": self.length_mean,
               f"{prefix}/gate_rejections": self.gate_rejections}
        out.update({f"{prefix}/shield_{k}": v for k, v in self.interventions.items()})
        return out


def module_policy(module: Callable[[torch.Tensor], torch.Tensor]) -> EvalPolicy:
    """An EvalPolicy for a module that maps observations to actions and never holds."""

    def act(obs: torch.Tensor) -> tuple[torch.Tensor, None]:
        return module(obs), None

    return act


@torch.no_grad()
def evaluate(policy: EvalPolicy, env: RolloutEnv, episodes: int, seed: int = 0,
             video: VideoWriter | None = None, renderer: EnvRenderer | None = None,
             gate_rejected: Callable[[], torch.Tensor] | None = None,
             episode_start: Callable[[torch.Tensor], None] | None = None,
             on_episodes: Callable[[int, float], None] | None = None) -> EvalResult:
    """Run ``episodes`` episodes of ``policy`` in ``env`` (any ``VecEnv``, or any env with the
    members of ``RolloutEnv``; see module docstring).

    ``gate_rejected``, if given, returns the (E,) rejection flags of the last decision.
    ``episode_start``, if given, is told which envs (E,) bool start a new episode: all of
    them after each reset, and those that finished after each step (a stateful policy,
    such as a queue of action chunks, forgets their past).
    ``on_episodes``, if given, is told the episodes counted so far and their success rate
    whenever an episode ends (a progress display).
    """
    E = env.num_envs
    returns: list[float] = []
    costs: list[float] = []
    lengths: list[float] = []
    success: list[bool] = []
    rejections = 0.0
    interventions: dict[str, float] = {}
    rounds = 0
    while len(returns) < episodes:
        obs = env.reset(seed=seed + rounds)
        rounds += 1
        active = torch.ones(E, dtype=torch.bool)  # env is still in its counted episode
        if episode_start is not None:
            episode_start(torch.ones(E, dtype=torch.bool, device=obs.device))
        while bool(active.any()):
            action, hold = policy(obs)
            if gate_rejected is not None:
                rejections += float((gate_rejected().cpu() & active).sum())
            obs, _, _, terminated, truncated, info = env.step(action, hold=hold)
            if episode_start is not None:
                episode_start(terminated | truncated)
            for name, flag in info.get("safety", {}).items():
                interventions[name] = interventions.get(name, 0.0) + float(
                    (flag.cpu() & active).sum())
            if video is not None and renderer is not None:
                video.add(renderer.render)
            if "episode" not in info:
                continue
            ep = info["episode"]
            done = ep["done"].cpu() & active
            for i in done.nonzero().squeeze(1).tolist():
                if len(returns) < episodes:
                    returns.append(float(ep["return"][i]))
                    costs.append(float(ep["cost"][i]))
                    lengths.append(float(ep["length"][i]))
                    success.append(bool(ep["success"][i]))
            if on_episodes is not None and bool(done.any()):
                on_episodes(len(returns), sum(success) / len(success))
            active &= ~done
    # Per-step counts cover every env's episode of each round; normalize by those episodes.
    ran = rounds * E
    n = len(returns)
    return EvalResult(
        episodes=n, success_rate=sum(success) / n, return_mean=sum(returns) / n,
        cost_mean=sum(costs) / n, length_mean=sum(lengths) / n,
        interventions={k: v / ran for k, v in interventions.items()},
        gate_rejections=rejections / ran)


def evaluate_agent(agent: SAC, env: VecEnv, episodes: int, seed: int = 0,
                   gate: bool | None = None, **kwargs: Any) -> EvalResult:
    """Evaluate the agent's deterministic (mean) policy, screened by the safety critic's
    gate as the exported artifact screens it when its safety mode gates (``gate``: force
    the gate on or off)."""
    return evaluate_decisions(lambda obs: agent.act(obs, deterministic=True, gate=gate), env,
                              episodes, seed=seed, **kwargs)


def evaluate_decisions(decide: Callable[[torch.Tensor], ActStep], env: VecEnv, episodes: int,
                       seed: int = 0, **kwargs: Any) -> EvalResult:
    """Evaluate a policy that makes an agent's decisions (``ActStep``: actions, holds, gate
    rejections) from each observation; the rejections are counted."""
    last: dict[str, torch.Tensor] = {}

    def policy(obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        step = decide(obs)
        last["rejected"] = step.rejected
        return step.action, step.hold if bool(step.hold.any()) else None

    return evaluate(policy, env, episodes, seed=seed,
                    gate_rejected=lambda: last["rejected"], **kwargs)
