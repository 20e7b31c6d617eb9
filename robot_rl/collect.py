"""Where an off-policy run's data comes from: its collector. ``Runner.train`` is the one loop
of every SAC-family run (SAC, pixel SAC, RLPD / WSRL, DSRL, the residual fine-tuner,
HIL-SERL on the robot); what differs between training in one process, on Ray's
env-runners and from the robot is the collector it is given:

    runner.train()                              # LocalCollector: the runner's own VecEnv,
                                                # its act and store (Runner.local_collector)
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
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import torch

from robot_rl.sim.vec_env import VecEnv
from robot_rl.train_session import Episodes, TrainSession, rejected_count, step_sums


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


Act = Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]]
"""A decision for observations (E, O): (action (E, A), hold (E,) or None, rejected (E,) or
None); the runner's warm-up or its agent's gated decision."""
Store = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor,
                  torch.Tensor, dict[str, Any], torch.Tensor | None], None]
"""Store a step: (obs, action, reward, cost, terminated, truncated, info, keep (E,) or
None: all)."""


class LocalCollector:
    """One ``VecEnv``, one vector step per round: ``act`` decides (gated by the safety
    critic, or the warm-up), the env steps, ``store`` keeps the transitions;
    ``updates_per_step`` updates follow. ``restart(obs)`` starts the env afresh (``obs``:
    the observations it leaves, None at the start); with ``restart_after_eval`` (the env is
    the one evaluations run on) it does so after each evaluation."""

    def __init__(self, env: VecEnv, *, act: Act, store: Store,
                 restart: Callable[[torch.Tensor | None], torch.Tensor], updates_per_step: int,
                 holds: bool, restart_after_eval: bool = False):
        self.env, self.act, self.store, self.restart = env, act, store, restart
        self.updates_per_step = updates_per_step
        self.holds = holds
        """Whether the gate may ask envs to hold (its fallback): else the hold mask is all
        false and the step stores every transition, with no mask to compact on the host."""
        self.restart_after_eval = restart_after_eval
        self.per_step = env.num_envs * int(getattr(env, "steps_per_step", 1))  # control steps
        self.obs = torch.zeros(0)

    def begin(self, session: TrainSession) -> None:
        self.obs = self.restart(None)

    def collect(self) -> Collected:
        obs = self.obs
        action, hold, rejected = self.act(obs)
        if not self.holds:
            hold = None
        next_obs, reward, cost, terminated, truncated, info = self.env.step(action, hold)
        self.store(obs, action, reward, cost, terminated, truncated, info,
                   None if hold is None else ~hold)
        self.obs = next_obs
        episodes = None
        if "episode" in info:
            ep = info["episode"]
            episodes = Episodes(ep["return"], ep["cost"], ep["success"].float(), ep["done"])
        return Collected(int(cost.shape[0]), self.per_step, step_sums(info),
                         rejected_count(rejected), cost.sum().double(), episodes)

    def updates(self, got: Collected, ready: bool) -> int:
        return self.updates_per_step if ready else 0

    def learned(self, got: Collected, updates: int, session: TrainSession) -> None:
        pass

    def ticked(self, session: TrainSession) -> None:
        if session.evaluated and self.restart_after_eval:  # training episodes were cut
            self.obs = self.restart(self.obs)

    def end(self) -> None:
        pass
