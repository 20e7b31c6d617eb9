"""Distillation: a teacher's behaviour into a student that deploys, by DAgger
(``robot_rl.distill.dagger``, the one loop of all three).

* ``state``: a trained actor (or a task's scripted expert) into a small MLP on the same
  observations: ``robot-rl distill`` of a SAC run.
* ``chunked``: a bc-flow, dsrl or residual run into a one-step student: ``robot-rl distill``
  of those runs.
* ``pixels``: a state teacher into a student that sees camera images and proprioception:
  ``robot-rl distill-pixels`` (its config ``pixel_config``, its evaluation ``pixel_eval``).

The state distillation's names are importable from here; the others from their modules
(they load the learners they distil).
"""

from robot_rl.distill.dagger import DaggerConfig
from robot_rl.distill.state import (
    DistillConfig,
    DistillReport,
    clone_expert,
    distill,
    fit_student,
    load_student,
    teacher_policy,
)

__all__ = ["DaggerConfig", "DistillConfig", "DistillReport", "clone_expert", "distill",
           "fit_student", "load_student", "teacher_policy"]
