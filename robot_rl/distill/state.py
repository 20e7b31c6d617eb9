"""Distill a trained actor into a small student MLP with DAgger under domain randomization.

    student, report = distill(DistillConfig(run=Path("runs/reach__sac__0__...")))

DAgger (``robot_rl.distill.dagger``) labels every visited state with the teacher's
deterministic action (tanh of its mean) and fits the student by mean squared error on the
aggregate. Rollouts use the ``dr`` randomization preset, so the student learns on the
states it will itself visit on a perturbed robot. The result is ``student.pt`` in the run
directory: the student's state dict, its sizes and the teacher's observation normalization
(the student shares it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import torch
from rich.console import Console
from torch import nn

from robot_rl.checkpoint import CheckpointError, resolve_checkpoint, run_dir_of, save_atomic
from robot_rl.distill.configs import DaggerConfig, DistillConfig
from robot_rl.distill.dagger import dagger, mix
from robot_rl.errors import ConfigError
from robot_rl.evaluate import EvalResult, evaluate, module_policy
from robot_rl.export.modules import ActorMean, DeployPolicy, ObsNorm, student_net
from robot_rl.run_control import torch_threads
from robot_rl.runner import load_agent, make_train_env
from robot_rl.sim.env import BatchedEnv
from robot_rl.sim.vec_env import RolloutEnv, StepResult, VecEnv, check_vec_env

STUDENT_FILE = "student.pt"
STUDENT_FORMAT = "robot_rl.student"


@dataclasses.dataclass
class DistillReport:
    teacher: EvalResult | None
    student: EvalResult | None
    final_loss: float
    samples: int
    path: Path

    @property
    def success_ratio(self) -> float:
        if self.teacher is None or self.student is None:
            return float("nan")
        return self.student.success_rate / max(self.teacher.success_rate, 1e-9)


def teacher_policy(agent: Any) -> DeployPolicy:
    """The agent's deterministic actor with its observation normalization, as one module."""
    n = agent.normalizer
    norm = ObsNorm(n.mean, n.std, n.clip) if agent.cfg.normalize_obs else \
        ObsNorm(torch.zeros_like(n.mean), torch.ones_like(n.std), float("inf"))
    return DeployPolicy(norm, ActorMean(agent.actor)).eval()


def distill(cfg: DistillConfig, console: Console | None = None, env: VecEnv | None = None,
            eval_env: VecEnv | None = None) -> tuple[DeployPolicy, DistillReport]:
    """Distill the run's actor into a student; ``env`` / ``eval_env``: roll out and evaluate
    in these (any ``VecEnv``) instead of envs of the run's task with ``cfg.dagger.dr``."""
    console = console or Console()
    d = cfg.dagger
    d.validate()
    if cfg.sees != "teacher":
        raise ConfigError("--sees all is for a chunked teacher's student (bc-flow, dsrl, "
                          "residual runs); an actor's student sees what the actor sees")
    ckpt = resolve_checkpoint(cfg.run)
    agent, train_cfg, _ = load_agent(ckpt)
    if train_cfg.gym is not None:
        raise ConfigError(f"{ckpt} trained on the gymnasium env {train_cfg.gym}; a student "
                          f"is distilled for deploy on one of our tasks")
    with torch_threads(train_cfg.threads):  # the teacher run's CPU threads
        torch.manual_seed(d.seed)
        teacher = teacher_policy(agent)
        if env is None:
            env = make_train_env(train_cfg, d.num_envs, d.seed + 20_000, dr=d.dr)
        check_vec_env(env)
        norm = ObsNorm(teacher.norm.mean, teacher.norm.std, teacher.norm.clip)
        student = DeployPolicy(norm, student_net(env.obs_dim, env.act_dim, cfg.hidden))
        loss, samples = fit_student(env, teacher, student, d, console)

        t_res = s_res = None
        if d.eval_episodes > 0:
            if eval_env is None:
                eval_env = make_train_env(train_cfg, min(d.eval_episodes, 32),
                                          d.seed + 30_000, dr=d.dr)
            t_res = evaluate(module_policy(teacher), eval_env, d.eval_episodes, seed=d.seed)
            s_res = evaluate(module_policy(student), eval_env, d.eval_episodes, seed=d.seed)
        path = run_dir_of(ckpt) / STUDENT_FILE
        report = DistillReport(t_res, s_res, loss, samples, path)
        save_atomic({"format": STUDENT_FORMAT, "hidden": list(cfg.hidden),
                     "obs_dim": env.obs_dim, "act_dim": env.act_dim, "clip": student.norm.clip,
                     "state_dict": student.state_dict(),
                     "dr": d.dr, "final_loss": report.final_loss,
                     "teacher_success": None if t_res is None else t_res.success_rate,
                     "student_success": None if s_res is None else s_res.success_rate}, path)
    return student, report


class _StateLearner:
    """A student of observation -> action rows, labelled by ``teacher`` (``dagger``'s
    ``Learner``)."""

    def __init__(self, teacher: Callable[[torch.Tensor], torch.Tensor], student: nn.Module,
                 cfg: DaggerConfig, params: Iterable[nn.Parameter] | None):
        self.teacher, self.student, self.cfg = teacher, student, cfg
        self.opt = torch.optim.Adam(student.parameters() if params is None else params,
                                    lr=cfg.lr)
        self.gen = torch.Generator().manual_seed(cfg.seed)
        self.obs: list[torch.Tensor] = []
        self.actions: list[torch.Tensor] = []

    @property
    def samples(self) -> int:
        return sum(o.shape[0] for o in self.obs)

    def act(self, obs: torch.Tensor, beta: float) -> torch.Tensor:
        label = self.teacher(obs)
        self.obs.append(obs)
        self.actions.append(label)
        return label if beta >= 1.0 else mix(label, self.student(obs), beta, self.gen)

    def stepped(self, result: StepResult) -> None:
        pass

    def fit(self) -> dict[str, float]:
        x, y = torch.cat(self.obs), torch.cat(self.actions)
        loss = torch.tensor(float("nan"))
        for _ in range(self.cfg.grad_steps):
            idx = torch.randint(0, x.shape[0], (self.cfg.batch_size,), generator=self.gen)
            loss = ((self.student(x[idx]) - y[idx]) ** 2).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
        return {"loss": float(loss.detach())}


def fit_student(env: RolloutEnv, teacher: Callable[[torch.Tensor], torch.Tensor],
                student: nn.Module, cfg: DaggerConfig, console: Console,
                params: Iterable[nn.Parameter] | None = None) -> tuple[float, int]:
    """Fit ``student`` (obs -> action) to ``teacher`` (obs -> action labels, called at the
    env's current state) with DAgger, training ``params`` (default: all of the student's);
    returns (final loss, samples)."""
    losses, samples = dagger(env, _StateLearner(teacher, student, cfg, params), cfg, console)
    student.eval()
    return losses["loss"], samples


def clone_expert(task: str, cfg: DistillConfig, console: Console | None = None,
                 **overrides: Any) -> tuple[DeployPolicy, BatchedEnv]:
    """A student cloned (DAgger) from the task's scripted expert instead of a trained run:
    a competent small policy in seconds, for trying the deploy path without training.
    ``cfg.run`` is ignored; ``overrides`` replace task config fields (``action=...``).
    Returns the student and an env of the task (for export)."""
    from robot_rl.sim import make_env

    d = cfg.dagger
    torch.manual_seed(d.seed)
    env = make_env(task, d.num_envs, seed=d.seed, dr=d.dr, **overrides)
    obs = [env.reset(seed=d.seed)]
    for _ in range(env.cfg.episode_length):  # one expert episode for the normalization
        obs.append(env.step(env.expert_action())[0])
    x = torch.cat(obs)
    norm = ObsNorm(x.mean(0), x.std(0).clamp_min(1e-2), 10.0)
    student = DeployPolicy(norm, student_net(env.obs_dim, env.act_dim, cfg.hidden))
    fit_student(env, lambda _: env.expert_action(), student, d, console or Console())
    return student, env


def load_student(run: str | Path) -> DeployPolicy:
    """The distilled student of a run directory (``student.pt``)."""
    p = Path(run)
    path = p / STUDENT_FILE if p.is_dir() else p
    if not path.is_file():
        raise CheckpointError(f"no student at {path}; run `robot-rl distill {run}` first")
    try:
        state = torch.load(path, map_location="cpu", weights_only=False)
        if state.get("format") != STUDENT_FORMAT:
            raise ValueError(f"not a {STUDENT_FORMAT} file")
        net = student_net(state["obs_dim"], state["act_dim"], state["hidden"])
        dim = state["obs_dim"]
        student = DeployPolicy(ObsNorm.of(dim), net)
        student.load_state_dict(state["state_dict"])
        student.norm.clip = float(state.get("clip", 10.0))
    except Exception as e:
        raise CheckpointError(f"cannot read student {path}: {type(e).__name__}: {e}") from None
    return student.eval()
