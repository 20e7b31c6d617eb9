"""DAgger, the one loop of every distillation (state, pixel and chunked students).

    losses, samples = dagger(env, learner, cfg.dagger, console)

Iteration 0 rolls out the teacher; iteration i executes, per env and step, the teacher's
action with probability ``beta_decay ** i`` and the student's otherwise (``mix``). Every
visited state is labelled with the teacher's action, the data aggregated, and the student
fit to the whole aggregate after each iteration (Ross et al., 2011). What is labelled, kept
and fit is the ``Learner``'s: a state student keeps (observation, action) rows, a pixel
student images, proprioception and the hidden state, a chunked student observation
histories, noises and chunks. The loop owns the schedule, the rollouts, the progress bar in
a terminal and one line per iteration in a log (or without the bar): beta, samples and the
learner's losses.
"""

from __future__ import annotations

import time
from typing import Protocol

import torch
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from robot_rl.distill.configs import DaggerConfig
from robot_rl.sim.vec_env import RolloutEnv, StepResult


class Learner(Protocol):
    """A student, its teacher and its data, as ``dagger`` drives them."""

    def act(self, obs: torch.Tensor, beta: float) -> torch.Tensor:
        """The action to execute at the env's current state (the teacher's with probability
        ``beta``, else the student's), the state labelled with the teacher's and kept where
        the student decides there (a chunked student: where a chunk starts)."""
        ...

    def stepped(self, result: StepResult) -> None:
        """After each env step: its episode ends and info (the next labels' state)."""
        ...

    def fit(self) -> dict[str, float]:
        """Fit the student to the aggregate; the iteration's losses, ``"loss"`` first."""
        ...

    @property
    def samples(self) -> int:
        """Labelled samples kept so far."""
        ...


def mix(teacher: torch.Tensor, student: torch.Tensor, beta: float,
        gen: torch.Generator) -> torch.Tensor:
    """Per env (the first dimension), the teacher's action with probability ``beta``, else
    the student's."""
    shape = (teacher.shape[0],) + (1,) * (teacher.dim() - 1)
    use_teacher = torch.rand(shape, generator=gen) < beta
    return torch.where(use_teacher, teacher, student)


def dagger(env: RolloutEnv, learner: Learner, cfg: DaggerConfig, console: Console,
           label: str = "distill") -> tuple[dict[str, float], int]:
    """Run DAgger (module docstring) in ``env``; returns the last iteration's losses and
    the samples kept."""
    steps = cfg.rollout_steps or env.max_episode_length
    t0 = time.perf_counter()
    losses: dict[str, float] = {"loss": float("nan")}
    columns = (TextColumn(f"[bold]{label}"), BarColumn(),
               TextColumn("iteration {task.completed}/{task.total}"),
               TextColumn("{task.fields[losses]}"), TimeElapsedColumn())
    bar_shown = cfg.progress and console.is_terminal
    with Progress(*columns, console=console, disable=not bar_shown) as progress:
        bar = progress.add_task(label, total=cfg.iterations, losses="loss -")
        obs = env.reset(seed=cfg.seed)
        for it in range(cfg.iterations):
            beta = cfg.beta_decay ** it
            with torch.no_grad():
                for _ in range(steps):
                    result = env.step(learner.act(obs, beta))
                    learner.stepped(result)
                    obs = result[0]
            with torch.enable_grad():
                losses = learner.fit()
            shown = "  ".join(f"{k} {v:.3e}" for k, v in losses.items())
            progress.update(bar, advance=1, losses=shown)
            if not bar_shown:
                console.print(f"[{label} iteration {it + 1}/{cfg.iterations}, "
                              f"{time.perf_counter() - t0:.0f} s]  beta {beta:.2f}  samples "
                              f"{learner.samples:,}  {shown}", highlight=False, markup=False,
                              soft_wrap=True)
    return losses, learner.samples
