"""What one off-policy training run has done so far, in one object (``RunState``): its env
steps, training seconds, cumulative training cost, evaluation history, next evaluation and
TensorBoard writer. The runner owns it; its loop, ``TrainSession`` (the books) and the
checkpoint read and write this object, so a run's state is in one place:

    state = RunState()
    state.env_steps += got.env_steps           # the loop, per round
    state.add_cost(got.cost)                   # a tensor on the learner's device: no host read
    checkpoint |= state.checkpoint()           # numbers only, read at the checkpoint's cadence
    state.restore(checkpoint, eval_every)      # --resume
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch


def state_field(name: str) -> Any:
    """A property of a class whose instances hold a ``RunState`` as ``state``: its field
    ``name`` (the runner's ``env_steps``, ``elapsed``, ... which ``RunLoop`` reads)."""
    def get(self: Any) -> Any:
        return getattr(self.state, name)

    def set_(self: Any, value: Any) -> None:
        setattr(self.state, name, value)

    return property(get, set_, doc=f"``self.state.{name}`` (``robot_rl.run_state``)")


@dataclasses.dataclass
class RunState:
    """A training run's counters and books (module docstring)."""

    env_steps: int = 0
    """Env steps collected (control steps, all envs together)."""
    elapsed: float = 0.0
    """Seconds of training, over resumes."""
    train_cost: torch.Tensor | float = 0.0
    """Cumulative constraint cost of the training transitions: a float64 tensor on the
    learner's device once counted (read at evaluations and checkpoints)."""
    history: list[dict[str, float]] = dataclasses.field(default_factory=list)
    """The evaluations (eval.csv's rows)."""
    next_eval: int = 0
    """The env step of the next evaluation."""
    writer: Any = None
    """The TensorBoard writer while the loop runs (it opens and closes it)."""

    def add_cost(self, cost: torch.Tensor | float) -> None:
        """Count a round's summed constraint cost (a float64 tensor or a number)."""
        self.train_cost = self.train_cost + cost

    def checkpoint(self) -> dict[str, Any]:
        """What a checkpoint keeps of it (numbers: the cost is read here)."""
        return {"env_steps": self.env_steps, "elapsed": self.elapsed,
                "train_cost": float(self.train_cost), "history": self.history}

    def restore(self, state: dict[str, Any], eval_every: int) -> None:
        """Take a checkpoint's counters; the next evaluation ``eval_every`` env steps on."""
        self.env_steps = int(state["env_steps"])
        self.elapsed = float(state["elapsed"])
        self.train_cost = float(state["train_cost"])
        self.history = list(state["history"])
        self.next_eval = self.env_steps + eval_every
