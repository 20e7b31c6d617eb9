"""The frozen flow policy as a residual's base, and what a residual learner needs of it:
its actions along recorded demonstrations, and critics that score the action executed.

    executor = base_executor(flow)               # acts step by step, zero noise
    acting = ResidualActing(flow, ResidualGraph(actor, 0.4, every=5))   # the whole policy
    base, next_base = base_along_episodes(flow, tr)   # (N, A) each, along recorded episodes
    buf = residual_demo_buffer(Dataset("data/push"), residual_env)   # (obs, base) -> action
    agent = ExecutedActionSAC(obs_dim, act_dim, sac, safety, scale=0.1)

ResFiT (Ankile et al. 2025, amazon-science/residual-offpolicy-rl) trains its residual's
critics on the state (with the base action) and the action executed,
``clip(base + scale * residual, -1, 1)``, so that demonstrations enter the replay as they
are: their recorded action is an executed action, and their observation is completed with
the action the base would take there (``use_base_policy_for_base_actions``). Half of every
batch is drawn from them (``offline_fraction`` 0.5). Here the base acts along each recorded
episode exactly as it acts online (``ResidualEnv``): a chunk of ``horizon`` actions at zero
noise every ``executed`` steps from the episode's first step, on the policy's observation
history; at an episode's last step the next observation's base is the first action of a
fresh chunk there.

``ResidualActing`` is a residual run's whole policy on the task's own env, one control
step per call: the base's action corrected by the residual, each correction held for
``every`` calls from the episode's start, as the exported artifact acts (``Policy``); a
one-step student (``robot_rl.distill.chunked``) learns from it.
"""

from __future__ import annotations

import torch

from robot_rl.algos import SAC
from robot_rl.algos.configs import SACConfig, SafetyConfig
from robot_rl.data.format import DatasetError
from robot_rl.data.reader import Dataset
from robot_rl.export.modules import ResidualGraph
from robot_rl.finetune.demos import (
    Transitions,
    add_transitions,
    check_dataset_env,
    transitions,
)
from robot_rl.policies import ChunkExecutor, ChunkPolicy
from robot_rl.policies.execution import HeldCorrection
from robot_rl.replay import ReplayBuffer
from robot_rl.sim.vec_env import VecEnv


@torch.no_grad()
def base_chunk(policy: ChunkPolicy, obs_hist: torch.Tensor) -> torch.Tensor:
    """(B, H, A) the flow's chunk at zero noise for observation histories (B, T, O): the
    residual's base, as the exported artifact runs it."""
    return policy(obs_hist, torch.zeros(obs_hist.shape[0], policy.horizon, policy.act_dim,
                                        device=obs_hist.device))


def base_executor(policy: ChunkPolicy) -> ChunkExecutor:
    """The flow policy acting step by step as the residual's base (zero noise)."""
    cfg = policy.cfg
    return ChunkExecutor(lambda hist: base_chunk(policy, hist), cfg.horizon, cfg.executed,
                         cfg.obs_history)


@torch.no_grad()
def fresh_base(policy: ChunkPolicy, obs: torch.Tensor) -> torch.Tensor:
    """(B, A) the first action of a fresh chunk at observations (B, O) (an episode's
    first step: its history is the observation repeated)."""
    return base_chunk(policy, obs[:, None].repeat(1, policy.obs_history, 1))[:, 0]


@torch.no_grad()
def base_along_episodes(policy: ChunkPolicy, tr: Transitions
                        ) -> tuple[torch.Tensor, torch.Tensor]:
    """(base, next_base), (N, A) each: the base's action at every recorded step's
    observation and at its next observation, the base acting along each episode as it acts
    online (module docstring). ``tr``: ``demos.transitions``, each episode's steps in order."""
    episode = tr["episode"].cpu()
    n = int(episode.shape[0])
    base = torch.zeros(n, policy.act_dim)
    next_base = torch.zeros(n, policy.act_dim)
    if n == 0:
        return base, next_base
    ids, counts = torch.unique_consecutive(episode, return_counts=True)
    if len(torch.unique(ids)) != len(ids):
        raise DatasetError("the transitions' episodes are not contiguous")
    starts = torch.cumsum(counts, 0) - counts
    L = int(counts.max())
    step = torch.arange(L)
    last = starts + counts - 1
    live = step[None] < counts[:, None]  # (E, L)
    rows = torch.where(live, starts[:, None] + step, last[:, None])  # ended: its last step
    dev = next(policy.parameters()).device
    obs = tr["obs"].cpu()
    executor = base_executor(policy)
    for t in range(L):
        a = executor(obs[rows[:, t]].to(dev)).cpu()  # (E, A), E episodes
        base[rows[live[:, t], t]] = a[live[:, t]]
    inner = torch.ones(n, dtype=torch.bool)
    inner[last] = False
    next_base[inner] = base[torch.nonzero(inner).squeeze(1) + 1]
    next_base[last] = fresh_base(policy, tr["next_obs"].cpu()[last].to(dev)).cpu()
    return base, next_base


def residual_demo_buffer(ds: Dataset, env: VecEnv, policy: ChunkPolicy,
                         device: str | torch.device = "cpu") -> ReplayBuffer:
    """A buffer of ``ds``'s steps for a residual learner on ``env`` (the ``ResidualEnv``'s
    inner env; checked like ``demos.demo_buffer``) whose critics score executed actions:
    observations (N, O + A) completed with the base's action, the recorded actions (N, A)."""
    check_dataset_env(ds, env)
    tr = transitions(ds, "cpu")
    base, next_base = base_along_episodes(policy, tr)
    buf = ReplayBuffer(max(int(tr["obs"].shape[0]), 1), env.obs_dim + env.act_dim,
                       env.act_dim, device)
    add_transitions(buf, tr | {"obs": torch.cat([tr["obs"], base], 1),
                               "next_obs": torch.cat([tr["next_obs"], next_base], 1)}, ds.root)
    return buf


class ExecutedActionSAC(SAC):
    """SAC whose actor acts residuals in [-1, 1] on the base action that ends its
    observation (the last A features), and whose critics and cost critic score the action
    executed, ``clip(base + scale * residual, -1, 1)`` (ResFiT's critics). The replay holds
    executed actions; the actor's gradient reaches it through the sum (not where the clip
    binds)."""

    def __init__(self, obs_dim: int, act_dim: int, cfg: SACConfig, safety: SafetyConfig,
                 scale: float, device: str | torch.device = "cpu", seed: int = 0):
        super().__init__(obs_dim, act_dim, cfg, safety, device=device, seed=seed)
        self.scale = scale

    def critic_action(self, x: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
        dims = slice(self.obs_dim - self.act_dim, self.obs_dim)
        base = self.normalizer.inverse(x[:, dims], dims) if self.cfg.normalize_obs \
            else x[:, dims]
        return (base + self.scale * a).clamp(-1.0, 1.0)


class ResidualActing:
    """A residual run's policy acting step by step on the task's env (module docstring):
    ``__call__`` takes observations (E, O) and returns the actions (E, A) to apply now;
    ``reset(mask)`` starts a new episode for the envs in ``mask`` (all if None)."""

    def __init__(self, policy: ChunkPolicy, residual: ResidualGraph):
        self.base = base_executor(policy)
        self.residual = residual.eval()
        self.held = HeldCorrection(residual.every)

    @property
    def periods(self) -> tuple[int, int]:
        """The periods of its state in control steps: the base's executed steps per chunk,
        the residual's per decision."""
        return self.base.execute, self.held.every

    def reset(self, mask: torch.Tensor | None = None) -> None:
        self.base.reset(mask)
        self.held.reset(mask)

    @torch.no_grad()
    def __call__(self, obs: torch.Tensor) -> torch.Tensor:
        base = self.base(obs)
        return self.held(base, lambda decide: self.residual(obs[decide], base[decide]))
