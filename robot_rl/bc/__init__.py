"""Behaviour cloning of chunked policies (flow matching, MLP) from datasets: ``robot-rl bc``."""

from typing import TYPE_CHECKING

from robot_rl.lazy import lazy_exports

if TYPE_CHECKING:
    from robot_rl.bc.config import BCConfig
    from robot_rl.bc.runner import (
        BCRunner,
        bc_env,
        bc_task,
        bc_task_config,
        evaluate_chunked,
        load_bc_policy,
        make_eval_env,
        make_task_env,
    )

_EXPORTS = {
    "BCConfig": "robot_rl.bc.config",
    "BCRunner": "robot_rl.bc.runner",
    "bc_env": "robot_rl.bc.runner",
    "bc_task": "robot_rl.bc.runner",
    "bc_task_config": "robot_rl.bc.runner",
    "evaluate_chunked": "robot_rl.bc.runner",
    "load_bc_policy": "robot_rl.bc.runner",
    "make_eval_env": "robot_rl.bc.runner",
    "make_task_env": "robot_rl.bc.runner",
}
"""Where each exported name lives; imported on first use (``robot_rl.lazy``)."""

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = ["BCConfig", "BCRunner", "bc_env", "bc_task", "bc_task_config", "evaluate_chunked",
           "load_bc_policy", "make_eval_env", "make_task_env"]
