"""Where an off-policy run's data comes from: its collector. ``Runner.train`` is the one loop
of every SAC-family run (SAC, pixel SAC, RLPD / WSRL, DSRL, the residual fine-tuner,
HIL-SERL on the robot); what differs between training in one process, on Ray's
env-runners and from the robot is the collector it is given:

    runner.train()                              # LocalCollector: the runner's own VecEnv
    runner.train(PoolCollector(runner, pool))   # robot_rl.cluster: rollouts of env-runners or
                                                # the robot actor
The loop, per round:

    got = collector.collect()                   # stored in the replay buffer; None: skip
    env_steps += got.env_steps; the session counts its transitions and episodes
    n = collector.updates(got, runner.ready_to_learn()); learn n times
    collector.learned(got, n, session)          # publish weights, ask for more, timings
    session.tick()                              # log, evaluate, stop rules, checkpoint
    collector.ticked(session)                   # an env shared with evaluation: reset
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np
import torch

from robot_rl.train_session import TrainSession, rejected_count, step_sums


@dataclasses.dataclass
class Episodes:
    """The training episodes that ended in a round: their returns, costs and successes,
    (N,) each, or (E,) each for E envs of which ``ended`` (E,) bool marks those whose episode
    ended (tensors that stay on the device: nothing is read back per round)."""

    returns: torch.Tensor
    costs: torch.Tensor
    successes: torch.Tensor
    ended: torch.Tensor | None = None
    """(E,) bool; None: every row ended."""

    @staticmethod
    def of(returns: Sequence[float], costs: Sequence[float],
           successes: Sequence[float]) -> Episodes:
        """Episodes from lists of numbers (a pool's rollout)."""
        def t(v: Sequence[float]) -> torch.Tensor:
            return torch.as_tensor(np.asarray(v, dtype=np.float64))

        return Episodes(t(returns), t(costs), t(successes))

    def mask(self) -> torch.Tensor:
        """(N,) bool: the rows whose episode ended."""
        if self.ended is None:
            return torch.ones(self.returns.shape, dtype=torch.bool, device=self.returns.device)
        return self.ended


@dataclasses.dataclass
class Collected:
    """One round of collection, already in the replay buffer."""

    transitions: int
    """Transitions (rows) collected."""
    env_steps: int
    """Control steps they count for (a macro step's wrapper counts its control steps)."""
    sums: Mapping[str, torch.Tensor | float]
    """Per-term sums of reward terms, cost terms and shield interventions (``step_sums``)."""
    rejected: torch.Tensor | float
    """Safety-gate rejections among them."""
    cost: torch.Tensor | float
    """Their summed constraint cost (a tensor: float64)."""
    episodes: Episodes | None = None
    """The episodes that ended; None: none reported."""
    source: Any = None
    """What the collector collected it from (a pool's rollout), for its own ``learned``."""


class Collector(Protocol):
    """A source of transitions for ``Runner.train`` (module docstring)."""

    def begin(self, session: TrainSession) -> None:
        """Before the first round, inside the session: say what collects, start it."""
        ...

    def collect(self) -> Collected | None:
        """One round's transitions, stored; None: nothing to learn from this round."""
        ...

    def updates(self, got: Collected, ready: bool) -> int:
        """Gradient updates owed for ``got`` (``ready``: past the runner's warm-up)."""
        ...

    def learned(self, got: Collected, updates: int, session: TrainSession) -> None:
        """After the round's updates."""
        ...

    def ticked(self, session: TrainSession) -> None:
        """After the session's tick, when training goes on."""
        ...

    def end(self) -> None:
        """After the loop (not on an exception)."""
        ...


class LocalCollector:
    """The runner's own ``VecEnv``, one vector step per round: the runner decides (gated by
    its safety critic, or its warm-up), the env steps, the runner stores; its
    ``updates_per_step`` updates follow. Where the runner evaluates on its training env,
    that env starts afresh after each evaluation."""

    def __init__(self, runner: Any):
        self.runner = runner
        env = runner.env
        self.shared_eval = runner.eval_env is env
        self.holds = runner.agent.safety_cfg.fallback == "hold"
        """Whether the gate may ask envs to hold (its fallback): else the hold mask is all
        false and the step stores every transition, with no mask to compact on the host."""
        self.per_step = env.num_envs * int(getattr(env, "steps_per_step", 1))  # control steps
        self.obs = torch.zeros(0)

    def begin(self, session: TrainSession) -> None:
        r = self.runner
        r.console.print(f"run dir: {r.run_dir}\n{r.env}\nsafety: {r.cfg.safety}  device: "
                        f"{r.cfg.device}  updates/step: {r.cfg.sac.updates_per_step}")
        self.obs = r.reset_env(r.cfg.seed + r.env_steps)

    def collect(self) -> Collected:
        r, obs = self.runner, self.obs
        action, hold, rejected = r.decide(obs)
        if not self.holds:
            hold = None
        next_obs, reward, cost, terminated, truncated, info = r.env.step(action, hold)
        r.store(obs, action, reward, cost, terminated, truncated, info,
                None if hold is None else ~hold)
        self.obs = next_obs
        episodes = None
        if "episode" in info:
            ep = info["episode"]
            episodes = Episodes(ep["return"], ep["cost"], ep["success"].float(), ep["done"])
        return Collected(int(cost.shape[0]), self.per_step, step_sums(info),
                         rejected_count(rejected), cost.sum().double(), episodes)

    def updates(self, got: Collected, ready: bool) -> int:
        return self.runner.cfg.sac.updates_per_step if ready else 0

    def learned(self, got: Collected, updates: int, session: TrainSession) -> None:
        pass

    def ticked(self, session: TrainSession) -> None:
        r = self.runner
        if session.evaluated and self.shared_eval:  # training episodes were cut: afresh
            r.cut_chains(self.obs)
            self.obs = r.reset_env(r.cfg.seed + r.env_steps)

    def end(self) -> None:
        pass
