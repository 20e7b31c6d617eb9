"""VecEnv: the protocol every learner, evaluation and distillation in robot_rl drives.

``BatchedEnv`` satisfies it, and so can any other batched simulator (an Isaac Gym VecTask
through ``robot_rl.interop``, a user's own env): ``Runner``, ``evaluate``, ``dagger`` and
the fine-tuning runner accept any object with these members. It is a structural type
(``typing.Protocol``): nothing to inherit.

    obs = env.reset(seed=0)                                          # (E, O) float32
    obs, reward, cost, terminated, truncated, info = env.step(action, hold=None)

Shapes, with E = ``num_envs``, O = ``obs_dim``, A = ``act_dim``, all on ``env.device``:

    action       (E, A) float32 in [-1, 1]
    hold         (E,) bool or None: those envs hold still this step (safety gate, watchdog)
    obs          (E, O) float32: the ``policy`` group, after any automatic reset
    reward, cost (E,) float32: cost is the constraint cost (>= 0) a safety critic learns
    terminated   (E,) bool: the episode ended in a terminal state (no bootstrapping)
    truncated    (E,) bool: the episode was cut (time limit, divergence): bootstrap

Finished envs reset inside ``step``. ``info`` carries (required):

    final_obs    (E, O): each env's observation before any reset (= obs where none finished)
    success      (E,) bool: the task's success test at this step

and (optional; learners treat a missing key as "none"):

    reward_terms, cost_terms   {name: (E,)} per-term breakdowns
    safety                     {layer: (E,) bool} shield layers that intervened this step
    episode                    when any env finished: {"return", "cost", "length", "success",
                               "done"}, (E,) each, for the envs flagged in "done"
    obs_groups                 {group: (E, width)} the other observation groups, after resets
    final_obs_groups           {group: (E, width)} the same before any reset
    images                     {key: (E, C, H, W)} camera images of the policy, after resets
                               (``{camera}.rgb`` uint8, ``{camera}.depth`` float32 metres)
    final_images               {key: (E, C, H, W)} the same before any reset

An env may also have ``steps_per_step`` (int, default 1): the control steps each env
advances per ``step`` (a wrapper executing action chunks); the runner counts env steps by it.

**Observation groups** (``obs_groups``, name -> width): ``policy`` is what the deployed
policy sees and is always there, width O, with its camera images in ``info["images"]``
where the env has cameras (``BatchedEnv.image_shapes``, ``BatchedEnv.images()``); ``critic``,
if present, is privileged simulator state for critics and teachers (asymmetric actor-critic,
teacher-student distillation). ``group_obs()`` returns the current non-policy groups, e.g.
right after ``reset``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import torch

StepResult = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor,
                   dict[str, Any]]
"""(obs, reward, cost, terminated, truncated, info) of ``VecEnv.step``."""

POLICY = "policy"
CRITIC = "critic"

Layout = list[tuple[str, int]]
"""(name, width) of each term of an observation vector, in order (``obs_layout``)."""


def term_slices(layout: Layout) -> dict[str, slice]:
    """Where each term of ``layout`` lies among the vector's columns."""
    out: dict[str, slice] = {}
    at = 0
    for name, width in layout:
        out[name] = slice(at, at + width)
        at += width
    return out


def layout_columns(layout: Layout, names: Sequence[str]) -> list[int]:
    """Columns of ``layout``'s vector holding the terms ``names``, in the order of
    ``names``."""
    at = term_slices(layout)
    return [c for n in names for c in range(at[n].start, at[n].stop)]


class RolloutEnv(Protocol):
    """The part of ``VecEnv`` a rollout loop drives (``evaluate``, ``distill.dagger``): an
    env that is not a whole ``VecEnv`` (a view of one with other observation columns) can
    be rolled out too."""

    @property
    def num_envs(self) -> int: ...

    @property
    def max_episode_length(self) -> int: ...

    def reset(self, seed: int | None = None) -> torch.Tensor: ...

    def step(self, action: torch.Tensor, hold: torch.Tensor | None = None) -> StepResult: ...


@runtime_checkable
class VecEnv(Protocol):
    """A batch of E environments stepped together (module docstring)."""

    num_envs: int
    """E, the number of environments."""
    obs_dim: int
    """O, the width of the ``policy`` observation."""
    act_dim: int
    """A, the width of an action."""
    device: torch.device
    """Where every tensor in and out lives."""
    max_episode_length: int
    """Control steps after which an episode is truncated."""

    @property
    def control_dt(self) -> float:
        """Seconds per control step."""
        ...

    @property
    def obs_groups(self) -> Mapping[str, int]:
        """Width of each observation group (``policy`` always; ``critic`` optional)."""
        ...

    def reset(self, seed: int | None = None) -> torch.Tensor:
        """Reset every env (reseeding if ``seed`` is given); returns the (E, O) observation."""
        ...

    def step(self, action: torch.Tensor, hold: torch.Tensor | None = None) -> StepResult:
        """Advance every env by one control step (module docstring)."""
        ...

    def group_obs(self) -> dict[str, torch.Tensor]:
        """The current observation of every group other than ``policy``, (E, width) each."""
        ...


class EpisodeBooks:
    """An adapter's running episode statistics, as ``info["episode"]`` (module docstring):
    per env the return, cost and length so far, and whether any step succeeded.

        books = EpisodeBooks(E, device)
        info["episode"] = books.step(reward, cost, success, done)   # None: none finished
    """

    def __init__(self, num_envs: int, device: torch.device | str = "cpu"):
        self.ret = torch.zeros(num_envs, device=device)
        self.cost = torch.zeros(num_envs, device=device)
        self.length = torch.zeros(num_envs, dtype=torch.long, device=device)
        self.success = torch.zeros(num_envs, dtype=torch.bool, device=device)

    def reset(self) -> None:
        """Every env starts an episode."""
        for buf in (self.ret, self.cost, self.length, self.success):
            buf.zero_()

    def step(self, reward: torch.Tensor, cost: torch.Tensor, success: torch.Tensor,
             done: torch.Tensor) -> dict[str, torch.Tensor] | None:
        """Count one step of every env; where any env finished, its episode's statistics
        (``info["episode"]``, for the envs flagged in ``done``), whose books then restart."""
        self.ret += reward
        self.cost += cost
        self.length += 1
        self.success |= success
        if not bool(done.any()):
            return None
        ep = {"return": self.ret.clone(), "cost": self.cost.clone(),
              "length": self.length.clone(), "success": self.success.clone(), "done": done}
        for buf in (self.ret, self.cost, self.length, self.success):
            buf.masked_fill_(done, 0)
        return ep


def uniform_actions(env: VecEnv, gen: torch.Generator) -> torch.Tensor:
    """(E, A) uniform random actions in [-1, 1] on the env's device, from ``gen`` (a CPU
    generator)."""
    u = torch.rand(env.num_envs, env.act_dim, generator=gen)
    return (2.0 * u - 1.0).to(env.device)


def check_vec_env(env: Any) -> None:
    """Raise TypeError naming what ``env`` lacks to be a ``VecEnv``."""
    missing = [name for name in ("num_envs", "obs_dim", "act_dim", "device",
                                 "max_episode_length", "control_dt", "obs_groups", "reset",
                                 "step", "group_obs") if not hasattr(env, name)]
    if missing:
        raise TypeError(f"{type(env).__name__} is not a robot_rl VecEnv: it lacks "
                        f"{', '.join(missing)} (see robot_rl.sim.vec_env)")
    if env.obs_groups.get(POLICY) != env.obs_dim:
        raise TypeError(f"{type(env).__name__}.obs_groups must hold 'policy' with width "
                        f"obs_dim={env.obs_dim}, got {dict(env.obs_groups)}")
