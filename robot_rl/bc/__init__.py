"""Behaviour cloning of chunked policies (flow matching, MLP) from datasets: ``robot-rl bc``."""

from robot_rl.bc.runner import (
    BCConfig,
    BCRunner,
    bc_env,
    bc_task,
    bc_task_config,
    evaluate_chunked,
    load_bc_policy,
    make_eval_env,
    make_task_env,
)

__all__ = ["BCConfig", "BCRunner", "bc_env", "bc_task", "bc_task_config", "evaluate_chunked",
           "load_bc_policy", "make_eval_env", "make_task_env"]
