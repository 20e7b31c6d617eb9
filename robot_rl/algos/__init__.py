"""Learning algorithms: SAC with a safety critic, and the safety critic's action gate.

Training code; the deploy side imports only ``robot_rl.algos.gate`` (the gate the exported
cost critic screens actions with: array code, no networks). The names below are loaded on
first use, so importing the gate does not load the learners.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from robot_rl.algos.configs import SACConfig, SafetyConfig, SafetyMode
    from robot_rl.algos.gate import ActionGate, GateResult
    from robot_rl.algos.sac import SAC, ActStep

_WHERE = {"SAC": "sac", "ActStep": "sac", "SACConfig": "configs", "SafetyConfig": "configs",
          "SafetyMode": "configs", "ActionGate": "gate", "GateResult": "gate"}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'robot_rl.algos' has no attribute {name!r}")
    return getattr(importlib.import_module(f"robot_rl.algos.{_WHERE[name]}"), name)


__all__ = ["SAC", "ActStep", "ActionGate", "GateResult", "SACConfig", "SafetyConfig",
           "SafetyMode"]
