"""Behaviour cloning of chunked policies from a dataset: ``robot-rl bc``.

    robot-rl bc --demos data/push-mh --algo bc-flow          # flow matching (default)
    robot-rl bc --demos data/push-mh --algo bc-mlp           # the MLP baseline
    robot-rl bc --resume runs/push__bc-flow__0__20261123-101500 --steps 40000

Any robot_rl dataset works (sim recordings, ROS teleop recordings, rosbag imports): the
policy learns ``observation.state`` -> chunks of ``action``. Every ``eval_every`` gradient
steps the EMA weights act in simulation (the dataset's task, randomization and episode
length) through the chunk executor, and success, return, cost and the shield's
interventions go to ``eval.csv``, TensorBoard and one log line. A dataset that matches none
of our tasks (a LeRobot dataset of another arm) trains the same way, state -> action in its
own units, clipped to the range its actions span; its evaluation is the action error on
held-out episodes (``--holdout``, 10% by default there): the RMSE of the predicted chunks
against the recorded ones, and that RMSE relative to always predicting the mean action
(1.0: nothing learnt). The run directory is the
training runner's: ``config.json``, ``tb/``, ``eval.csv``, ``checkpoints/latest.pt``
(atomic, every ``checkpoint_every`` seconds, at the end and on Ctrl-C) and
``learning_curve.png``.

Reference: Diffusion Policy (Chi et al., RSS 2023; real-stanford/diffusion_policy) as
LeRobot's ``DiffusionConfig`` packages it: a chunk of actions predicted from the state by a
generative model, executed in part, then planned again (receding horizon), normalized
actions, AdamW with weight decay 1e-6 and a cosine schedule, an EMA of the weights acting.
Deviations, each an option: flow matching (straight paths, uniform t, ``flow_steps`` = 10
Euler steps when acting) instead of DDPM's 100 noise levels; a residual MLP denoiser by
default (``--policy.denoiser unet`` for the temporal U-Net); horizon 8 executing 4 at our
50 Hz (``--policy.horizon``, ``--policy.execute``) where the reference plans 16 and
executes 8 at 10 Hz (0.16 s planned against 1.6 s); one observation (the reference: 2,
``--policy.obs-history``), the last action not seen (``--policy.ignore-obs``, see
``PolicyConfig``); idle frames left out (``--drop-idle``); learning rate 1e-3 decaying to
a tenth, without warm-up (the reference: 1e-4 to zero after 500 warm-up steps); the EMA's
decay ramps to 0.999 (the reference's to 0.9999); gradients clipped at norm 1.
docs/learners.md has the figures behind these choices.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import time
from pathlib import Path
from typing import Any

import torch
from rich.console import Console
from rich.progress import TextColumn

from robot_rl.bc.config import BCConfig
from robot_rl.bc.demos import action_error, chunk_data, load_demos
from robot_rl.checkpoint import (
    CHECKPOINT,
    FORMAT_VERSION,
    create_run_dir,
    load_checkpoint,
    save_atomic,
    write_config,
    write_curve,
)
from robot_rl.config_io import from_dict, to_dict
from robot_rl.data.reader import Dataset
from robot_rl.data.recover import feature_names
from robot_rl.errors import ConfigError
from robot_rl.evaluate import EvalResult, evaluate
from robot_rl.policies import ChunkExecutor, ChunkPolicy, make_policy
from robot_rl.run_loop import RunLoop
from robot_rl.sim import TaskConfig, make_env, make_task_config
from robot_rl.sim.configs import DRPreset, WarpOptions
from robot_rl.sim.env import BatchedEnv
from robot_rl.sim.tasks import list_tasks
from robot_rl.sim.vec_env import VecEnv

EVAL_FIELDS = ("grad_steps", "seconds", "success_rate", "return", "episode_cost",
               "loss", "action_rmse", "action_rmse_rel")


def make_task_env(task: str, making: dict[str, Any], num_envs: int, seed: int,
                  dr: DRPreset | None = None, device: str = "cpu", backend: str = "cpu",
                  warp: WarpOptions | None = None) -> BatchedEnv | None:
    """A simulated env of ``task`` made as a dataset's was recorded (``making``: its
    randomization, episode length and action space), on ``backend`` (``warp``: with its
    options); None if the task is not in the registry."""
    from robot_rl.recording.record import making_overrides

    if task not in list_tasks():
        return None
    return make_env(task, num_envs, backend=backend, dr=dr or making.get("dr", "off"),
                    seed=seed, device=device, warp=warp, **making_overrides(making))


def make_eval_env(ds: Dataset, num_envs: int, seed: int, dr: DRPreset | None = None,
                  device: str = "cpu") -> BatchedEnv | None:
    """``make_task_env`` for a dataset, checked: DatasetError if the env's observations or
    actions are not the dataset's."""
    from robot_rl.recording.record import dataset_spec

    spec = ds.require_spec("evaluation in simulation")
    env = make_task_env(spec.task, spec.env, num_envs, seed, dr, device)
    if env is not None:
        ds.check(dataset_spec(env, spec.cameras, spec.env))
    return env


def chunked_policy_fn(policy: ChunkPolicy, gen: torch.Generator, ensemble: float | None = None
                      ) -> ChunkExecutor:
    """The policy acting step by step: noise from ``gen``, chunks through an executor (told
    the steps since each episode's start where the policy sees a clock)."""

    @torch.no_grad()
    def chunk(obs_hist: torch.Tensor, steps: torch.Tensor | None = None) -> torch.Tensor:
        if steps is None:  # no clock (a duck-typed policy may not take the argument)
            return policy.sample(obs_hist, gen)
        return policy.sample(obs_hist, gen, steps)

    cfg = policy.cfg
    return ChunkExecutor(chunk, cfg.horizon, cfg.executed, cfg.obs_history, ensemble,
                         clock=bool(cfg.clock))


def evaluate_chunked(policy: ChunkPolicy, env: VecEnv, episodes: int, seed: int = 0,
                     ensemble: float | None = None, **kwargs: Any) -> EvalResult:
    """``evaluate`` for a chunked policy (its executor told of every episode start)."""
    gen = torch.Generator(device=env.device).manual_seed(seed)
    run = chunked_policy_fn(policy.eval(), gen, ensemble)
    return evaluate(lambda obs: (run(obs), None), env, episodes, seed=seed,
                    episode_start=run.reset, **kwargs)


def saved_config(state: dict[str, Any]) -> BCConfig:
    """A BC checkpoint's config; runs from before ``drop_idle`` kept every frame."""
    return from_dict(BCConfig, {"drop_idle": False, **state["config"]})


class BCRunner:
    """Owns the dataset, the policy, its EMA, the optimizer, the log and the checkpoints."""

    def __init__(self, cfg: BCConfig, console: Console | None = None,
                 eval_env: VecEnv | None = None):
        """``eval_env``: evaluate on this env instead of one made from the dataset."""
        self.console = console or Console()
        state: dict[str, Any] | None = None
        if cfg.resume is not None:
            state = load_checkpoint(cfg.resume)
            if state.get("kind") != "bc":
                raise ConfigError(f"{cfg.resume} is not a behaviour-cloning run")
            saved = saved_config(state)
            cfg = dataclasses.replace(saved, steps=cfg.steps, time_budget=cfg.time_budget,
                                      target_success=cfg.target_success,
                                      progress=cfg.progress, resume=cfg.resume)
        cfg.validate()
        self.cfg = cfg
        torch.manual_seed(cfg.seed)
        self.demos = demos = load_demos(cfg)
        self.dataset, self.num_episodes = demos.dataset, len(demos.train_episodes)
        dev = torch.device(cfg.device)
        self.data = chunk_data(demos.train, cfg, dev)
        obs, actions = self.data.obs.cpu(), self.data.actions.cpu()
        self.heldout = chunk_data(demos.heldout, cfg, dev) if demos.heldout else None
        self.mean_action = actions.mean(0).to(dev)
        # our tasks' actions are in [-1, 1]; another dataset's in its own units and range
        bounds = None if demos.task is not None else (actions.min(0).values,
                                                      actions.max(0).values)
        self.policy = make_policy(cfg.policy, cfg.kind, obs.shape[1], actions.shape[1],
                                  obs, actions, bounds,
                                  feature_names(self.dataset.features, "observation.state")
                                  ).to(dev)
        self.ema = copy.deepcopy(self.policy).requires_grad_(False) if cfg.ema > 0 else None
        self.opt = torch.optim.AdamW(self.policy.parameters(), lr=cfg.lr,
                                     weight_decay=cfg.weight_decay)
        self.sched = torch.optim.lr_scheduler.LambdaLR(self.opt, self._lr_factor)
        self.gen = torch.Generator(device=dev).manual_seed(cfg.seed)
        self.eval_env: VecEnv | None = eval_env
        if eval_env is None and cfg.eval_episodes > 0 and demos.task is not None:
            # made now: a mismatch fails early
            self.eval_env = make_eval_env(self.dataset, min(cfg.eval_envs, cfg.eval_episodes),
                                          cfg.seed + 10_000, cfg.dr, cfg.device)
            if self.eval_env is None:
                self.console.print(f"no evaluation in simulation: task {demos.task!r} is not "
                                   f"in the simulator's registry")
        elif demos.task is None:
            self.console.print(f"{cfg.demos} matches none of our simulated tasks: evaluated "
                               f"by the action error on {len(demos.heldout_episodes)} "
                               f"held-out episode(s)")
        self.grad_steps = 0
        self.elapsed = 0.0
        self.history: list[dict[str, float]] = []
        if state is None:
            task = demos.task or Path(cfg.demos).name
            self.run_dir = create_run_dir(cfg.runs_dir, cfg.run_name, task, cfg.algo, cfg.seed)
        else:
            self.run_dir = Path(cfg.resume)  # type: ignore[arg-type]
            self._restore(state)
        write_config(self.run_dir, cfg)
        self.writer: Any = None
        self._losses: list[float] = []
        """The losses since the last log line."""
        self._loss = float("nan")
        """The mean loss of the last log line."""

    def _lr_factor(self, step: int) -> float:
        """Cosine decay from 1 to 0.1 over the run's steps."""
        frac = min(step / max(self.cfg.steps, 1), 1.0)
        return 0.1 + 0.45 * (1.0 + math.cos(math.pi * frac))

    @property
    def acting(self) -> ChunkPolicy:
        """The weights that act: the EMA's, or the trained ones without EMA."""
        return self.ema if self.ema is not None else self.policy

    # -- the loop ----------------------------------------------------------------------------

    def train(self) -> list[dict[str, float]]:
        """Train until --steps, the time budget or the target success; returns the
        evaluation history (also in eval.csv)."""
        cfg = self.cfg
        n_params = sum(p.numel() for p in self.policy.parameters())
        self.console.print(
            f"run dir: {self.run_dir}\n{cfg.algo}: {n_params:,} parameters, chunk "
            f"H={cfg.policy.horizon} (execute {cfg.policy.executed}), obs history "
            f"{cfg.policy.obs_history}{self.policy.unseen_note()}; data: "
            f"{self.num_episodes} episodes, "
            f"{len(self.data):,} frames of {self.demos.task or 'no task of ours'!r} from "
            f"{cfg.demos}"
            + (f" ({self.demos.idle_dropped:,} idle left out)" if self.demos.idle_dropped
               else "")
            + (f"; {len(self.demos.heldout_episodes)} episode(s) held out"
               if self.heldout is not None else ""))
        t_log, steps_log = time.perf_counter(), self.grad_steps
        columns = (TextColumn("loss {task.fields[loss]}"),
                   TextColumn("success {task.fields[success]}"))
        with RunLoop(self, cfg.algo, cfg.steps, unit="gradient steps", count="grad_steps",
                     columns=columns, fields={"loss": "-", "success": "-"},
                     stop_reason=f"{cfg.steps:,} steps done") as loop:
            while self.grad_steps < cfg.steps:
                loop.check_interrupt()
                self._losses.append(self._update())
                self.grad_steps += 1
                loop.clock()
                if self.grad_steps % cfg.log_every == 0:
                    now = time.perf_counter()
                    self._loss = sum(self._losses) / len(self._losses)
                    self.log_metrics({"losses/bc": self._loss,
                                      "charts/lr": float(self.sched.get_last_lr()[0]),
                                      "perf/grad_steps_per_s":
                                          (self.grad_steps - steps_log) / max(now - t_log, 1e-9)})
                    t_log, steps_log, self._losses = now, self.grad_steps, []
                    loop.show(loss=f"{self._loss:.4f}")
                loop.show()
                result = None
                if self.grad_steps % cfg.eval_every == 0 or self.grad_steps == cfg.steps:
                    result = self.evaluate_now()
                    if result is not None:
                        loop.show(success=f"{result.success_rate:.0%}",
                                  loss=f"{self.history[-1]['loss']:.4f}")
                if loop.stop_at(result):
                    break
        return self.history

    def _update(self) -> float:
        obs, chunk, mask = self.data.sample(self.cfg.batch_size, self.gen)
        loss = self.policy.loss(obs, chunk, mask)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.policy.parameters(), self.cfg.grad_clip)
        self.opt.step()
        self.sched.step()
        if self.ema is not None:
            # EMA with warm-up: early on the average follows the weights closely
            decay = min(self.cfg.ema, (1.0 + self.grad_steps) / (10.0 + self.grad_steps))
            with torch.no_grad():
                for p_ema, p in zip(self.ema.parameters(), self.policy.parameters(),
                                    strict=True):
                    p_ema.lerp_(p, 1.0 - decay)
        return float(loss.detach())

    # -- evaluation and logging --------------------------------------------------------------

    def evaluate_now(self) -> EvalResult | None:
        """An evaluation, its loss the mean over the steps since the last log line (the
        last line's own when none has run since): every --eval-every steps, and at the end
        of training (``RunLoop`` calls it where the last evaluation is older)."""
        return self._evaluate(sum(self._losses) / len(self._losses) if self._losses
                              else self._loss)

    def _evaluate(self, loss: float) -> EvalResult | None:
        cfg = self.cfg
        record = {"grad_steps": float(self.grad_steps), "seconds": self.elapsed,
                  "success_rate": float("nan"), "return": float("nan"),
                  "episode_cost": float("nan"), "loss": loss, "action_rmse": float("nan"),
                  "action_rmse_rel": float("nan")}
        result = None
        held = ""
        if self.heldout is not None:
            rmse, rel = action_error(self.acting, self.heldout, self.mean_action, cfg.seed)
            self.policy.train()
            record.update({"action_rmse": rmse, "action_rmse_rel": rel})
            self.log_metrics({"eval/action_rmse": rmse, "eval/action_rmse_rel": rel})
            held = f"  held-out action RMSE {rmse:.4g} ({rel:.2f} of the mean's)"
        if cfg.eval_episodes > 0 and self.eval_env is not None:
            t0 = time.perf_counter()
            result = evaluate_chunked(self.acting, self.eval_env, cfg.eval_episodes,
                                      seed=cfg.seed + 10_000, ensemble=cfg.ensemble)
            self.policy.train()
            record.update({"success_rate": result.success_rate,
                           "return": result.return_mean, "episode_cost": result.cost_mean})
            metrics = result.metrics("eval")
            metrics["perf/eval_seconds"] = time.perf_counter() - t0
            self.log_metrics(metrics)
        self.history.append(record)
        write_curve(self.run_dir, self.history, EVAL_FIELDS)
        shown = "" if result is None else (
            f"  success {result.success_rate:5.1%}  return {result.return_mean:7.2f}  "
            f"cost {result.cost_mean:.2f}")
        self.console.print(f"[{self.grad_steps:>7,}/{cfg.steps:,} steps, {self.elapsed:5.0f} s]"
                           f"  loss {loss:.4f}{shown}{held}", highlight=False)
        return result

    def log_metrics(self, metrics: dict[str, float]) -> None:
        if self.writer is not None:
            for key, value in metrics.items():
                self.writer.add_scalar(key, value, self.grad_steps)

    # -- checkpoints -------------------------------------------------------------------------

    def save(self) -> Path:
        """Write the checkpoint atomically; returns its path."""
        state = {"format": FORMAT_VERSION, "kind": "bc", "config": to_dict(self.cfg),
                 "obs_dim": self.policy.obs_dim, "act_dim": self.policy.act_dim,
                 "task": self.demos.task,
                 "env": dict(self.dataset.spec.env) if self.dataset.spec is not None else {},
                 "agent": {"policy": self.policy.state_dict(),
                           "ema": None if self.ema is None else self.ema.state_dict(),
                           "opt": self.opt.state_dict(), "sched": self.sched.state_dict()},
                 "grad_steps": self.grad_steps, "elapsed": self.elapsed,
                 "history": self.history, "torch_rng": torch.get_rng_state(),
                 "gen": self.gen.get_state(),
                 "data": {"root": str(self.cfg.demos), "episodes": self.num_episodes,
                          "frames": len(self.data),
                          "heldout_episodes": self.demos.heldout_episodes}}
        path = self.run_dir / CHECKPOINT
        save_atomic(state, path)
        return path

    def _restore(self, state: dict[str, Any]) -> None:
        agent = state["agent"]
        self.policy.load_state_dict(agent["policy"])
        if self.ema is not None and agent["ema"] is not None:
            self.ema.load_state_dict(agent["ema"])
        self.opt.load_state_dict(agent["opt"])
        self.sched.load_state_dict(agent["sched"])
        self.grad_steps = int(state["grad_steps"])
        self.elapsed = float(state["elapsed"])
        self.history = list(state["history"])
        torch.set_rng_state(state["torch_rng"])
        self.gen.set_state(state["gen"])
        self.console.print(f"resumed {self.run_dir} at {self.grad_steps:,} gradient steps")


def bc_task(state: dict[str, Any], path: str | Path, use: str) -> str:
    """The simulated task of a BC checkpoint's data; ConfigError if it has none (data of
    another robot: the policy has no env to act in)."""
    task = state.get("task")
    if not task:
        data = state.get("data", {}).get("root", "its dataset")
        raise ConfigError(f"{path} learnt from {data}, which matches none of our simulated "
                          f"tasks: {use} needs one (its evaluation is the held-out action "
                          f"error in eval.csv; `robot-rl data import` maps a real arm's data "
                          f"onto a task)")
    return str(task)


def bc_env(state: dict[str, Any], path: str | Path, use: str, num_envs: int, seed: int,
           dr: DRPreset | None = None, device: str = "cpu", backend: str = "cpu",
           warp: WarpOptions | None = None) -> BatchedEnv:
    """A simulated env of a BC checkpoint's task as its data was recorded (randomization,
    episode length) on ``backend``; ConfigError naming ``use`` where its data is of no task
    of ours."""
    env = make_task_env(bc_task(state, path, use), state.get("env", {}), num_envs, seed, dr,
                        device, backend, warp)
    if env is None:
        raise ConfigError(f"task {state['task']!r} of {path} is not in the simulator's "
                          f"registry")
    return env


def bc_task_config(state: dict[str, Any], path: str | Path, use: str) -> TaskConfig:
    """The task config of a BC checkpoint's data as it was recorded (its episode length and
    action space)."""
    from robot_rl.recording.record import making_overrides

    return make_task_config(bc_task(state, path, use), **making_overrides(state.get("env", {})))


def load_bc_policy(path: str | Path, state: dict[str, Any] | None = None
                   ) -> tuple[ChunkPolicy, BCConfig, dict[str, Any]]:
    """The acting policy (EMA weights where there are) of a BC run directory or checkpoint,
    its config and the raw checkpoint state (``state``: that state, already read)."""
    state = load_checkpoint(path) if state is None else state
    if state.get("kind") != "bc":
        raise ConfigError(f"{path} is not a behaviour-cloning run")
    cfg = saved_config(state)
    policy = make_policy(cfg.policy, cfg.kind, state["obs_dim"], state["act_dim"])
    weights = state["agent"]["ema"] or state["agent"]["policy"]
    policy.load_state_dict(weights)
    return policy.eval(), cfg, state
