"""Learning algorithms (training code: the deploy side never imports this package)."""

from __future__ import annotations

from robot_rl.algos.sac import SAC, ActStep, SACConfig
from robot_rl.algos.safety_critic import SafetyConfig, SafetyMode

__all__ = ["SAC", "ActStep", "SACConfig", "SafetyConfig", "SafetyMode"]
