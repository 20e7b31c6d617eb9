"""Offline-to-online fine-tuning from demonstrations (RLPD, WSRL) with the safety critic, in
simulation and on the robot.

    runner.py   FinetuneConfig and FinetuneRunner (the SAC runner with demonstrations)
    calql.py    Cal-QL, WSRL's offline regularizer
    demos.py    datasets into replay buffers (checked against the env's task)
    dsrl.py     DSRL: SAC over a flow policy's noise (NoiseActionEnv, DSRLConfig, DSRLRunner)
    residual.py a bounded residual on a flow policy (ResidualEnv, ResidualConfig, ...)
    residual_base.py  the flow as its base: acting, along demonstrations, executed-action critics
    macro_step.py  one step of a wrapper env made of several control steps (MacroStepEnv)
    robot/      fine-tuning on the robot (HIL-SERL): the robot actor, its online loop and
                learner, on robot_rl.cluster's driver
"""

from __future__ import annotations

from robot_rl.finetune.dsrl import DSRLConfig, DSRLRunner, NoiseActionEnv
from robot_rl.finetune.runner import FinetuneConfig, FinetuneRunner, mixed_batch

__all__ = ["DSRLConfig", "DSRLRunner", "FinetuneConfig", "FinetuneRunner", "NoiseActionEnv",
           "mixed_batch"]
