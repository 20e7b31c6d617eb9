"""The off-policy training runner: collect, learn, evaluate, log, checkpoint.

    runner = Runner(TrainConfig(task="reach", safety="gate"))
    runner.train()                   # run dir: runs/reach__sac__0__20261121-101500/
    Runner(cfg, env=my_vec_env)      # any robot_rl.sim.VecEnv (evaluates on it too, unless
                                     # eval_env= is given); the config's task fields then
                                     # only name the run

The loop (per vector step of ``num_envs`` envs; ``robot_rl.collect``: the same loop on
Ray's env-runners or the robot, with another collector):

    step = agent.act(obs)                                   # gated by the safety critic
    obs', r, c, terminated, truncated, info = env.step(step.action, hold=step.hold)
    buffer.add(obs, a, r, c, info["final_obs"], terminated)  # time-outs bootstrap
    agent.update(buffer.sample()) x updates_per_step

The run directory holds ``config.json`` (the resolved config), ``tb/`` (TensorBoard,
namespaced keys), ``eval.csv`` (the learning curve), ``checkpoints/latest.pt`` written
atomically every ``checkpoint_every`` seconds, at the end and on Ctrl-C, and
``checkpoints/replay.pt`` for exact resumption with ``--resume RUN_DIR``.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from rich.console import Console

from robot_rl.algos import SAC
from robot_rl.algos.sac import Metrics
from robot_rl.checkpoint import (
    CHECKPOINT,
    FORMAT_VERSION,
    REPLAY,
    CheckpointError,
    create_run_dir,
    kept_checkpoint,
    load_checkpoint,
    save_atomic,
    write_config,
    write_curve,
)
from robot_rl.collect import Collector, LocalCollector
from robot_rl.config_io import to_dict
from robot_rl.errors import ConfigError
from robot_rl.evaluate import EvalResult, evaluate_agent
from robot_rl.nstep import COST_DISCOUNT, DISCOUNT, NStepTransitions, NStepWriter
from robot_rl.replay import Batch, ExtraSpec, ReplayBuffer, mirror_half, sample_mixed
from robot_rl.run_control import torch_threads
from robot_rl.run_progress import Limit, clock
from robot_rl.run_state import RunState, state_field
from robot_rl.sim import make_env
from robot_rl.sim.configs import DRPreset
from robot_rl.sim.env import BatchedEnv
from robot_rl.sim.mirror import env_mirror_signs
from robot_rl.sim.vec_env import VecEnv, check_vec_env, uniform_actions
from robot_rl.train_config import TrainConfig
from robot_rl.train_session import TrainSession

EVAL_FIELDS = ("env_steps", "seconds", "success_rate", "return", "episode_cost",
               "train_cumulative_cost", "lambda")


def make_train_env(cfg: TrainConfig, num_envs: int, seed: int,
                   dr: DRPreset | None = None) -> VecEnv:
    """A BatchedEnv of the config's task config (``dr``: a preset replacing its ranges); the
    cpu backend's physics runs on ``cfg.threads`` C threads. With ``--gym``, a
    ``GymVecEnv`` of that id (``dr`` refused: a gymnasium env has no presets)."""
    if cfg.gym is not None:
        from robot_rl.interop.gymnasium_env import GymVecEnv

        if dr is not None:
            raise ConfigError(f"--dr {dr}: {cfg.gym} is a gymnasium env, whose randomization "
                              f"(if any) is its own")
        return GymVecEnv(cfg.gym, num_envs, device=cfg.device)
    nthread = None if cfg.threads is None else min(cfg.threads, num_envs)
    return make_env(cfg.env, num_envs, backend=cfg.backend, device=cfg.device, dr=dr,
                    seed=seed, nthread=nthread, warp=cfg.warp)


def make_agent(cfg: TrainConfig, obs_dim: int, act_dim: int, cls: type[SAC] = SAC,
               **extra: Any) -> SAC:
    """The config's SAC agent (a discount left unset comes from the task's horizon at its
    control rate); ``cls``: a subclass taking SAC's arguments and ``extra``."""
    safety = dataclasses.replace(cfg.safety_critic, mode=cfg.safety)
    sac = cfg.sac.with_gamma(cfg.env.control_dt, cfg.env.discount_horizon)
    return cls(obs_dim, act_dim, sac, safety, device=cfg.device, seed=cfg.seed, **extra)


def load_agent(checkpoint: str | Path, config_type: type[TrainConfig] = TrainConfig,
               make: Callable[[Any, int, int], SAC] = make_agent
               ) -> tuple[SAC, TrainConfig, dict[str, Any]]:
    """The trained agent, its config (of ``config_type``: a TrainConfig or a subclass) and
    the raw checkpoint state. With ``TrainConfig``, a run of any of its subclasses loads too
    (``robot-rl finetune`` and ``finetune-robot`` runs: the fields the agent and its env
    need; the subclass's own are dropped). ``make(cfg, obs_dim, act_dim)`` builds the
    agent the state loads into (a runner whose agent is a SAC subclass passes its own)."""
    state = load_checkpoint(checkpoint)
    saved = dict(state["config"])
    if config_type is TrainConfig:  # a subclass's run (finetune, finetune-robot): its base
        names = {f.name for f in dataclasses.fields(TrainConfig)}
        saved = {k: v for k, v in saved.items() if k in names}
    cfg = config_type.from_saved(saved)
    agent = make(cfg, state["obs_dim"], state["act_dim"])
    try:
        agent.load_full_state(state["agent"])
    except (RuntimeError, KeyError) as e:
        raise CheckpointError(f"checkpoint {checkpoint} does not match its config: {e}") from None
    return agent, cfg, state


class Runner:
    """Owns the loop, logging and checkpoints; the agent owns acting and learning.

    A learner (fine-tuning, pixels, the robot) varies these parts, each a method or class
    attribute below:

        env          make_env; reset_env where the env keeps more than its observation
        agent        build_agent; act (its decision), decide (around it: exploration
                     schedules), evaluate_policy
        transitions  make_buffer, store (what one step adds), mirror_signs
        sampler      replay_shares (buffers each batch draws a share from), ready_to_learn
        warm-up      warmup (who acts before learning_starts), warmup_action
        offline      before_training (phases before the first env step); actor_learns and
                     before_update (critic-only updates, statistics fitted at the first)
        checkpoint   extra_state / load_extra_state, save (files beside the checkpoint)

    The loop itself (``train``), its state (``self.state``, a ``RunState``) and the
    collector it runs (``local_collector``: given ``decide`` and ``store``) are not
    overridden.
    """

    kind = "sac"
    """What the checkpoint holds (``robot-rl eval`` and ``export`` read it)."""
    n_step_ok = True
    """Whether this runner stores n-step transitions (``--sac.n-step`` > 1)."""
    config_type: type[TrainConfig] = TrainConfig
    """The config it trains (a learner actor on Ray refuses any other)."""
    eval_gate: bool | None = None
    """Whether evaluation gates the policy's actions by the safety critic: None as its mode
    says; False where the exported artifact has no gate (evaluation decides as it does)."""
    collects = "env"
    """Where its transitions come from on Ray: ``env`` (env-runners) or ``robot`` (the robot
    actor); the fleet it is placed with must match."""
    warmup = "uniform"
    """Who acts before ``learning_starts``: ``uniform`` random actions (env-runners on Ray
    draw them themselves), the agent's ``policy`` (a pre-trained policy collects from the
    first step), or any other name: the learner's own ``warmup_action``."""

    def __init__(self, cfg: TrainConfig, console: Console | None = None,
                 env: VecEnv | None = None, eval_env: VecEnv | None = None):
        """``env``: train on this env instead of the one the config describes (any
        ``VecEnv``); ``eval_env``: evaluate on this one (default: a fresh env of the config,
        or ``env`` itself when ``env`` was given, reset after each evaluation)."""
        self.console = console or Console()
        resume_state: dict[str, Any] | None = None
        resume = cfg.resume
        if resume is not None:
            resume_state = load_checkpoint(resume)
            saved = type(cfg).from_saved(resume_state["config"])
            cfg = dataclasses.replace(saved, total_steps=cfg.total_steps,
                                      time_budget=cfg.time_budget,
                                      target_success=cfg.target_success,
                                      target_evals=cfg.target_evals,
                                      threads=cfg.threads, progress=cfg.progress,
                                      resume=resume)
            self.run_dir = Path(resume)
        cfg.validate()
        self.cfg = cfg
        torch.manual_seed(cfg.seed)
        if env is not None:
            check_vec_env(env)
            if eval_env is not None:
                check_vec_env(eval_env)
        self.env: VecEnv = env if env is not None else self.make_env(cfg.num_envs, cfg.seed)
        self.eval_env: VecEnv | None = eval_env if eval_env is not None else env
        # a discount left unset comes from the task's horizon in seconds at this env's step
        # (config.json records the value)
        if cfg.sac.gamma is None:
            self.cfg = cfg = dataclasses.replace(cfg, sac=cfg.sac.with_gamma(
                self.env.control_dt, cfg.env.discount_horizon))
        self._action_gen = torch.Generator().manual_seed(cfg.seed)
        """Draws the warm-up's actions before learning starts (``warmup_action``); kept in
        the checkpoint."""
        if cfg.sac.n_step > 1 and not self.n_step_ok:
            raise ConfigError(f"--sac.n-step {cfg.sac.n_step}: {type(self).__name__} stores "
                              f"one-step transitions only; leave it at 1")
        self.agent = self.build_agent()
        if cfg.sac.compile:  # refused now, not at the first update after the warm-up
            self.agent.check_compilable()
        self.buffer = self.make_buffer()
        self.mirror = self.mirror_signs() if cfg.mirror else None
        """The signs of a transition's mirror image (--mirror): (O,) and (A,) tensors."""
        self.nstep: NStepWriter | None = None if cfg.sac.n_step == 1 else NStepWriter(
            cfg.sac.n_step, self.agent.gamma, self.agent.safety_cfg.gamma, self.env.num_envs,
            self.env.obs_dim, self.env.act_dim, cfg.device)
        """Gathers n-step transitions for the buffer (``--sac.n-step`` > 1)."""
        self.state = RunState()
        """The run's counters and books: env steps, seconds, training cost, history, the
        next evaluation, the writer (``robot_rl.run_state``)."""
        if resume_state is None:
            self.run_dir = create_run_dir(cfg.runs_dir, cfg.run_name, cfg.env_name,
                                          cfg.method_name, cfg.seed)
        else:
            self._restore(resume_state)
        write_config(self.run_dir, cfg)

    # the run's state, by name (RunLoop and TrainSession read these; the loop the object)
    env_steps = state_field("env_steps")
    elapsed = state_field("elapsed")
    train_cost = state_field("train_cost")
    history = state_field("history")
    next_eval = state_field("next_eval")
    writer = state_field("writer")

    # -- the loop ----------------------------------------------------------------------------

    def train(self, collector: Collector | None = None) -> list[dict[str, float]]:
        """Train until total_steps, the time budget or the target success on what
        ``collector`` brings (default: this runner's env, ``local_collector``;
        ``robot_rl.collect``); returns the evaluation history (also in eval.csv)."""
        cfg, state = self.cfg, self.state
        self.before_training()
        collector = collector or self.local_collector()
        with torch_threads(cfg.threads), TrainSession(self) as session:
            collector.begin(session)
            while state.env_steps < cfg.total_steps:
                session.check_interrupt()  # Ctrl-C, handled here, between two rounds
                got = collector.collect()
                if got is None:
                    continue
                state.env_steps += got.env_steps
                session.add_steps(got.transitions, got.sums, got.rejected, got.cost)
                if got.episodes is not None:
                    session.add_episodes(got.episodes)
                updates = collector.updates(got, self.ready_to_learn())
                for _ in range(updates):
                    session.add_losses(self.learn())
                collector.learned(got, updates, session)
                if session.tick():
                    break
                collector.ticked(session)
        collector.end()
        return state.history

    def local_collector(self) -> LocalCollector:
        """The collector of this runner's own env: it acts with ``decide``, stores with
        ``store``, and starts the env with ``reset_env`` (cutting n-step chains first)."""
        self.console.print(f"run dir: {self.run_dir}\n{self.env}\nsafety: {self.cfg.safety}  "
                           f"device: {self.cfg.device}  updates/step: "
                           f"{self.cfg.sac.updates_per_step}")

        def restart(obs: torch.Tensor | None) -> torch.Tensor:
            if obs is not None:
                self.cut_chains(obs)
            return self.reset_env(self.cfg.seed + self.state.env_steps)

        return LocalCollector(self.env, act=self.decide, store=self.store, restart=restart,
                              updates_per_step=self.cfg.sac.updates_per_step,
                              holds=self.agent.safety_cfg.fallback == "hold",
                              restart_after_eval=self.eval_env is self.env)

    # -- what subclasses (offline-to-online fine-tuning, pixels) change -----------------------

    def before_training(self) -> None:
        """What runs once before the loop (fine-tuning's offline phases); nothing here."""

    def make_env(self, num_envs: int, seed: int) -> VecEnv:
        """A training or evaluation env of the config."""
        return make_train_env(self.cfg, num_envs, seed)

    def build_agent(self) -> SAC:
        return make_agent(self.cfg, self.env.obs_dim, self.env.act_dim)

    def make_buffer(self) -> ReplayBuffer:
        """The replay buffer; n-step transitions carry their bootstrap discounts."""
        extra: ExtraSpec = {} if self.cfg.sac.n_step == 1 else \
            {DISCOUNT: ((), torch.float32), COST_DISCOUNT: ((), torch.float32)}
        return ReplayBuffer(self.cfg.sac.buffer_size, self.env.obs_dim, self.env.act_dim,
                            self.cfg.device, extra=extra)

    def reset_env(self, seed: int) -> torch.Tensor:
        """Reset the training env; its observation (E, O)."""
        return self.env.reset(seed=seed)

    def decide(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None,
                                                 torch.Tensor | None]:
        """(action, hold, rejected) of this step: ``warmup_action`` before
        ``learning_starts`` (unless the ``warmup`` is the policy's), then ``act``."""
        if self.env_steps < self.cfg.sac.learning_starts and self.warmup != "policy":
            return self.warmup_action(obs), None, None
        return self.act(obs)

    def act(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None,
                                              torch.Tensor | None]:
        """(action, hold, rejected): the agent's decision, gated by its safety critic."""
        act = self.agent.act(obs)
        return act.action, act.hold, act.rejected

    def store(self, obs: torch.Tensor, action: torch.Tensor, reward: torch.Tensor,
              cost: torch.Tensor, terminated: torch.Tensor, truncated: torch.Tensor,
              info: dict[str, Any], keep: torch.Tensor | None) -> None:
        """Add a step's transitions (the envs in ``keep``, default all; n-step ones once
        complete) to the replay buffer and fold its observations into the agent's
        normalizer."""
        if self.nstep is None:
            self.buffer.add(obs, action, reward, cost, info["final_obs"], terminated,
                            mask=keep)
        else:
            done = terminated.bool() | truncated.bool()
            self._add_nstep(self.nstep.push(obs, action, reward, cost, info["final_obs"],
                                            terminated, done, keep))
        self.agent.observe(obs)

    def cut_chains(self, obs: torch.Tensor) -> None:
        """Store the n-step chains waiting for their next steps, bootstrapping from ``obs``
        (E, O): the envs are about to be reset between episodes' ends."""
        if self.nstep is not None:
            self._add_nstep(self.nstep.cut(obs))

    def _add_nstep(self, out: NStepTransitions | None) -> None:
        if out is not None:
            self.buffer.add(*out.columns(), extra=out.extra())

    def evaluate_policy(self, env: VecEnv, episodes: int, seed: int) -> EvalResult:
        """Evaluate the agent's deterministic policy, gated as ``eval_gate`` says."""
        return evaluate_agent(self.agent, env, episodes, seed=seed, gate=self.eval_gate)

    def warmup_action(self, obs: torch.Tensor) -> torch.Tensor:
        """(E, A): an action before ``learning_starts``, uniform in the action box."""
        return uniform_actions(self.env, self._action_gen)

    def ready_to_learn(self) -> bool:
        """Whether this step makes gradient updates."""
        return len(self.buffer) >= self.cfg.sac.batch_size and \
            self.env_steps >= self.cfg.sac.learning_starts

    def learn(self) -> Metrics:
        """One gradient update of the agent (of its critics alone unless
        ``actor_learns``); its metrics."""
        self.before_update()
        batch = self.sample_batch()
        if self.mirror is not None:
            batch = mirror_half(batch, *self.mirror, self.agent.gen)
        return self.agent.update(batch, actor=self.actor_learns())

    def mirror_signs(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(O,) and (A,) signs of a transition's mirror image (--mirror), from the env's
        task, arm and action space; a one-line error where they declare none, or where the
        transitions hold what has no known mirror image (camera frames)."""
        if not isinstance(self.env, BatchedEnv):
            raise ConfigError(f"--mirror needs one of our simulated tasks, whose symmetry is "
                              f"declared; this run's env is a {type(self.env).__name__}")
        if unknown := sorted(set(self.buffer.extra) - {DISCOUNT, COST_DISCOUNT}):
            raise ConfigError(f"--mirror: the transitions hold {', '.join(unknown)}, whose "
                              f"mirror image is not known")
        signs = env_mirror_signs(self.env)
        return torch.as_tensor(signs.obs), torch.as_tensor(signs.action)

    def actor_learns(self) -> bool:
        """Whether this update moves the actor and temperature too (critic-only warm-ups
        say no)."""
        return True

    def before_update(self) -> None:
        """With ``freeze_normalizer``, the normalizer keeps from the first update on what it
        saw before it (the warm-up's or the demonstrations' statistics)."""
        if self.cfg.sac.freeze_normalizer:
            self.agent.freeze_normalizer()

    def sample_batch(self) -> Batch:
        """The batch of one gradient step: uniform from the replay buffer, with the shares
        of ``replay_shares`` from their buffers (``replay.sample_mixed``)."""
        return sample_mixed(self.buffer, self.replay_shares(), self.cfg.sac.batch_size,
                            self.agent.gen)

    def replay_shares(self) -> list[tuple[ReplayBuffer, float]]:
        """Buffers besides the online replay that every batch draws a share from, in order
        (demonstrations, prior data, a person's interventions); none here."""
        return []

    # -- evaluation and logging --------------------------------------------------------------

    def evaluate_now(self) -> EvalResult:
        """Evaluate the policy now: the learning curve's next row (``eval.csv``,
        TensorBoard and one log line)."""
        cfg = self.cfg
        self.next_eval = self.env_steps + cfg.eval_every
        if self.eval_env is None:
            self.eval_env = self.make_env(min(cfg.eval_episodes, 32), cfg.seed + 10_000)
        t0 = time.perf_counter()
        result = self.evaluate_policy(self.eval_env, cfg.eval_episodes, cfg.seed + 10_000)
        record = {"env_steps": float(self.env_steps), "seconds": self.elapsed,
                  "success_rate": result.success_rate, "return": result.return_mean,
                  "episode_cost": result.cost_mean,
                  "train_cumulative_cost": float(self.train_cost),
                  "lambda": self.agent.lagrange.value}
        self.history.append(record)
        metrics = result.metrics("eval")
        metrics["perf/eval_seconds"] = time.perf_counter() - t0
        self.log_metrics(metrics)
        write_curve(self.run_dir, self.history, EVAL_FIELDS)
        # one line per evaluation: progress where the bar does not show (a file, a CI log),
        # with the time left at whichever limit ends the run (run_progress)
        left = Limit.of(self.env_steps, cfg.total_steps, self.elapsed, cfg.time_budget,
                        self.env_steps / self.elapsed if self.elapsed > 0 else None).left
        self.console.print(f"[{self.env_steps:>10,}/{cfg.total_steps:,} env steps, "
                           f"{self.elapsed:6.0f} s, {clock(left)} left]  success "
                           f"{result.success_rate:5.1%}  "
                           f"return {result.return_mean:8.2f}  episode cost "
                           f"{result.cost_mean:.2f}  training cost "
                           f"{float(self.train_cost):,.0f}",
                           highlight=False, soft_wrap=True)
        return result

    def log_metrics(self, metrics: dict[str, float]) -> None:
        """Scalars to TensorBoard at the current env step (with the multiplier and the
        training cost)."""
        if self.writer is None:
            return
        for key, value in metrics.items():
            self.writer.add_scalar(key, value, self.env_steps)
        self.writer.add_scalar("safety/lambda", self.agent.lagrange.value, self.env_steps)
        self.writer.add_scalar("cost/train_cumulative", float(self.train_cost), self.env_steps)

    # -- checkpoints -------------------------------------------------------------------------

    def extra_state(self) -> dict[str, Any]:
        """What a subclass adds to the checkpoint (keys beside the runner's own)."""
        return {}

    def load_extra_state(self, state: dict[str, Any]) -> None:
        """Restore what ``extra_state`` added (``state``: the whole checkpoint)."""

    def save(self) -> Path:
        """Write the checkpoint (and replay buffer) atomically; returns its path."""
        if self.cfg.save_replay:
            save_atomic(self.buffer.state_dict(), self.run_dir / REPLAY)
        path = self.run_dir / CHECKPOINT
        save_atomic(self._state(), path)
        return path

    def keep(self) -> Path:
        """Write the checkpoint of this moment beside latest.pt, named by its env steps
        (without the replay buffer); returns its path."""
        path = self.run_dir / kept_checkpoint(self.env_steps)
        save_atomic(self._state(), path)
        return path

    def _state(self) -> dict[str, Any]:
        """Everything a checkpoint holds but the replay buffer."""
        return {"format": FORMAT_VERSION, "kind": self.kind, "config": to_dict(self.cfg),
                "obs_dim": self.env.obs_dim, "act_dim": self.env.act_dim,
                "obs_layout": getattr(self.env, "obs_layout", [("obs", self.env.obs_dim)]),
                "agent": self.agent.full_state(),
                **self.state.checkpoint(),
                "torch_rng": torch.get_rng_state(), "action_rng": self._action_gen.get_state(),
                **self.extra_state()}

    def _restore(self, state: dict[str, Any]) -> None:
        if state["obs_dim"] != self.env.obs_dim or state["act_dim"] != self.env.act_dim:
            raise CheckpointError(f"checkpoint in {self.run_dir} has obs/act dims "
                                  f"{state['obs_dim']}/{state['act_dim']}, the task now has "
                                  f"{self.env.obs_dim}/{self.env.act_dim}")
        self.agent.load_full_state(state["agent"])
        self.state.restore(state, self.cfg.eval_every)
        torch.set_rng_state(state["torch_rng"])
        if "action_rng" in state:  # checkpoints before 2026-11-29 lack it
            self._action_gen.set_state(state["action_rng"])
        self.load_extra_state(state)
        replay = self.run_dir / REPLAY
        if self.cfg.save_replay and replay.is_file():
            try:
                self.buffer.load_state_dict(torch.load(replay, weights_only=False))
            except Exception as e:
                raise CheckpointError(f"cannot read replay buffer {replay}: {e}") from None
        self.console.print(f"resumed {self.run_dir} at {self.env_steps:,} env steps "
                           f"({len(self.buffer):,} transitions in replay)")
