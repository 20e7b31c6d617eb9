"""Distil a state teacher into a pixel student with DAgger: ``robot-rl distill-pixels``.

    student, report = distill_pixels(PixelDistillConfig(task="push"))   # the push expert
    student, report = distill_pixels(PixelDistillConfig(teacher=Path("runs/push__sac__...")))

The teacher acts on privileged state: a trained run's actor on the env's noise-free
observation terms (the head of the ``critic`` group), or the task's scripted expert. The
student sees only what the robot has: the cameras' images and the observation terms a robot
measures (``BatchedEnv`` with cameras).

A student that acts on its state estimate (``PixelPolicyConfig.act_on``, the default) is
trained in two stages. First its action MLP alone, as a state policy
(``train_state_policy``, ``--policy-iterations``): DAgger (``robot_rl.distill.dagger``) in
an env without cameras, on the proprioception and the true hidden terms (``hidden_terms``:
what the cameras stand in for) with noise on the latter, and evaluated there. Then the
images, by the same DAgger loop: every visited state is labelled with the teacher's action
and the hidden terms' true values, the data aggregated, and the student fit by mean squared
error (``_fit``): its encoder and state head on image batches with DrQ's random shift (and,
with ``--action-steps``, its action MLP on vector batches of the true hidden state blurred
by the estimate's current error). A student on features (``act_on="features"``) learns end
to end in the image stage. The two stages split the student's gap to its teacher in two
measured parts: the action MLP's on the true state, and what the estimate's error costs.
Rollouts and the evaluation run under the dynamics (``--dr``) and visual (``--visual``)
randomization presets, so the student learns the looks and dynamics it will meet. The
student is saved with its config, image shapes, observation layout and estimated terms
(``--out``, ``runs/pixel_student.pt`` by default; ``vision.student_file`` reads it;
``robot-rl export`` makes it an artifact).
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import torch
from rich.console import Console
from torch import nn

from robot_rl.config_io import to_dict
from robot_rl.distill.configs import PixelDistillConfig
from robot_rl.distill.dagger import dagger, mix
from robot_rl.distill.pixel_eval import Teacher, evaluate_student, state_error
from robot_rl.distill.state import fit_student
from robot_rl.errors import ConfigError
from robot_rl.evaluate import EvalResult, evaluate, module_policy
from robot_rl.sim import make_env
from robot_rl.sim.env import BatchedEnv
from robot_rl.sim.vec_env import CRITIC, Layout, StepResult, layout_columns
from robot_rl.vision.pixel_inputs import hidden_terms, pixel_env, student_columns
from robot_rl.vision.student import PixelPolicy
from robot_rl.vision.student_file import save_pixel_student


@dataclasses.dataclass
class PixelDistillReport:
    teacher: EvalResult | None
    student: EvalResult | None
    final_loss: float
    samples: int
    seconds: float
    path: Path
    state_policy: EvalResult | None = None
    """With ``--policy-iterations``: the action MLP's own success, fed the true hidden state
    (what perception's error then costs is the gap to ``student``)."""
    estimate_rmse: dict[str, float] = dataclasses.field(default_factory=dict)
    """The state estimate's error per hidden term in the student's evaluation
    (``pixel_eval.StudentEval.estimate_rmse``)."""

    @property
    def success_ratio(self) -> float:
        if self.teacher is None or self.student is None:
            return float("nan")
        return self.student.success_rate / max(self.teacher.success_rate, 1e-9)


def make_teacher(cfg: PixelDistillConfig) -> tuple[Teacher, Any]:
    """The teacher and the task config its env is made from."""
    from robot_rl.sim import make_task_config

    if cfg.teacher is None:
        return (lambda env: env.expert_action()), make_task_config(cfg.task, robot=cfg.robot)
    from robot_rl.checkpoint import resolve_checkpoint
    from robot_rl.distill.state import teacher_policy
    from robot_rl.runner import load_agent

    agent, train_cfg, _ = load_agent(resolve_checkpoint(cfg.teacher))
    if cfg.robot is not None and cfg.robot != train_cfg.env.robot:
        raise ConfigError(f"--robot {cfg.robot}: the teacher {cfg.teacher} was trained on "
                          f"{train_cfg.env.robot}")
    net = teacher_policy(agent)
    width = int(net.norm.mean.shape[0])

    @torch.no_grad()
    def act(env: BatchedEnv) -> torch.Tensor:
        return net(env.group_obs()[CRITIC][:, :width])  # every term, noise-free

    return act, train_cfg.env


def distill_pixels(cfg: PixelDistillConfig, console: Console | None = None
                   ) -> tuple[PixelPolicy, PixelDistillReport]:
    """DAgger from the teacher into a pixel student (see module docstring)."""
    console = console or Console()
    cfg.validate()
    d, inputs = cfg.dagger, cfg.inputs
    torch.manual_seed(d.seed)
    t0 = time.perf_counter()
    teacher, task_cfg = make_teacher(cfg)
    env = pixel_env(inputs, task_cfg, d.num_envs, d.seed + 20_000, d.dr)
    layout = [(n, w) for n, w in env.obs_layout if n not in inputs.drop_terms]
    state_terms = hidden_terms(env) if cfg.state_weight > 0 else []
    console.print(f"distilling {'the scripted expert' if cfg.teacher is None else cfg.teacher}"
                  f" of {task_cfg.name!r} into a pixel student: cameras "
                  f"{', '.join(inputs.cameras)} at {inputs.size}x{inputs.size}"
                  f"{' with depth' if inputs.depth else ''}, proprioception "
                  f"{[n for n, _ in layout]}", highlight=False)
    student: PixelPolicy | None = None
    state_policy: EvalResult | None = None
    if cfg.policy_iterations > 0 and cfg.policy.act_on == "state" and state_terms:
        student, state_policy = train_state_policy(cfg, teacher, task_cfg, env.image_shapes,
                                                   layout, state_terms, console)
    learner = _PixelLearner(cfg, env, teacher, state_terms, student)
    losses, samples = dagger(env, learner, d, console, "distill-pixels")
    student = learner.student
    assert student is not None
    result = evaluate_student(student, cfg, teacher, task_cfg) if d.eval_episodes > 0 \
        else None
    t_res, s_res = (None, None) if result is None else (result.teacher, result.student)
    report = PixelDistillReport(t_res, s_res, losses["loss"], samples,
                                time.perf_counter() - t0, cfg.out, state_policy,
                                {} if result is None else result.estimate_rmse)
    save_pixel_student(cfg.out, student, inputs, task_cfg, env, state_terms, dr=d.dr,
                       state_weight=cfg.state_weight, config=to_dict(cfg),
                       trained_by="distill-pixels", final_loss=report.final_loss,
                       teacher_success=None if t_res is None else t_res.success_rate,
                       student_success=None if s_res is None else s_res.success_rate,
                       state_policy_success=None if state_policy is None
                       else state_policy.success_rate,
                       samples=report.samples, seconds=report.seconds)
    return student, report


class _PixelLearner:
    """A pixel student's data and fit (``dagger``'s ``Learner``): every visited state's
    proprioception, images, hidden state (from the ``critic`` group) and the teacher's
    action. The student is made at the first fit (its normalization from the teacher's
    own rollouts) unless the state stage made it."""

    def __init__(self, cfg: PixelDistillConfig, env: BatchedEnv, teacher: Teacher,
                 state_terms: list[str], student: PixelPolicy | None):
        self.cfg, self.env, self.teacher, self.student = cfg, env, teacher, student
        self.cols = student_columns(env.obs_layout, cfg.inputs.drop_terms)
        self.hidden = torch.tensor(layout_columns(env.critic_layout, state_terms),
                                   dtype=torch.long)
        self.gen = torch.Generator().manual_seed(cfg.dagger.seed)
        self.opt = None if student is None else \
            torch.optim.Adam(student.parameters(), lr=cfg.dagger.lr)
        self.steps = cfg.dagger.rollout_steps or env.max_episode_length
        self.critic: torch.Tensor | None = None  # the env's current critic observations
        self.proprio: list[torch.Tensor] = []
        self.states: list[torch.Tensor] = []
        self.images: dict[str, list[torch.Tensor]] = {k: [] for k in env.image_shapes}
        self.labels: list[torch.Tensor] = []

    @property
    def samples(self) -> int:
        return sum(x.shape[0] for x in self.proprio)

    def act(self, obs: torch.Tensor, beta: float) -> torch.Tensor:
        env = self.env
        if self.critic is None:  # after the reset; then each step's, from its info
            self.critic = env.group_obs()[CRITIC]
        target = self.teacher(env)
        self.proprio.append(obs[:, self.cols].cpu())
        for k, v in env.last_images.items():
            self.images[k].append(v.cpu())
        self.labels.append(target.cpu())
        self.states.append(self.critic[:, self.hidden].cpu())
        if self.student is None or beta >= 1.0:
            return target
        return mix(target, self.student(obs[:, self.cols], env.last_images), beta, self.gen)

    def stepped(self, result: StepResult) -> None:
        self.critic = result[5]["obs_groups"][CRITIC]

    def fit(self) -> dict[str, float]:
        X = torch.cat(self.proprio)
        imgs = {k: torch.cat(v) for k, v in self.images.items()}
        Y = torch.cat(self.labels)
        S = torch.cat(self.states)
        student, hidden = self.student, self.hidden
        unseen: dict[str, float] = {}  # the estimate's error on the new rollouts, unfitted
        if student is not None and student.state_dim and X.shape[0] > self.steps * \
                self.env.num_envs:
            new = slice(X.shape[0] - self.steps * self.env.num_envs, None)
            err = state_error(student, X[new], {k: v[new] for k, v in imgs.items()}, S[new])
            unseen = {"state loss before fitting the new rollouts": float(err.mean())}
        if student is None:  # normalization from the teacher's own rollouts
            student = self.student = PixelPolicy(
                self.cfg.policy, self.env.image_shapes, len(self.cols), self.env.act_dim,
                X.mean(0), X.std(0), len(hidden), S.mean(0), S.std(0))
        if self.opt is None:
            self.opt = torch.optim.Adam(student.parameters(), lr=self.cfg.dagger.lr)
        loss, s_loss = _fit(student, self.opt, self.cfg, X, imgs, Y, S, self.gen)
        return {"loss": loss, **({"state loss": s_loss, **unseen} if len(hidden) else {})}


class _StateView:
    """A camera-less env as the student's action MLP sees it: observations (E, O + S), the
    student's proprioception terms and the true hidden terms (from the ``critic`` group)."""

    def __init__(self, env: BatchedEnv, layout: Layout, state_terms: list[str]):
        self.env = env
        self.cols = torch.tensor(layout_columns(env.obs_layout, [n for n, _ in layout]))
        self.hidden = torch.tensor(layout_columns(env.critic_layout, state_terms))
        self.num_envs, self.max_episode_length = env.num_envs, env.max_episode_length

    def _view(self, obs: torch.Tensor, critic: torch.Tensor) -> torch.Tensor:
        return torch.cat([obs[:, self.cols], critic[:, self.hidden]], dim=1)

    def reset(self, seed: int | None = None) -> torch.Tensor:
        return self._view(self.env.reset(seed=seed), self.env.group_obs()[CRITIC])

    def step(self, action: torch.Tensor, hold: torch.Tensor | None = None) -> StepResult:
        obs, reward, cost, terminated, truncated, info = self.env.step(action, hold)
        return (self._view(obs, info["obs_groups"][CRITIC]), reward, cost, terminated,
                truncated, info)


class _ActionMLP(nn.Module):
    """A pixel student's action MLP on ``_StateView`` rows, with Gaussian noise of ``noise``
    on the normalized hidden state while training."""

    def __init__(self, student: PixelPolicy, noise: float):
        super().__init__()
        self.student, self.noise = student, noise

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p = self.student.proprio_dim
        state = self.student.normalize_state(x[:, p:])
        if self.training and self.noise > 0:
            state = state + self.noise * torch.randn_like(state)
        return self.student.act_on_state(x[:, :p], state)


def train_state_policy(cfg: PixelDistillConfig, teacher: Teacher, task_cfg: Any,
                       image_shapes: dict[str, tuple[int, int, int]], layout: Layout,
                       state_terms: list[str], console: Console
                       ) -> tuple[PixelPolicy, EvalResult | None]:
    """A new student whose action MLP is trained by DAgger (``robot_rl.distill.dagger``)
    in an env without cameras, on the proprioception ``layout`` and the true
    ``state_terms`` (``--policy-iterations``); the normalization comes from one teacher
    episode there. Returns it and the action MLP's success on the true state (with
    ``--eval-episodes``)."""
    d = cfg.dagger
    t0 = time.perf_counter()
    env = _StateView(make_env(task_cfg, cfg.policy_envs, dr=d.dr, seed=d.seed + 40_000),
                     layout, state_terms)
    rows = [env.reset(seed=d.seed)]
    for _ in range(env.max_episode_length):
        rows.append(env.step(teacher(env.env))[0])
    x, p = torch.cat(rows), len(env.cols)
    student = PixelPolicy(cfg.policy, image_shapes, p, env.env.act_dim, x[:, :p].mean(0),
                          x[:, :p].std(0), x.shape[1] - p, x[:, p:].mean(0), x[:, p:].std(0))
    console.print(f"training the action MLP on the true {', '.join(state_terms)} "
                  f"(noise {cfg.state_noise}) without cameras: {cfg.policy_iterations} DAgger "
                  f"iterations x {cfg.policy_steps} steps, {cfg.policy_envs} envs", highlight=False)
    stage = dataclasses.replace(d, iterations=cfg.policy_iterations, num_envs=cfg.policy_envs,
                                grad_steps=cfg.policy_steps, batch_size=cfg.action_batch)
    mlp = _ActionMLP(student, cfg.state_noise)
    loss, _ = fit_student(env, lambda _obs: teacher(env.env), mlp, stage, console,
                          params=student.mlp.parameters())
    result = None
    if d.eval_episodes > 0:
        ev = _StateView(make_env(task_cfg, min(d.eval_episodes, 16), dr=d.dr,
                                 seed=d.seed + 30_000), layout, state_terms)
        result = evaluate(module_policy(mlp.eval()), ev, d.eval_episodes, seed=d.seed)
    console.print(f"action MLP: loss {loss:.4f}"
                  + ("" if result is None else
                     f", success on the true state {result.success_rate:.1%}")
                  + f" ({time.perf_counter() - t0:.0f} s)", highlight=False)
    return student, result


def _fit(student: PixelPolicy, opt: torch.optim.Optimizer, cfg: PixelDistillConfig,
         X: torch.Tensor, imgs: dict[str, torch.Tensor], Y: torch.Tensor, S: torch.Tensor,
         gen: torch.Generator) -> tuple[float, float]:
    """One DAgger iteration's training on the aggregate: proprioception X (N, O), images,
    teacher actions Y (N, A), hidden state S (N, S). Returns the last action and state
    losses (mean squared error; the state's in normalized units). The action loss is the
    last vector batch's (``--action-steps``), else, for a student acting on its estimate,
    the last image batch's with its actions on the estimate."""
    student.train()
    n = X.shape[0]
    err2 = torch.zeros(S.shape[1])  # squared error of the state estimate, per column
    loss = s_loss = float("nan")
    grad_steps = cfg.dagger.grad_steps
    for step in range(grad_steps):
        idx = torch.randint(0, n, (cfg.dagger.batch_size,), generator=gen)
        batch_imgs = {k: v[idx] for k, v in imgs.items()}
        total = torch.zeros(())
        if student.state_dim:
            est = student.estimate(X[idx], batch_imgs, gen)
            sq = (est - student.normalize_state(S[idx])) ** 2
            total = total + (1.0 if student.acts_on_state else cfg.state_weight) * sq.mean()
            s_loss = float(sq.mean().detach())
            if step >= grad_steps - 50:
                err2 += sq.detach().mean(0) / min(50, grad_steps)
            if student.acts_on_state and step == grad_steps - 1:  # acting on the estimate
                with torch.no_grad():
                    act = student.act_on_state(X[idx], est)
                    loss = float(((act - Y[idx]) ** 2).mean())
        if not student.acts_on_state:
            a_loss = ((student(X[idx], batch_imgs, gen) - Y[idx]) ** 2).mean()
            total = total + a_loss
            loss = float(a_loss.detach())
        opt.zero_grad()
        total.backward()
        opt.step()
    if student.acts_on_state:
        blur = err2.sqrt()
        for _ in range(cfg.action_steps):
            idx = torch.randint(0, n, (cfg.action_batch,), generator=gen)
            state = student.normalize_state(S[idx])
            state = state + blur * torch.randn(state.shape, generator=gen)
            a_loss = ((student.act_on_state(X[idx], state) - Y[idx]) ** 2).mean()
            opt.zero_grad()
            a_loss.backward()
            opt.step()
            loss = float(a_loss.detach())
    student.eval()
    return loss, s_loss
