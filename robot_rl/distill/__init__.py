"""Distillation: a teacher's behaviour into a student that deploys, by DAgger
(``robot_rl.distill.dagger``, the one loop of all three).

* ``state``: a trained actor (or a task's scripted expert) into a small MLP on the same
  observations: ``robot-rl distill`` of a SAC run.
* ``chunked``: a bc-flow, dsrl or residual run into a one-step student: ``robot-rl distill``
  of those runs.
* ``pixels``: a state teacher into a student that sees camera images and proprioception:
  ``robot-rl distill-pixels`` (its evaluation ``pixel_eval``; every config in ``configs``).

The state distillation's names are importable from here; the others from their modules
(they load the learners they distil).
"""

from typing import TYPE_CHECKING

from robot_rl.lazy import lazy_exports

if TYPE_CHECKING:
    from robot_rl.distill.configs import DaggerConfig, DistillConfig
    from robot_rl.distill.state import (
        DistillReport,
        clone_expert,
        distill,
        fit_student,
        load_student,
        teacher_policy,
    )

_EXPORTS = {
    "DaggerConfig": "robot_rl.distill.configs",
    "DistillConfig": "robot_rl.distill.configs",
    "DistillReport": "robot_rl.distill.state",
    "clone_expert": "robot_rl.distill.state",
    "distill": "robot_rl.distill.state",
    "fit_student": "robot_rl.distill.state",
    "load_student": "robot_rl.distill.state",
    "teacher_policy": "robot_rl.distill.state",
}
"""Where each exported name lives; imported on first use (``robot_rl.lazy``)."""

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = ["DaggerConfig", "DistillConfig", "DistillReport", "clone_expert", "distill",
           "fit_student", "load_student", "teacher_policy"]
