"""Offline-to-online fine-tuning from demonstrations (RLPD, WSRL) with the safety critic, in
simulation and on the robot.

    configs.py  FinetuneConfig, CalQLConfig, DSRLConfig, ResidualConfig, the recipes' SAC
                defaults (no torch: --help reads them)
    runner.py   FinetuneRunner (the SAC runner with demonstrations)
    calql.py    Cal-QL, WSRL's offline regularizer
    demos.py    datasets into replay buffers (checked against the env's task)
    dsrl.py     DSRL: SAC over a flow policy's noise (NoiseActionEnv, DSRLRunner)
    residual.py a bounded residual on a flow policy (ResidualEnv, ResidualRunner, ...)
    residual_base.py  the flow as its base: acting, along demonstrations, executed-action critics
    macro_step.py  one step of a wrapper env made of several control steps (MacroStepEnv)
    robot/      fine-tuning on the robot (HIL-SERL): the robot actor, its online loop and
                learner, on robot_rl.cluster's driver
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from robot_rl.lazy import lazy_exports

if TYPE_CHECKING:
    from robot_rl.finetune.configs import DSRLConfig, FinetuneConfig
    from robot_rl.finetune.dsrl import DSRLRunner, NoiseActionEnv
    from robot_rl.finetune.runner import FinetuneRunner, mixed_batch

_EXPORTS = {
    "DSRLConfig": "robot_rl.finetune.configs",
    "DSRLRunner": "robot_rl.finetune.dsrl",
    "NoiseActionEnv": "robot_rl.finetune.dsrl",
    "FinetuneConfig": "robot_rl.finetune.configs",
    "FinetuneRunner": "robot_rl.finetune.runner",
    "mixed_batch": "robot_rl.finetune.runner",
}
"""Where each exported name lives; imported on first use (``robot_rl.lazy``)."""

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = ["DSRLConfig", "DSRLRunner", "FinetuneConfig", "FinetuneRunner", "NoiseActionEnv",
           "mixed_batch"]
