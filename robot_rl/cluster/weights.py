"""The acting part of an agent's state: what an actor needs to decide as the learner would.

An actor acts with ``SAC.act``: the policy network, the observation normalizer and, where the
safety gate is on, the critics and the safety critic (the gate ranks candidate actions by
value and estimated cost). Target networks, optimizers and the Lagrange multiplier stay with
the learner. Tensors are CPU copies, so the state pickles the same from a GPU learner.

    state = acting_state(learner.agent)        # {name: tensor}, about 3 MB for RLPD's 10 critics
    load_acting_state(actor_agent, state)
"""

from __future__ import annotations

import torch

from robot_rl.algos import SAC

_LEARNER_ONLY = ("critic_target.", "cost_critic.q_target.")


def acting_state(agent: SAC) -> dict[str, torch.Tensor]:
    """CPU copies of the tensors ``agent.act`` reads (see the module docstring)."""
    return {k: v.detach().to("cpu", copy=True) for k, v in agent.state_dict().items()
            if not k.startswith(_LEARNER_ONLY)}


def load_acting_state(agent: SAC, state: dict[str, torch.Tensor]) -> None:
    """Copy ``state`` (from ``acting_state`` of an agent of the same config) into ``agent``."""
    missing, unexpected = agent.load_state_dict(state, strict=False)
    missing = [k for k in missing if not k.startswith(_LEARNER_ONLY)]
    if missing or unexpected:
        raise ValueError(f"acting state does not fit this agent: missing {missing[:4]}, "
                         f"unexpected {unexpected[:4]}")
