"""Offline-to-online fine-tuning from demonstrations (RLPD, WSRL) with the safety critic.

    runner.py   FinetuneConfig and FinetuneRunner (the SAC runner with demonstrations)
    demos.py    datasets into replay buffers (checked against the env's task)
"""

from __future__ import annotations

from robot_rl.finetune.runner import FinetuneConfig, FinetuneRunner, mixed_batch

__all__ = ["FinetuneConfig", "FinetuneRunner", "mixed_batch"]
