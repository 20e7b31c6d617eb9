"""Filtered behaviour cloning: a BC policy re-trained on its own successful rollouts, the cheap
control every fine-tuner is compared with (``robot-rl bc-filtered``).

    robot-rl bc-filtered runs/push__bc-flow__0__20261123-101500 --rounds 10 --rollouts 64

Each round rolls the acting policy (its EMA weights, the flow's noise sampled as at deploy)
out for ``rollouts`` episodes in the dataset's task, keeps the episodes that succeeded, and
trains ``steps`` more gradient steps of the same BC loss on the demonstrations plus every
episode kept so far (the "success-filtered" self-imitation of RL-100's iterative offline
stage, and of ReST-style filtering). Evaluation after each round decides as the exported
policy does (sampled noise, the same chunk execution). The run directory is a BC run
(``config.json``, ``checkpoints/latest.pt`` of kind ``bc``: eval, export, dsrl and distill
take it) whose ``eval.csv`` counts env steps and the training cost like the RL runners'.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import torch
from rich.console import Console
from rich.progress import TextColumn

from robot_rl.bc.config import FilteredBCConfig
from robot_rl.bc.runner import (
    BCRunner,
    chunked_policy_fn,
    evaluate_chunked,
    load_bc_policy,
    make_eval_env,
)
from robot_rl.checkpoint import default_run_name, write_curve
from robot_rl.config_io import to_dict
from robot_rl.errors import ConfigError
from robot_rl.evaluate import EvalResult
from robot_rl.policies import ChunkData, ChunkPolicy
from robot_rl.run_loop import RunLoop
from robot_rl.sim.vec_env import VecEnv

FIELDS = ("env_steps", "seconds", "success_rate", "return", "episode_cost",
          "train_cumulative_cost", "round", "kept_episodes")


@dataclasses.dataclass
class Rollouts:
    """The successful episodes of a round's rollouts, frame by frame."""

    obs: torch.Tensor  # (N, O)
    actions: torch.Tensor  # (N, A) the executed actions
    episode: torch.Tensor  # (N,) the kept episode of each frame (0, 1, ...)
    episodes: int
    """Episodes finished (kept or not)."""
    successes: int
    env_steps: int
    cost: float
    """Summed constraint cost of every step."""


@torch.no_grad()
def successful_rollouts(policy: ChunkPolicy, env: VecEnv, episodes: int, seed: int,
                        gen: torch.Generator) -> Rollouts:
    """Roll ``policy`` out (noise from ``gen``) until ``episodes`` episodes finished; the
    successful ones' observations and executed actions. Episodes still running when the
    last one finishes are dropped."""
    run = chunked_policy_fn(policy, gen)
    obs = env.reset(seed=seed)
    E = env.num_envs
    steps_obs: list[torch.Tensor] = []
    steps_act: list[torch.Tensor] = []
    start = [0] * E
    kept_obs: list[torch.Tensor] = []
    kept_act: list[torch.Tensor] = []
    finished = successes = env_steps = 0
    cost = 0.0
    while finished < episodes:
        action = run(obs)
        steps_obs.append(obs)
        steps_act.append(action)
        obs, _, c, terminated, truncated, info = env.step(action)
        env_steps += E
        cost += float(c.sum())
        ended = terminated | truncated
        run.reset(ended)
        t = len(steps_obs)
        for i in ended.nonzero().squeeze(1).tolist():
            if finished < episodes:
                finished += 1
                if bool(info["episode"]["success"][i]):
                    successes += 1
                    kept_obs.append(torch.stack([s[i] for s in steps_obs[start[i]:t]]))
                    kept_act.append(torch.stack([a[i] for a in steps_act[start[i]:t]]))
            start[i] = t
    ep = torch.cat([torch.full((len(o),), k) for k, o in enumerate(kept_obs)]) if kept_obs \
        else torch.zeros(0, dtype=torch.long)
    return Rollouts(torch.cat(kept_obs) if kept_obs else torch.zeros(0, env.obs_dim),
                    torch.cat(kept_act) if kept_act else torch.zeros(0, env.act_dim), ep.long(),
                    finished, successes, env_steps, cost)


class FilteredBC:
    """The rounds (see module docstring) on a ``BCRunner`` of the starting run's config, in
    a ``RunLoop`` that counts rounds (the time budget, the target, checkpoints, Ctrl-C,
    TensorBoard)."""

    def __init__(self, cfg: FilteredBCConfig, console: Console | None = None):
        cfg.validate()
        self.cfg, self.console = cfg, console or Console()
        start, bc_cfg, state = load_bc_policy(cfg.policy)
        self.task = state.get("task") or "data"
        name = cfg.run_name or default_run_name(self.task, "bc-filtered", cfg.seed)
        run_cfg = dataclasses.replace(bc_cfg, steps=cfg.rounds * cfg.steps, lr=cfg.lr,
                                      seed=cfg.seed, runs_dir=cfg.runs_dir, run_name=name,
                                      resume=None, eval_episodes=0, progress=False,
                                      time_budget=None, target_success=None)
        self.runner = BCRunner(run_cfg, console=Console(quiet=True))
        for net in (self.runner.policy, self.runner.ema):  # start from the acting weights
            if net is not None:
                net.load_state_dict(start.state_dict())
        self.run_dir = self.runner.run_dir
        (self.run_dir / "filtered.json").write_text(json.dumps(
            {**to_dict(cfg), "start": str(cfg.policy)}, indent=2) + "\n")
        self.demos = self.runner.data
        env = make_eval_env(self.runner.dataset, cfg.num_envs, cfg.seed + 30_000,
                            device=bc_cfg.device)
        eval_env = make_eval_env(self.runner.dataset, min(cfg.eval_episodes, 32),
                                 cfg.seed + 10_000, device=bc_cfg.device)
        if env is None or eval_env is None:
            raise ConfigError(f"{cfg.policy}'s data is of no simulated task: filtered BC "
                              f"rolls the policy out in simulation")
        self.env, self.eval_env = env, eval_env
        self.gen = torch.Generator(device=bc_cfg.device).manual_seed(cfg.seed)
        self.history: list[dict[str, float]] = []
        self.round = self.env_steps = 0
        self.cost = 0.0
        self.kept: list[Rollouts] = []
        self.elapsed = 0.0
        self.writer: Any = None

    @property
    def kept_episodes(self) -> int:
        """Successful episodes kept so far, over every round."""
        return sum(r.successes for r in self.kept)

    def _data(self, kept: list[Rollouts]) -> ChunkData:
        """The demonstrations' frames and every kept episode's, as chunk samples."""
        d = self.demos
        obs = [d.obs.cpu()] + [r.obs for r in kept]
        act = [d.actions.cpu()] + [r.actions for r in kept]
        # the demos' episodes keep their (ordered) indices; each kept one comes after them
        ep = [self._demo_episodes]
        offset = int(self._demo_episodes.max()) + 1 if len(self._demo_episodes) else 0
        for r in kept:
            ep.append(r.episode + offset)
            offset += r.successes
        pc = self.runner.cfg.policy
        return ChunkData(torch.cat(obs), torch.cat(act), torch.cat(ep), pc.horizon,
                         pc.obs_history, d.device)

    def train(self) -> list[dict[str, float]]:
        cfg, runner = self.cfg, self.runner
        self._demo_episodes = torch.as_tensor(
            runner.demos.train["episode_index"]).long()
        columns = (TextColumn("success {task.fields[success]}"),
                   TextColumn("kept {task.fields[kept]}"))
        with RunLoop(self, f"{self.task} bc-filtered", cfg.rounds, unit="rounds",
                     count="round", columns=columns, fields={"success": "-", "kept": 0},
                     stop_reason=f"{cfg.rounds:,} rounds done") as loop:
            if not self.history:
                self.evaluate_now()
            while self.round < cfg.rounds:
                loop.check_interrupt()
                ro = successful_rollouts(runner.acting.eval(), self.env, cfg.rollouts,
                                         cfg.seed + 1000 * (self.round + 1), self.gen)
                self.env_steps += ro.env_steps
                self.cost += ro.cost
                if ro.successes:
                    self.kept.append(ro)
                    runner.data = self._data(self.kept)
                runner.policy.train()
                for _ in range(cfg.steps):
                    loop.check_interrupt()
                    runner._update()
                    runner.grad_steps += 1
                self.round += 1
                loop.clock()
                kept = self.kept_episodes
                self.console.print(f"round {self.round}: {ro.successes}/{ro.episodes} "
                                   f"rollouts succeeded ({kept} kept in all, "
                                   f"{len(runner.data):,} frames)", highlight=False)
                result = self.evaluate_now()
                loop.show(success=f"{result.success_rate:.0%}", kept=kept)
                if cfg.total_steps is not None and self.env_steps >= cfg.total_steps:
                    loop.stop_reason = f"{self.env_steps:,} env steps rolled out"
                    break
                if loop.stop_at(result):
                    break
        return self.history

    def evaluate_now(self) -> EvalResult:
        """Evaluate the acting policy as the exported one decides; a row of eval.csv."""
        cfg = self.cfg
        res = evaluate_chunked(self.runner.acting.eval(), self.eval_env, cfg.eval_episodes,
                               seed=cfg.seed + 10_000)
        kept = self.kept_episodes
        row = {"env_steps": float(self.env_steps), "seconds": self.elapsed,
               "success_rate": res.success_rate, "return": res.return_mean,
               "episode_cost": res.cost_mean, "train_cumulative_cost": self.cost,
               "round": float(self.round), "kept_episodes": float(kept)}
        self.history.append(row)
        write_curve(self.run_dir, self.history, FIELDS)
        if self.writer is not None:
            for key, value in {**res.metrics("eval"), "charts/round": float(self.round),
                               "charts/kept_episodes": float(kept),
                               "charts/train_cumulative_cost": self.cost}.items():
                self.writer.add_scalar(key, value, self.env_steps)
        self.console.print(f"[{self.env_steps:>9,} env steps, {self.elapsed:6.0f} s] round "
                           f"{self.round}  success {res.success_rate:5.1%}  return "
                           f"{res.return_mean:7.2f}  cost {res.cost_mean:.2f}",
                           highlight=False)
        return res

    def save(self) -> Path:
        """The BC run's checkpoint (``checkpoints/latest.pt`` of kind ``bc``)."""
        return self.runner.save()


def filtered_bc(cfg: FilteredBCConfig, console: Console | None = None) -> Path:
    """Run filtered BC; its run directory."""
    fb = FilteredBC(cfg, console)
    fb.train()
    return fb.run_dir
