"""DSRL: reinforcement learning in a flow policy's noise space (Wagenmaker et al. 2025).

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

One step returns the sums of the executed steps' rewards and costs (so discount with
gamma^K per step), the OR of their success, termination, truncation and shield flags, and
the observation after the last one. An env whose episode ends inside a chunk holds still
(the env's hold) for the chunk's remaining steps, at the start of its next episode; its
``final_obs`` and ``episode`` entries are those of the step where it ended.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import torch
import tyro
from rich.console import Console

from robot_rl.algos import SAC, SACConfig
from robot_rl.bc import bc_task, load_bc_policy, make_task_env
from robot_rl.checkpoint import load_checkpoint
from robot_rl.errors import ConfigError
from robot_rl.policies import ChunkPolicy, ObsHistory
from robot_rl.evaluate import EvalResult
from robot_rl.runner import Runner, TrainConfig, evaluate_agent, load_agent
from robot_rl.sim import TaskConfig, make_task_config
from robot_rl.sim.randomization import DRPreset
from robot_rl.sim.vec_env import StepResult, VecEnv, check_vec_env


class NoiseActionEnv:
    """A ``VecEnv`` whose actions are a flow policy's noise (see module docstring)."""

    def __init__(self, env: VecEnv, policy: ChunkPolicy, noise_scale: float = 1.5):
        check_vec_env(env)
        if policy.kind != "flow":
            raise ConfigError(f"DSRL steers a flow policy's noise; got a {policy.kind!r} policy")
        if (policy.obs_dim, policy.act_dim) != (env.obs_dim, env.act_dim):
            raise ConfigError(f"the policy (obs {policy.obs_dim}, act {policy.act_dim}) does "
                              f"not fit the env (obs {env.obs_dim}, act {env.act_dim})")
        if noise_scale <= 0:
            raise ConfigError(f"noise_scale must be > 0, got {noise_scale}")
        self.env = env
        self.policy = policy.eval().requires_grad_(False)
        self.noise_scale = noise_scale
        self.horizon, self.execute = policy.horizon, policy.cfg.executed
        self.num_envs = env.num_envs
        self.obs_dim = env.obs_dim
        self.act_dim = policy.horizon * policy.act_dim
        self.device = env.device
        self.steps_per_step = self.execute
        """Control steps of the wrapped env per step (the runner counts env steps by it)."""
        self.max_episode_length = math.ceil(env.max_episode_length / self.execute)
        self._hist = ObsHistory(policy.obs_history)

    @property
    def control_dt(self) -> float:
        return self.env.control_dt * self.execute

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
        """(E, H, A) chunk the flow policy makes of noise actions (E, H A) now."""
        noise = self.noise_scale * action.to(self.device).float().view(
            self.num_envs, self.horizon, self.policy.act_dim)
        assert self._hist.value is not None, "reset() first"
        with torch.no_grad():
            return self.policy(self._hist.value, noise)

    def __repr__(self) -> str:
        return (f"NoiseActionEnv(noise of {self.horizon}x{self.policy.act_dim}, "
                f"{self.execute} steps per step, scale {self.noise_scale}) of {self.env}")

    def step(self, action: torch.Tensor, hold: torch.Tensor | None = None) -> StepResult:
        E, dev = self.num_envs, self.device
        chunk = self.chunk(action)
        ended = torch.zeros(E, dtype=torch.bool, device=dev)  # the episode ended in this chunk
        reward = torch.zeros(E, device=dev)
        cost = torch.zeros(E, device=dev)
        terminated = torch.zeros(E, dtype=torch.bool, device=dev)
        truncated = torch.zeros(E, dtype=torch.bool, device=dev)
        success = torch.zeros(E, dtype=torch.bool, device=dev)
        final_obs: torch.Tensor | None = None
        final_groups: dict[str, torch.Tensor] = {}
        safety: dict[str, torch.Tensor] = {}
        terms: dict[str, dict[str, torch.Tensor]] = {"reward_terms": {}, "cost_terms": {}}
        episode: dict[str, torch.Tensor] = {}
        info: dict[str, Any] = {}
        obs = torch.empty(0)
        for k in range(self.execute):
            held = ended if hold is None else ended | hold.to(dev, torch.bool)
            obs, r, c, term, trunc, info = self.env.step(chunk[:, k], hold=held)
            live = ~ended
            reward += torch.where(live, r, 0.0)
            cost += torch.where(live, c, 0.0)
            terminated |= term & live
            truncated |= trunc & live
            success |= info["success"] & live
            for name, flag in info.get("safety", {}).items():
                safety[name] = safety.get(name, torch.zeros_like(flag)) | (flag & live)
            for key, summed in terms.items():
                for name, v in info.get(key, {}).items():
                    summed[name] = summed.get(name, 0.0) + torch.where(live, v, 0.0)
            done = (term | trunc) & live
            final_obs = info["final_obs"] if final_obs is None else \
                torch.where(done[:, None], info["final_obs"], final_obs)
            for name, v in info.get("final_obs_groups", {}).items():
                final_groups[name] = v if name not in final_groups else \
                    torch.where(done[:, None], v, final_groups[name])
            if "episode" in info:
                for key, v in info["episode"].items():
                    if key != "done":
                        episode[key] = v.clone() if key not in episode else \
                            torch.where(done, v, episode[key])
            ended |= done
            # the flow policy's history follows every executed step
            self._hist.push(obs, done)
        assert final_obs is not None
        out: dict[str, Any] = {
            "final_obs": torch.where(ended[:, None], final_obs, obs), "success": success,
            "safety": safety, **terms, "chunk": chunk}
        if final_groups:
            out["final_obs_groups"] = {n: torch.where(ended[:, None], v, info["obs_groups"][n])
                                       for n, v in final_groups.items()}
        if "obs_groups" in info:
            out["obs_groups"] = info["obs_groups"]
        if bool(ended.any()):
            out["episode"] = {**episode, "done": ended}
        return obs, reward, cost, terminated, truncated, out


def _dsrl_sac() -> SACConfig:
    # DSRL's own recipe (robomimic): few envs, several updates per chunk, a warm-up of the
    # flow policy's own rollouts, target entropy 0 over the noise
    return SACConfig(updates_per_step=8, learning_starts=6_000, num_critics=2,
                     target_entropy=0.0)


@dataclasses.dataclass(kw_only=True)
class DSRLConfig(TrainConfig):
    """Fine-tune a flow policy (robot-rl bc) with DSRL: SAC and the safety critic choose the
    policy's noise; its weights stay frozen.

    Example: robot-rl dsrl runs/push__bc-flow__0__20261123-101500 --time-budget 1800
    """

    policy: Annotated[Path, tyro.conf.Positional]
    """The flow policy's run directory (robot-rl bc --algo bc-flow) or checkpoint."""
    # the task and its config come from the flow policy's run (its dataset's task)
    task: tyro.conf.Suppress[str] = "reach"
    env: tyro.conf.Suppress[TaskConfig] = dataclasses.field(
        default_factory=lambda: make_task_config("reach"))
    num_envs: int = 4
    """Parallel environments (few, with several updates per step, as in DSRL)."""
    noise_scale: float = 1.5
    """SAC's actions in [-1, 1] become noise of this magnitude (the flow's input)."""
    step_gamma: float = 0.99
    """Discount per control step; each chunk of K steps is discounted by step_gamma^K
    (this sets --sac.gamma)."""
    sac: SACConfig = dataclasses.field(default_factory=_dsrl_sac)
    """SAC hyper-parameters over the noise (its gamma is set from --step-gamma;
    learning_starts counts control steps, 6,000 = 1,500 chunks of the flow policy's own
    noise; 8 updates per step of 4 envs = 2 per chunk)."""

    def validate(self) -> None:
        super().validate()
        if self.noise_scale <= 0 or not 0.0 < self.step_gamma < 1.0:
            raise ConfigError("--noise-scale must be > 0 and --step-gamma in (0, 1)")


class DSRLRunner(Runner):
    """The SAC runner on ``NoiseActionEnv``s of the flow policy's task, made as its
    dataset was recorded (randomization, episode length)."""

    kind = "dsrl"
    cfg: DSRLConfig

    def __init__(self, cfg: DSRLConfig, console: Console | None = None):
        if cfg.resume is not None:  # the policy and noise scale of the run being resumed
            saved = DSRLConfig.from_saved(load_checkpoint(cfg.resume)["config"])
            cfg = dataclasses.replace(cfg, policy=saved.policy, noise_scale=saved.noise_scale,
                                      step_gamma=saved.step_gamma)
        policy, bc_cfg, bc_state = load_bc_policy(cfg.policy)
        task, making = bc_task(bc_state, cfg.policy, "DSRL"), bc_state.get("env", {})
        env_cfg = make_task_config(task)
        if "episode_length" in making:
            env_cfg.episode_length = int(making["episode_length"])
        K = bc_cfg.policy.executed
        cfg = dataclasses.replace(cfg, task=task, env=env_cfg, sac=dataclasses.replace(
            cfg.sac, gamma=cfg.step_gamma ** K))
        cfg.validate()

        super().__init__(cfg, console,
                         env=noise_env(cfg, policy, bc_state, cfg.num_envs, cfg.seed),
                         eval_env=noise_env(cfg, policy, bc_state, min(cfg.eval_episodes, 32),
                                            cfg.seed + 10_000))
        self.flow_policy = policy
        self._noise_gen = torch.Generator().manual_seed(cfg.seed)
        self.console.print(f"DSRL over the noise of {cfg.policy} ({bc_cfg.algo}, chunk "
                           f"{policy.horizon}x{policy.act_dim}, {K} steps executed); "
                           f"gamma per chunk {self.cfg.sac.gamma:.3f}")

    def evaluate_policy(self, env: VecEnv, episodes: int, seed: int) -> EvalResult:
        """The actor's mean noise, ungated: the exported DSRL artifact has no gate (its cost
        critic scores noise, not actions), so evaluation decides as the artifact does."""
        return evaluate_agent(self.agent, env, episodes, seed=seed, gate=False)

    def warmup_action(self, obs: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        """Before learning starts the flow policy acts as trained: standard normal noise,
        as an action in [-1, 1] (clipped at +-noise_scale)."""
        E, D = self.env.num_envs, self.env.act_dim
        noise = torch.randn(E, D, generator=self._noise_gen) / self.cfg.noise_scale
        return noise.clamp(-1.0, 1.0).to(self.env.device), None, None


def noise_env(cfg: DSRLConfig, policy: ChunkPolicy, bc_state: dict[str, Any], num_envs: int,
              seed: int, dr: DRPreset | None = None) -> NoiseActionEnv:
    """A ``NoiseActionEnv`` of the flow policy's task, made as its dataset was recorded
    (``dr``: a preset replacing the run's)."""
    task = bc_state["task"]
    env = make_task_env(task, bc_state.get("env", {}), num_envs, seed, dr or cfg.dr,
                        cfg.device)
    if env is None:
        raise ConfigError(f"task {task!r} of {cfg.policy} is not in the simulator's registry")
    return NoiseActionEnv(env, policy, cfg.noise_scale)


def load_dsrl(path: str | Path, num_envs: int, seed: int, dr: DRPreset | None = None
              ) -> tuple[SAC, DSRLConfig, NoiseActionEnv]:
    """A DSRL run's agent (SAC over the noise), its config and a noise env to act in."""
    if load_checkpoint(path).get("kind") != "dsrl":
        raise ConfigError(f"{path} is not a DSRL run")
    agent, cfg, _ = load_agent(path, DSRLConfig)
    assert isinstance(cfg, DSRLConfig)
    policy, _, bc_state = load_bc_policy(cfg.policy)
    return agent, cfg, noise_env(cfg, policy, bc_state, num_envs, seed, dr)
