"""Helpers shared by the compiled-layer tests."""

from __future__ import annotations

import dataclasses

import numpy as np

from robot_rl.controllers.arm_state import ArmState


def stack(states: list[ArmState]) -> ArmState:
    """E single-arm states as one batch (the fields the first state has)."""
    fields = {f.name: np.concatenate([getattr(s, f.name) for s in states])
              for f in dataclasses.fields(ArmState)
              if not f.name.startswith("_") and getattr(states[0], f.name) is not None}
    return ArmState(**fields)
