"""One-step students of chunked policies, for the control loop: ``robot-rl distill`` of a
bc-flow, dsrl or residual run.

    student, report = distill_chunked(DistillConfig(run=Path("runs/push__bc-flow__0__...")))

* A **flow policy** (bc-flow) becomes a one-step flow map: a flow policy with a single
  integration step, trained so that (observation, noise) -> chunk matches the teacher's
  many-step integration *for the same noise* (the teacher's ODE is deterministic given its
  noise, so the student learns that map, modes included, not their mean).
* A **DSRL run** (noise chosen by its actor) is deterministic: it becomes an MLP that emits
  the teacher's chunk from the observation history.
* A **residual run** (the flow's zero-noise chunks corrected step by step, each correction
  held for ``every`` steps: ``ResidualActing``) is deterministic but keeps state between
  steps (its chunk's position, its held correction): it becomes an MLP of one action per
  control step from the observation history, labelled with the action the whole policy
  takes at that step (its base and residual following the same observations). By default
  (``DistillConfig.clock``) it sees the teacher's clock: the steps since the episode's
  start mod the flow's executed steps and mod the residual's decision period
  (``PolicyConfig.clock``), which the artifact's runtime counts.

Both learn with DAgger on the run's task in simulation: iteration 0 executes the teacher's
chunks, iteration i the teacher's with probability ``beta_decay ** i`` and the student's
otherwise; every chunk decision is labelled with the teacher's chunk (in normalized action
units), the data aggregated and the student fit by MSE on the chunk's steps that are ever
executed (the first ``executed``, or all under temporal ensembling): its capacity goes to
the actions that reach the arm. The student keeps the teacher's
observation and action normalization, chunk horizon, execution and history. It is saved
as ``onestep.pt`` in the run directory; ``robot-rl export RUN --policy student`` exports it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from rich.console import Console

from robot_rl.bc import bc_task, evaluate_chunked, load_bc_policy
from robot_rl.checkpoint import (
    CheckpointError,
    load_checkpoint,
    resolve_checkpoint,
    run_dir_of,
    save_atomic,
)
from robot_rl.config_io import from_dict
from robot_rl.distill.configs import DaggerConfig, DistillConfig
from robot_rl.distill.dagger import dagger, mix
from robot_rl.distill.state import DistillReport, teacher_policy
from robot_rl.errors import ConfigError
from robot_rl.evaluate import evaluate
from robot_rl.finetune.residual_base import ResidualActing
from robot_rl.policies import (
    ChunkExecutor,
    ChunkPolicy,
    FlowPolicy,
    MLPChunkPolicy,
    PolicyConfig,
    make_policy,
)
from robot_rl.sim.vec_env import StepResult, VecEnv

ONESTEP_FILE = "onestep.pt"
ONESTEP_FORMAT = "robot_rl.onestep"

Teacher = Callable[[torch.Tensor, torch.Tensor | None], torch.Tensor]
"""(obs history (N, T, O), noise (N, H, A) or None) -> chunk in normalized units."""


@dataclasses.dataclass
class _Run:
    """What distillation needs of a bc-flow, dsrl or residual run."""

    flow: ChunkPolicy
    teacher: Teacher | None
    """None where ``stepping`` labels."""
    noisy: bool
    """The teacher (and the student) take noise: a flow policy's."""
    make_env: Callable[[int, int], VecEnv]
    """(num_envs, seed) -> an env of the run's task as its data was recorded."""
    acting: Callable[[torch.Generator], ChunkExecutor | ResidualActing]
    """The teacher acting step by step (for its evaluation): a chunk executor, or a
    residual run's ``ResidualActing``."""
    used: int
    """The chunk's steps that are ever executed: its executed steps, or all of them under
    temporal ensembling; the student is fit on these alone."""
    stepping: ResidualActing | None = None
    """A teacher that acts step by step (a residual run's), followed along every rollout
    (it sees each observation, whoever acts); its action at each step is the label (a
    chunk of one)."""


def _load_run(ckpt: Path, cfg: DistillConfig) -> _Run:
    from robot_rl.bc import bc_env
    from robot_rl.finetune.dsrl import load_dsrl

    kind = load_checkpoint(ckpt).get("kind")
    if kind == "bc":
        flow, bc_cfg, state = load_bc_policy(ckpt)
        if flow.kind != "flow":
            raise ConfigError(f"{ckpt} is a bc-mlp run: it already acts in one step")
        use = "distillation (evaluated in simulation)"
        bc_task(state, ckpt, use)

        assert isinstance(flow, FlowPolicy)
        integrate = flow.integrate

        def teacher(hist: torch.Tensor, noise: torch.Tensor | None) -> torch.Tensor:
            assert noise is not None
            return integrate(hist, noise)

        def make(num_envs: int, seed: int) -> VecEnv:
            return bc_env(state, ckpt, use, num_envs, seed, cfg.dagger.dr)

        def acting(gen: torch.Generator) -> ChunkExecutor:
            return ChunkExecutor(lambda h: flow.sample(h, gen), flow.horizon,
                                 flow.cfg.executed, flow.obs_history, bc_cfg.ensemble)

        used = flow.horizon if bc_cfg.ensemble is not None else flow.cfg.executed
        return _Run(flow, teacher, True, make, acting, used)
    if kind == "dsrl":
        from robot_rl.finetune.dsrl import noise_env as make_noise_env_of

        agent, dsrl_cfg, noise_env = load_dsrl(ckpt, 1, 0)
        flow = noise_env.policy
        _, _, bc_state = load_bc_policy(dsrl_cfg.policy)
        assert isinstance(flow, FlowPolicy)
        flow_map = flow.integrate
        actor = teacher_policy(agent)  # its deterministic actor, as exported

        def dsrl_teacher(hist: torch.Tensor, noise: torch.Tensor | None) -> torch.Tensor:
            return flow_map(hist, noise_env.noise(actor(hist[:, -1])))

        def make_noise_env(num_envs: int, seed: int) -> VecEnv:
            return make_noise_env_of(dsrl_cfg, flow, bc_state, num_envs, seed,
                                     cfg.dagger.dr).env

        def dsrl_acting(gen: torch.Generator) -> ChunkExecutor:
            def chunk(h: torch.Tensor) -> torch.Tensor:
                return flow.clip(flow.act_norm.inverse(dsrl_teacher(h, None)))

            return ChunkExecutor(chunk, flow.horizon, flow.cfg.executed, flow.obs_history)

        return _Run(flow, dsrl_teacher, False, make_noise_env, dsrl_acting, flow.cfg.executed)
    if kind == "residual":
        return _residual_run(ckpt, cfg)
    raise ConfigError(f"{ckpt} is not a bc-flow, dsrl or residual run")


def _residual_run(ckpt: Path, cfg: DistillConfig) -> _Run:
    """A residual run as a teacher of one action per control step (module docstring)."""
    from robot_rl.bc import bc_env
    from robot_rl.export.modules import ResidualGraph
    from robot_rl.finetune.residual import load_residual

    agent, res_cfg, res_env = load_residual(ckpt, 1, 0)
    flow = res_env.policy
    _, _, bc_state = load_bc_policy(res_cfg.policy)
    graph = ResidualGraph(teacher_policy(agent), res_cfg.scale, res_env.every)

    def make(num_envs: int, seed: int) -> VecEnv:
        return bc_env(bc_state, res_cfg.policy, "distillation (evaluated in simulation)",
                      num_envs, seed, cfg.dagger.dr)

    def acting(gen: torch.Generator) -> ResidualActing:
        return ResidualActing(flow, graph)

    return _Run(flow, None, False, make, acting, 1, ResidualActing(flow, graph))


def student_config(teacher: PolicyConfig, cfg: DistillConfig, per_step: bool = False,
                   clock: tuple[int, ...] = ()) -> PolicyConfig:
    """The student's config: the teacher's chunking (``per_step``: one action per call),
    what it sees (``cfg.sees``; a clock of periods ``clock`` where ``cfg.clock``), one
    integration step, an MLP of width max(hidden):
    ``chunk_block`` "residual", len(hidden) residual blocks; "plain", len(hidden) hidden
    layers (the input layer and len(hidden) - 1 plain blocks)."""
    blocks = len(cfg.hidden) if cfg.chunk_block == "residual" else len(cfg.hidden) - 1
    chunking: dict[str, Any] = {"horizon": 1, "execute": None} if per_step else {}
    if cfg.sees == "all":
        chunking["ignore_obs"] = ()
    if cfg.clock and clock:
        chunking["clock"] = tuple(clock)
    return dataclasses.replace(teacher, denoiser="mlp", width=max(cfg.hidden), blocks=blocks,
                               block=cfg.chunk_block, flow_steps=1, **chunking)


def distill_chunked(cfg: DistillConfig, console: Console | None = None
                    ) -> tuple[ChunkPolicy, DistillReport]:
    """Distill a bc-flow, dsrl or residual run into a one-step student (module docstring)."""
    console = console or Console()
    d = cfg.dagger
    d.validate()
    ckpt = resolve_checkpoint(cfg.run)
    run = _load_run(ckpt, cfg)
    torch.manual_seed(d.seed)
    flow = run.flow
    clock = run.stepping.periods if run.stepping is not None else ()  # its state's phase
    student = make_policy(student_config(flow.cfg, cfg, run.stepping is not None, clock),
                          "flow" if run.noisy else "mlp",
                          flow.obs_dim, flow.act_dim)
    student.obs_norm.load_state_dict(flow.obs_norm.state_dict())
    student.act_norm.load_state_dict(flow.act_norm.state_dict())
    if cfg.sees == "teacher":
        student.obs_seen.copy_(flow.obs_seen)  # the student sees what its teacher sees
    student.eval()
    env = run.make_env(d.num_envs, d.seed + 20_000)
    losses, samples = dagger(env, _ChunkLearner(run, student, d), d, console,
                             "distill (one step)")
    loss = losses["loss"]
    t_res = s_res = None
    if d.eval_episodes > 0:
        eval_env = run.make_env(min(d.eval_episodes, 32), d.seed + 30_000)
        gen = torch.Generator().manual_seed(d.seed)
        executor = run.acting(gen)
        with torch.no_grad():
            t_res = evaluate(lambda o: (executor(o), None), eval_env, d.eval_episodes,
                             seed=d.seed, episode_start=executor.reset)
            s_res = evaluate_chunked(student, eval_env, d.eval_episodes, seed=d.seed)
    path = run_dir_of(ckpt) / ONESTEP_FILE
    report = DistillReport(t_res, s_res, loss, samples, path)
    save_atomic({"format": ONESTEP_FORMAT, "kind": student.kind,
                 "policy": dataclasses.asdict(student.cfg), "obs_dim": student.obs_dim,
                 "act_dim": student.act_dim, "state_dict": student.state_dict(),
                 "teacher_run": str(run_dir_of(ckpt)), "dr": d.dr, "final_loss": loss,
                 "teacher_success": None if t_res is None else t_res.success_rate,
                 "student_success": None if s_res is None else s_res.success_rate}, path)
    return student.eval(), report


class _ChunkLearner:
    """A chunked student's data and fit (``dagger``'s ``Learner``): every chunk decision's
    observation history, noise, clock and the teacher's chunk (module docstring)."""

    def __init__(self, run: _Run, student: ChunkPolicy, cfg: DaggerConfig):
        self.run, self.student, self.cfg = run, student, cfg
        self.opt = torch.optim.Adam(student.parameters(), lr=cfg.lr)
        self.gen = torch.Generator().manual_seed(cfg.seed)
        self.hists: list[torch.Tensor] = []
        self.noises: list[torch.Tensor] = []
        self.labels: list[torch.Tensor] = []
        self.clocks: list[torch.Tensor] = []  # a student with a clock: each decision's steps
        self.now = torch.zeros(0)  # a stepping teacher's actions (E, A) at this step
        self.beta = 1.0
        self.executor = ChunkExecutor(self._chunk, student.horizon, student.cfg.executed,
                                      run.flow.obs_history, clock=bool(student.cfg.clock))
        self.executor.reset()

    @property
    def samples(self) -> int:
        return sum(h.shape[0] for h in self.hists)

    @torch.no_grad()
    def _chunk(self, hist: torch.Tensor, steps: torch.Tensor | None = None) -> torch.Tensor:
        """The executor's chunk of a decision: labelled and kept, the teacher's or the
        student's (``mix``)."""
        flow, H, A = self.run.flow, self.student.horizon, self.run.flow.act_dim
        noise = torch.randn(hist.shape[0], H, A, generator=self.gen) if self.run.noisy \
            else None
        if self.run.teacher is not None:
            label = self.run.teacher(hist, noise)
        else:  # one action per step (H = 1, every env called at every step)
            assert H == 1 and self.now.shape[0] == hist.shape[0]
            label = flow.act_norm(self.now)[:, None]
        self.hists.append(hist.clone())
        self.labels.append(label)
        if noise is not None:
            self.noises.append(noise)
        if steps is not None:
            self.clocks.append(steps.clone())
        teacher_chunk = flow.clip(flow.act_norm.inverse(label))
        if self.beta >= 1.0:
            return teacher_chunk
        own = self.student(hist, noise if noise is not None else
                           torch.zeros(hist.shape[0], H, A), steps)
        return mix(teacher_chunk, own, self.beta, self.gen)

    def act(self, obs: torch.Tensor, beta: float) -> torch.Tensor:
        self.beta = beta
        if self.run.stepping is not None:
            self.now = self.run.stepping(obs)
        return self.executor(obs)

    def stepped(self, result: StepResult) -> None:
        done = result[3] | result[4]
        self.executor.reset(done)
        if self.run.stepping is not None:
            self.run.stepping.reset(done)

    def fit(self) -> dict[str, float]:
        student = self.student
        all_h, all_y = torch.cat(self.hists), torch.cat(self.labels)
        all_z = torch.cat(self.noises) if self.noises else None
        all_s = torch.cat(self.clocks) if self.clocks else None
        loss = torch.tensor(float("nan"))
        student.train()
        for _ in range(self.cfg.grad_steps):
            idx = torch.randint(0, all_h.shape[0], (self.cfg.batch_size,), generator=self.gen)
            if isinstance(student, FlowPolicy):
                assert all_z is not None
                pred = student.integrate(all_h[idx], all_z[idx])
            else:
                assert isinstance(student, MLPChunkPolicy)
                pred = student.predict(all_h[idx], None if all_s is None else all_s[idx])
            loss = ((pred - all_y[idx])[:, :self.run.used] ** 2).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
        student.eval()
        return {"loss": float(loss.detach())}


def load_onestep(run: str | Path) -> tuple[ChunkPolicy, dict[str, Any]]:
    """The one-step student of a bc-flow, dsrl or residual run directory and its saved
    record."""
    p = Path(run)
    path = p / ONESTEP_FILE if p.is_dir() else p
    if not path.is_file():
        raise CheckpointError(f"no one-step student at {path}; run `robot-rl distill {run}` "
                              f"first")
    try:
        state = torch.load(path, map_location="cpu", weights_only=False)
        if state.get("format") != ONESTEP_FORMAT:
            raise ValueError(f"not a {ONESTEP_FORMAT} file")
        pcfg = from_dict(PolicyConfig, state["policy"])
        student = make_policy(pcfg, state["kind"], state["obs_dim"], state["act_dim"])
        student.load_state_dict(state["state_dict"])
    except Exception as e:
        raise CheckpointError(f"cannot read {path}: {type(e).__name__}: {e}") from None
    return student.eval(), state
