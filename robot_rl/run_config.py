"""What every training run is configured with, whatever it learns: when it stops, where its
directory is, and how it reports (``RunConfig``, the base of ``TrainConfig``, ``BCConfig`` and
``FilteredBCConfig``; ``run_loop.RunLoop`` reads it).

    @dataclasses.dataclass(kw_only=True)
    class MyConfig(RunConfig):          # its flags: --time-budget, --runs-dir, ... and its own
        steps: int = 1_000

Its fields are inherited rather than composed, so every attribute path (``cfg.time_budget``),
flag and saved config.json stays flat; ``--help`` lists them first.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from robot_rl.errors import ConfigError


@dataclasses.dataclass(kw_only=True)
class RunConfig:
    """When a training run stops, where it is written and how it reports."""

    time_budget: float | None = None
    """Stop after this many seconds of training (wall clock, summed over resumes)."""
    target_success: float | None = None
    """Stop once an evaluation reaches this success rate."""
    checkpoint_every: float = 120.0
    """Seconds between checkpoints (one is also written at the end and on Ctrl-C)."""
    runs_dir: Path = Path("runs")
    """Parent folder of run directories."""
    run_name: str | None = None
    """Run directory name (default {task}__{algo}__{seed}__{time})."""
    resume: Path | None = None
    """Continue the run in this directory from its last checkpoint. Its saved config is
    used, except how long to train and when to stop (the step count, --time-budget,
    --target-success; train's --target-evals and --threads), taken from this command line."""
    progress: bool = True
    """Show the progress bar (the log lines are printed either way)."""

    def validate_run(self) -> None:
        """ConfigError for a budget, target or checkpoint period that cannot be met."""
        if self.time_budget is not None and self.time_budget <= 0:
            raise ConfigError(f"--time-budget must be > 0 seconds, got {self.time_budget}")
        if self.target_success is not None and not 0.0 <= self.target_success <= 1.0:
            raise ConfigError(f"--target-success must be in [0, 1], got {self.target_success}")
        if self.checkpoint_every < 0:
            raise ConfigError(f"--checkpoint-every must be >= 0 seconds, got "
                              f"{self.checkpoint_every}")
