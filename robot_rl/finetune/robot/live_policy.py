"""A policy the deploy runtime runs while a learner replaces its weights.

    policy = LivePolicy(cfg, meta, acting_state(agent), version=0)
    runtime = DeployRuntime(policy, robot)           # as with an exported artifact
    policy.swap(new_state, version=1)                # from any thread, while the loop runs

It has the members the runtime reads from an exported ``Policy``: ``meta`` (the task half of
policy.json: robot, observation layout, action space, control, shield), the dims,
``__call__(obs) -> action`` and ``gate(obs, action)`` (the safety critic's screening, with
the learner's candidates and threshold; like the artifact's gate, it keeps the policy's own
action whenever that is under the threshold). Acting samples the SAC policy (exploration, as
online training in sim does) unless ``stochastic=False``.

A swap never waits for the control loop and the loop never waits for a swap: the caller's
thread builds a complete new agent from the state and then replaces one reference, which the
loop reads once per policy step (``__call__`` and the ``gate`` that follows it use the same
agent).
"""

from __future__ import annotations

import copy
import dataclasses
import time
from typing import Any

import numpy as np
import torch

from robot_rl.algos import SAC
from robot_rl.cluster.weights import load_acting_state
from robot_rl.runner import make_agent
from robot_rl.train_config import TrainConfig


class LivePolicy:
    """The learner's current policy, as the deploy runtime runs it (module docstring)."""

    images: list = []  # a state policy: it sees no cameras
    cameras: list[str] = []

    def __init__(self, cfg: TrainConfig, meta: dict[str, Any], state: dict[str, torch.Tensor],
                 version: int = 0, stochastic: bool = True, seed: int = 0):
        self.meta = meta
        self.obs_dim = int(meta["observation"]["dim"])
        self.act_dim = int(meta["action"]["dim"])
        self.stochastic = stochastic
        self.path = f"the live policy of run {cfg.run_name or cfg.task}"
        torch.manual_seed(seed)
        self._template = make_agent(dataclasses.replace(cfg, device="cpu"), self.obs_dim,
                                    self.act_dim)
        self._template.eval()
        self._agent = self._build(state)
        self._acting = self._agent
        self.version = version
        self.swaps = 0
        self.swap_times: list[float] = []
        """time.monotonic() of each swap."""

    @property
    def joint_names(self) -> list[str]:
        return list(self.meta["robot"]["joint_names"])

    @property
    def has_cost_critic(self) -> bool:
        return self._template.cost_critic is not None and self._template.safety_cfg.gate

    def _build(self, state: dict[str, torch.Tensor]) -> SAC:
        agent = copy.deepcopy(self._template)
        load_acting_state(agent, state)
        return agent

    def swap(self, state: dict[str, torch.Tensor], version: int) -> None:
        """Act with ``state`` from the next policy step on (any thread)."""
        agent = self._build(state)
        self._agent, self.version = agent, version  # one reference: the loop sees old or new
        self.swaps += 1
        self.swap_times.append(time.monotonic())

    @torch.no_grad()
    def __call__(self, obs: np.ndarray, images: dict[str, np.ndarray] | None = None
                 ) -> np.ndarray:
        """(O,) observation -> (A,) action in [-1, 1] (a sample, or the mean); a state
        policy, it is given no ``images``."""
        agent = self._acting = self._agent
        x = agent.normalize(torch.as_tensor(obs, dtype=torch.float32)[None])
        step = agent.decide(agent.gaussian_actor(x), x, deterministic=not self.stochastic,
                            gate=False)
        return step.action[0].numpy()

    @torch.no_grad()
    def gate(self, obs: np.ndarray, a: np.ndarray) -> tuple[np.ndarray, bool, bool]:
        """(action, hold, rejected): the safety critic's screening of ``a`` at ``obs``."""
        agent = self._acting
        x = agent.normalize(torch.as_tensor(obs, dtype=torch.float32)[None])
        dist = agent.gaussian_actor(x)
        # as the exported artifact's gate: the policy's own action whenever it is safe (a
        # critic still fitting the robot's first transitions must not pick among candidates)
        step = agent.gate_decision(torch.as_tensor(a, dtype=torch.float32)[None], dist, x,
                                   by_value=False)
        return step.action[0].numpy(), bool(step.hold[0]), bool(step.rejected[0])
