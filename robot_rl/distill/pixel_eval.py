"""How well a pixel student does: its success beside its teacher's on the same episodes, and
the error of its state estimate, in closed loop or on recorded samples.

    result = evaluate_student(student, cfg, teacher, task_cfg)   # StudentEval
    result.student.success_rate, result.estimate_rmse           # {"puck_pos": 0.006, ...} [m]
    err = state_error(student, proprio, images, true_state)      # (S,) normalized MSE
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch

from robot_rl.distill.configs import PixelDistillConfig
from robot_rl.evaluate import EvalResult, evaluate
from robot_rl.sim.env import BatchedEnv
from robot_rl.sim.vec_env import CRITIC, layout_columns
from robot_rl.vision.pixel_inputs import hidden_terms, pixel_env, student_columns
from robot_rl.vision.student import PixelPolicy

Teacher = Callable[[BatchedEnv], torch.Tensor]
"""The teacher's actions (E, A) at an env's current state."""


@dataclasses.dataclass
class StudentEval:
    """Teacher and student on the same episodes, and the student's state estimate in them."""

    teacher: EvalResult
    student: EvalResult
    estimate_rmse: dict[str, float]
    """Root mean squared error of the student's estimate of each hidden term in closed
    loop (every step the student acted on), in the term's units (metres for positions);
    empty for a student without a state head."""


def evaluate_student(student: PixelPolicy, cfg: PixelDistillConfig, teacher: Teacher,
                     task_cfg: Any) -> StudentEval:
    """The teacher's and the student's success on the same ``--eval-episodes`` episodes,
    under ``cfg``'s dynamics (``dr``) and visual (``visual``) randomization (pass a config
    with other presets to evaluate a student under them, e.g. ``"off"``: nominal), and the
    error of the student's state estimate along its own rollouts."""
    d = cfg.dagger
    ev = pixel_env(cfg.inputs, task_cfg, min(d.eval_episodes, 16), d.seed + 30_000, d.dr)
    cols = student_columns(ev.obs_layout, cfg.inputs.drop_terms)
    terms = hidden_terms(ev) if student.state_dim else []
    hidden = torch.tensor(layout_columns(ev.critic_layout, terms), dtype=torch.long)
    sq = torch.zeros(len(hidden))
    calls = 0

    @torch.no_grad()
    def act(obs: torch.Tensor) -> tuple[torch.Tensor, None]:
        nonlocal sq, calls
        proprio = obs[:, cols]
        if not len(hidden):
            return student(proprio, ev.last_images), None
        feats, est = student.mlp_input(proprio, ev.last_images, with_estimate=True)
        assert est is not None
        true = ev.group_obs()[CRITIC][:, hidden]
        sq = sq + (((est - student.normalize_state(true)) * student.state_norm.std) ** 2
                   ).sum(0).cpu()
        calls += obs.shape[0]
        return torch.tanh(student.mlp(feats)), None

    t_res = evaluate(lambda _o: (teacher(ev), None), ev, d.eval_episodes, seed=d.seed)
    s_res = evaluate(act, ev, d.eval_episodes, seed=d.seed)
    rmse, start = {}, 0
    widths = dict(ev.critic_layout)
    for t in terms:
        rmse[t] = float((sq[start:start + widths[t]].sum() / (max(calls, 1) * widths[t])).sqrt())
        start += widths[t]
    return StudentEval(t_res, s_res, rmse)


@torch.no_grad()
def state_error(student: PixelPolicy, proprio: torch.Tensor, images: dict[str, torch.Tensor],
                state: torch.Tensor, chunk: int = 512) -> torch.Tensor:
    """(S,) mean squared error of the student's state estimate per column, in normalized
    units, on proprioception (N, O), images and the true hidden state (N, S), without
    augmentation."""
    sq = torch.zeros(student.state_dim)
    for i in range(0, proprio.shape[0], chunk):
        j = slice(i, i + chunk)
        est = student.estimate(proprio[j], {k: v[j] for k, v in images.items()})
        sq += ((est - student.normalize_state(state[j])) ** 2).sum(0).cpu()
    return sq / max(proprio.shape[0], 1)
