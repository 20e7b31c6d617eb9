"""DSRL: reinforcement learning in a flow policy's noise space (Wagenmaker et al. 2025; the
reference implementation is ``ajwagen/dsrl``, whose recipe ``finetune.configs.dsrl_sac``
follows).

    env = NoiseActionEnv(make_env("push", 16), flow_policy, noise_scale=1.5)
    obs = env.reset(seed=0)
    obs, r, c, terminated, truncated, info = env.step(noise_action)   # one chunk

The frozen flow policy maps (observation, noise) to an action chunk deterministically. This
env wraps a ``VecEnv`` so that its *action* is that noise, bounded: an action in [-1, 1]^(H A)
becomes the noise ``noise_scale * action`` of an (H, A) chunk, and one step executes the
chunk's first K actions in the wrapped env. Any learner of ``robot_rl`` then fine-tunes the
diffusion policy without touching its weights: SAC with its critic ensemble, the safety
critic's gate and Lagrangian, the runner's evaluation and checkpoints, unchanged; and the
shield still guards every executed action inside the wrapped env. SAC's warm-up draws the
noise as the flow policy was trained to see it (standard normal, clipped to the bound), so
the first transitions are the BC policy's own and exploration starts from the
demonstrations.

One step returns what ``MacroStep`` makes of the K executed steps: the sums of their
rewards and costs (so discount with gamma^K per step), the success test at the last step
taken (the state the chunk leaves), the observation after it; an env whose episode ends
inside a chunk holds still for the chunk's remaining steps.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from rich.console import Console

from robot_rl.algos import SAC
from robot_rl.bc import bc_env, bc_task_config, load_bc_policy
from robot_rl.checkpoint import load_checkpoint
from robot_rl.errors import ConfigError
from robot_rl.finetune.configs import DSRLConfig, NoiseSteps
from robot_rl.finetune.macro_step import MacroStep, MacroStepEnv
from robot_rl.policies import ChunkPolicy, ObsHistory
from robot_rl.runner import Runner, load_agent
from robot_rl.sim.configs import DRPreset
from robot_rl.sim.vec_env import StepResult, VecEnv


class NoiseActionEnv(MacroStepEnv):
    """A ``VecEnv`` whose actions are a flow policy's noise (see module docstring)."""

    def __init__(self, env: VecEnv, policy: ChunkPolicy, noise_scale: float = 1.5,
                 noise: NoiseSteps = "executed"):
        if policy.kind != "flow":
            raise ConfigError(f"DSRL steers a flow policy's noise; got a {policy.kind!r} policy")
        if noise_scale <= 0:
            raise ConfigError(f"noise_scale must be > 0, got {noise_scale}")
        super().__init__(env, policy, policy.cfg.executed)
        self.noise_scale = noise_scale
        self.horizon, self.execute = policy.horizon, policy.cfg.executed
        self.noise_steps = self.execute if noise == "executed" else self.horizon
        """Chunk steps whose noise an action sets (the rest of the chunk's noise is 0)."""
        self.obs_dim = env.obs_dim
        self.act_dim = self.noise_steps * policy.act_dim
        self._hist = ObsHistory(policy.obs_history)

    @property
    def obs_groups(self) -> Mapping[str, int]:
        return self.env.obs_groups

    def group_obs(self) -> dict[str, torch.Tensor]:
        return self.env.group_obs()

    def reset(self, seed: int | None = None) -> torch.Tensor:
        obs = self.env.reset(seed=seed)
        self._hist.push(obs)
        return obs

    def chunk(self, action: torch.Tensor) -> torch.Tensor:
        """(E, H, A) chunk the flow policy makes of noise actions (E, S A) now (S: the
        steps whose noise an action sets; the other H - S steps' noise is 0)."""
        assert self._hist.value is not None, "reset() first"
        with torch.no_grad():
            return self.policy(self._hist.value, self.noise(action.to(self.device)))

    def noise(self, action: torch.Tensor) -> torch.Tensor:
        """(N, H, A) the flow's noise for noise actions (N, S A): ``noise_scale`` times the
        action for the first S steps, 0 for the rest."""
        N, A = action.shape[0], self.policy.act_dim
        noise = torch.zeros(N, self.horizon, A, device=action.device)
        noise[:, :self.noise_steps] = self.noise_scale * action.float().view(
            N, self.noise_steps, A)
        return noise

    def __repr__(self) -> str:
        return (f"NoiseActionEnv(noise of {self.noise_steps}x{self.policy.act_dim} of a "
                f"{self.horizon}-step chunk, "
                f"{self.execute} steps per step, scale {self.noise_scale}) of {self.env}")

    def step(self, action: torch.Tensor, hold: torch.Tensor | None = None) -> StepResult:
        chunk = self.chunk(action)
        acc = MacroStep(self.num_envs, self.device)
        obs, info = torch.empty(0), dict[str, Any]()
        for k in range(self.execute):
            obs, r, c, term, trunc, info = self.env.step(chunk[:, k], hold=acc.held(hold))
            done = acc.add(r, c, term, trunc, info)
            # the flow policy's history follows every executed step
            self._hist.push(obs, done)
        return acc.result(obs, info, chunk=chunk)


class DSRLRunner(Runner):
    """The SAC runner on ``NoiseActionEnv``s of the flow policy's task, made as its
    dataset was recorded (randomization, episode length)."""

    kind = "dsrl"
    eval_gate = False
    """Evaluation runs the actor's mean noise, ungated: the exported DSRL artifact has no gate
    (its cost critic scores noise, not actions), so evaluation decides as the artifact does."""
    config_type = DSRLConfig
    cfg: DSRLConfig
    warmup = "noise"  # the flow policy's own noise (``warmup_action``)

    def __init__(self, cfg: DSRLConfig, console: Console | None = None):
        if cfg.resume is not None:  # the policy and noise scale of the run being resumed
            saved = DSRLConfig.from_saved(load_checkpoint(cfg.resume)["config"])
            cfg = dataclasses.replace(cfg, policy=saved.policy, noise_scale=saved.noise_scale,
                                      noise=saved.noise, step_gamma=saved.step_gamma)
        policy, bc_cfg, bc_state = load_bc_policy(cfg.policy)
        policy = policy.to(cfg.device)  # the base acts where the envs and the learner are
        env_cfg = bc_task_config(bc_state, cfg.policy, "DSRL")
        task = env_cfg.name
        K = bc_cfg.policy.executed
        step_gamma = env_cfg.discount() if cfg.step_gamma is None else cfg.step_gamma
        cfg = dataclasses.replace(cfg, task=task, env=env_cfg, step_gamma=step_gamma,
                                  sac=dataclasses.replace(cfg.sac, gamma=step_gamma ** K))
        cfg.validate()

        super().__init__(cfg, console,
                         env=noise_env(cfg, policy, bc_state, cfg.num_envs, cfg.seed),
                         eval_env=noise_env(cfg, policy, bc_state, min(cfg.eval_episodes, 32),
                                            cfg.seed + 10_000))
        self.flow_policy = policy
        self.console.print(f"DSRL over the noise of {cfg.policy} ({bc_cfg.algo}, chunk "
                           f"{policy.horizon}x{policy.act_dim}, {K} steps executed, the "
                           f"noise of {self.env.act_dim // policy.act_dim} chosen); gamma "
                           f"per chunk {self.cfg.sac.gamma:.3f}")

    def before_training(self) -> None:
        """With ``freeze_normalizer``, SAC's normalizer takes the flow policy's fixed dataset
        statistics (as DSRL) before the first step."""
        if self.env_steps == 0 and self.cfg.sac.freeze_normalizer:
            flow, norm = self.flow_policy.obs_norm, self.agent.normalizer
            with torch.no_grad():
                norm.mean.copy_(flow.mean)
                norm.var.copy_(flow.std ** 2)
                norm.count.fill_(1.0)
            self.agent.freeze_normalizer()

    def warmup_action(self, obs: torch.Tensor) -> torch.Tensor:
        """Before learning starts the flow policy acts as trained: standard normal noise,
        as an action in [-1, 1] (clipped at +-noise_scale), drawn from the runner's warm-up
        generator (kept in the checkpoint)."""
        E, D = self.env.num_envs, self.env.act_dim
        noise = torch.randn(E, D, generator=self._action_gen) / self.cfg.noise_scale
        return noise.clamp(-1.0, 1.0).to(self.env.device)


def noise_env(cfg: DSRLConfig, policy: ChunkPolicy, bc_state: dict[str, Any], num_envs: int,
              seed: int, dr: DRPreset | None = None) -> NoiseActionEnv:
    """A ``NoiseActionEnv`` of the flow policy's task, made as its dataset was recorded
    (``dr``: a preset replacing the run's)."""
    env = bc_env(bc_state, cfg.policy, "DSRL", num_envs, seed, dr or cfg.dr, cfg.device,
                 cfg.backend, cfg.warp)
    return NoiseActionEnv(env, policy, cfg.noise_scale, cfg.noise)


def load_dsrl(path: str | Path, num_envs: int, seed: int, dr: DRPreset | None = None
              ) -> tuple[SAC, DSRLConfig, NoiseActionEnv]:
    """A DSRL run's agent (SAC over the noise), its config and a noise env to act in."""
    if load_checkpoint(path).get("kind") != "dsrl":
        raise ConfigError(f"{path} is not a DSRL run")
    agent, cfg, _ = load_agent(path, DSRLConfig)
    assert isinstance(cfg, DSRLConfig)
    policy, _, bc_state = load_bc_policy(cfg.policy)
    return agent, cfg, noise_env(cfg, policy, bc_state, num_envs, seed, dr)
