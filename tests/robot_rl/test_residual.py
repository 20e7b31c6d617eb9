"""The residual fine-tuner: the env executes the flow's zero-noise chunks corrected by a
bounded residual, a run trains, and its artifact (the flow's chunk graph plus the residual
graph) acts exactly as the run's actor does."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import numpy as np
import pytest
import torch
from rich.console import Console

from robot_rl.algos.configs import SACConfig, SafetyConfig
from robot_rl.bc import load_bc_policy
from robot_rl.checkpoint import CheckpointError
from robot_rl.config_io import to_dict
from robot_rl.data.reader import Dataset
from robot_rl.errors import ConfigError
from robot_rl.export import ArtifactError, load_policy
from robot_rl.finetune.configs import ResidualConfig
from robot_rl.finetune.residual import ResidualEnv, ResidualRunner, explore_mask, load_residual
from robot_rl.finetune.residual_base import (
    ExecutedActionSAC,
    ResidualActing,
    base_along_episodes,
)
from robot_rl.kinds.base import ExportConfig
from robot_rl.kinds.export import export_path
from robot_rl.policies import ChunkExecutor, ChunkPolicy
from robot_rl.replay import Batch
from robot_rl.sim import BatchedEnv, make_env
from tests.robot_rl.flow_runs import tiny_bc_runs


@pytest.fixture(scope="module")
def flow_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("residual")
    tiny_bc_runs(root, "reach", episode_length=20, horizon=4, execute=2)
    return root / "bc-flow"


def test_the_env_executes_the_flows_chunks_plus_the_bounded_residual(flow_run: Path) -> None:
    policy, _, _ = load_bc_policy(flow_run)
    env = ResidualEnv(make_env("reach", 2, seed=0, episode_length=7), policy, scale=0.2)
    ref = make_env("reach", 2, seed=0, episode_length=7)
    A = ref.act_dim
    assert (env.obs_dim, env.act_dim) == (ref.obs_dim + A, A)

    def zero_noise_chunk(hist: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return policy(hist, torch.zeros(hist.shape[0], 4, A))

    base = ChunkExecutor(zero_noise_chunk, 4, 2)
    obs, ref_obs = env.reset(seed=1), ref.reset(seed=1)
    gen = torch.Generator().manual_seed(0)
    for t in range(9):  # across a chunk boundary and an episode's end (7 steps)
        b = base(ref_obs)
        torch.testing.assert_close(obs, torch.cat([ref_obs, b], 1))
        residual = torch.rand(2, A, generator=gen) * 2 - 1
        executed = (b + 0.2 * residual).clamp(-1, 1)
        obs, r, *_, info = env.step(residual)
        ref_obs, ref_r, _, term, trunc, ref_info = ref.step(executed)
        base.reset(term | trunc)
        torch.testing.assert_close(r, ref_r)
        if t == 6:  # the episode ended: the final observation with a fresh chunk's action
            assert bool(trunc.all())
            final = ref_info["final_obs"]
            fresh = zero_noise_chunk(final[:, None])[:, 0]
            torch.testing.assert_close(info["final_obs"], torch.cat([final, fresh], 1))
    with pytest.raises(ConfigError, match="scale"):
        ResidualEnv(make_env("reach", 1), policy, scale=0.0)


def test_a_held_residual_is_one_decision_per_every_control_steps(flow_run: Path) -> None:
    """every 3 on 7-step episodes: each step is 3 control steps with the correction chosen
    at the first held on the flow's later actions, rewards summed, the episode's end inside
    the third step holding that env still to the next decision, where a fresh episode's
    base stands."""
    policy, _, _ = load_bc_policy(flow_run)
    env = ResidualEnv(make_env("reach", 2, seed=0, episode_length=7), policy, scale=0.2,
                      every=3)
    ref = make_env("reach", 2, seed=0, episode_length=7)
    A = ref.act_dim
    assert (env.steps_per_step, env.max_episode_length) == (3, 3)
    assert env.control_dt == pytest.approx(3 * ref.control_dt)

    def zero_noise_chunk(hist: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return policy(hist, torch.zeros(hist.shape[0], 4, A))

    base = ChunkExecutor(zero_noise_chunk, 4, 2)
    obs, ref_obs = env.reset(seed=1), ref.reset(seed=1)
    b = base(ref_obs)
    gen = torch.Generator().manual_seed(0)
    for t in range(4):  # control steps 0-11; the episode's 7th step is the third's first
        torch.testing.assert_close(obs, torch.cat([ref_obs, b], 1))
        residual = torch.rand(2, A, generator=gen) * 2 - 1
        correction = (b + 0.2 * residual).clamp(-1, 1) - b
        obs, r, _, terminated, truncated, info = env.step(residual)
        want_r, executed, ended = torch.zeros(2), [], torch.zeros(2, dtype=torch.bool)
        for _ in range(3):
            executed.append((b + correction).clamp(-1, 1))
            ref_obs, ref_r, _, term, trunc, ref_info = ref.step(executed[-1], hold=ended)
            want_r += torch.where(ended, 0.0, ref_r)
            if bool((term | trunc).any()):
                final = ref_info["final_obs"]
            ended |= term | trunc
            base.reset(ended)
            b = base(ref_obs)
        torch.testing.assert_close(r, want_r)
        torch.testing.assert_close(info["executed_actions"], torch.stack(executed, 1))
        torch.testing.assert_close(info["executed_action"], executed[0])  # the decision's
        assert bool((truncated == ended).all()) and not bool(terminated.any())
        if t == 2:  # ended at the first of the three: the final observation is its
            assert bool(ended.all())
            fresh = zero_noise_chunk(final[:, None])[:, 0]
            torch.testing.assert_close(info["final_obs"], torch.cat([final, fresh], 1))
    with pytest.raises(ConfigError, match="every"):
        ResidualEnv(make_env("reach", 1), policy, every=0)
    with pytest.raises(ConfigError, match="every at 1"):
        ResidualConfig(policy=flow_run, every=2, critic_action="executed",
                       demo_ratio=0.5).validate()
    ResidualConfig(policy=flow_run, every=2, critic_action="executed").validate()


class _Recorder:
    """A ``VecEnv`` passed through, recording each control step's (hold, next observation,
    episode ended)."""

    def __init__(self, env: Any):
        self.env = env
        self.steps: list[tuple[torch.Tensor | None, torch.Tensor, torch.Tensor]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.env, name)

    def step(self, action: torch.Tensor, hold: torch.Tensor | None = None) -> Any:
        out = self.env.step(action, hold)
        self.steps.append((None if hold is None else hold.clone(), out[0], out[3] | out[4]))
        return out


@pytest.mark.slow
@pytest.mark.parametrize("every", [1, 3])
def test_a_residual_run_exports_what_it_evaluates(flow_run: Path, tmp_path: Path,
                                                  every: int) -> None:
    """The artifact, called once per control step, acts as the run's env executes: with
    ``every`` 3 it holds each correction for 3 calls, across an episode's end (20 steps)."""
    cfg = ResidualConfig(policy=flow_run, num_envs=2, total_steps=48, eval_every=48,
                         eval_episodes=2, runs_dir=tmp_path, run_name="res", progress=False,
                         safety="off", scale=0.3, every=every,
                         sac=SACConfig(batch_size=8, learning_starts=16, actor_hidden=(8,),
                                       critic_hidden=(8,)))
    runner = ResidualRunner(cfg, console=Console(file=sys.stderr))
    env = runner.env
    assert isinstance(env, ResidualEnv) and runner.cfg.task == "reach"
    assert env.obs_dim == env.env.obs_dim + env.act_dim  # the observation and the base action
    runner.train()
    assert runner.env_steps == 48  # counted in control steps
    export_path(ExportConfig(run=tmp_path / "res"))
    art = load_policy(tmp_path / "res" / "export")
    assert art.chunked and art.meta["residual"]["scale"] == 0.3
    assert art.residual_every == every
    agent, _, loaded = load_residual(tmp_path / "res", 1, 0)
    assert loaded.every == every
    rec = _Recorder(loaded.env)
    env = ResidualEnv(rec, loaded.policy, loaded.scale, loaded.every)
    obs = env.reset(seed=0)
    seen = obs[0, :env.env.obs_dim]  # what the arm sees before its next control step
    got, want = [], []
    for _ in range(24 // every):  # the artifact runs its own chunk queue, the env its own
        with torch.no_grad():
            residual = agent.act(obs, deterministic=True, gate=False).action
        rec.steps.clear()
        obs, *_, info = env.step(residual)
        executed = info["executed_actions"][0] if every > 1 else \
            info["executed_action"][0, None]
        for k, (hold, next_obs, done) in enumerate(rec.steps):
            if not (hold is not None and bool(hold[0])):  # held: after its episode's end
                got.append(art(seen.numpy()))
                want.append(executed[k].numpy())
            seen = next_obs[0]
            if bool(done[0]):
                art.reset()
    assert len(got) >= 22  # an episode's end inside a held step skips at most its rest
    np.testing.assert_allclose(np.stack(got), np.stack(want), atol=1e-5)
    with pytest.raises(CheckpointError, match="robot-rl distill"):
        export_path(ExportConfig(run=tmp_path / "res", policy="student"))


@pytest.mark.slow
def test_a_residual_run_acts_step_by_step_as_its_artifact_and_distills(
        flow_run: Path, tmp_path: Path) -> None:
    """``ResidualActing`` on the task's own env is the artifact, call for call (a correction
    held 3 calls, across episode ends); a one-step student that sees its teacher's clock
    learns it, one action per call, and its artifact counts the clock as it learnt it."""
    from robot_rl.cli.learn import distill_cmd
    from robot_rl.distill import distill, teacher_policy
    from robot_rl.distill.chunked import load_onestep
    from robot_rl.distill.configs import DaggerConfig, DistillConfig
    from robot_rl.export.modules import ResidualGraph

    cfg = ResidualConfig(policy=flow_run, num_envs=2, total_steps=48, eval_every=48,
                         eval_episodes=2, runs_dir=tmp_path, run_name="res", progress=False,
                         safety="off", scale=0.5, every=3,
                         sac=SACConfig(batch_size=8, learning_starts=16, actor_hidden=(8,),
                                       critic_hidden=(8,)))
    ResidualRunner(cfg, console=Console(file=sys.stderr)).train()
    export_path(ExportConfig(run=tmp_path / "res"))
    art = load_policy(tmp_path / "res" / "export")
    agent, _, res_env = load_residual(tmp_path / "res", 2, 0)
    acting = ResidualActing(res_env.policy, ResidualGraph(teacher_policy(agent), 0.5, 3))
    env = res_env.env  # the task's own env, 20-step episodes
    obs = env.reset(seed=3)
    moved = 0.0
    for _ in range(45):
        action = acting(obs)
        np.testing.assert_allclose(art(obs.numpy()), action.numpy(), atol=1e-5)
        moved += float((action - res_env.executor(obs)).abs().max())  # a correction acts
        obs, _, _, terminated, truncated, _ = env.step(action)
        done = terminated | truncated
        acting.reset(done)
        res_env.executor.reset(done)
        art.reset(done.numpy())
    assert moved > 0.0

    distill_cmd(DistillConfig(run=tmp_path / "res", hidden=(64, 64), sees="all",
                              dagger=DaggerConfig(iterations=3, num_envs=8, grad_steps=600,
                                                  batch_size=128, lr=3e-3, dr="off",
                                                  eval_episodes=2, progress=False)))
    student, record = load_onestep(tmp_path / "res")
    assert student.kind == "mlp" and (student.horizon, student.cfg.executed) == (1, 1)
    # it sees the last action, which the flow leaves out
    assert bool((student.obs_seen == 1).all()) and not bool((res_env.policy.obs_seen == 1).all())
    assert student.obs_history == res_env.policy.obs_history
    flow_executed = res_env.policy.cfg.executed
    assert student.cfg.clock == (flow_executed, 3)  # the chunk's position, the decision's
    assert record["teacher_success"] is not None and record["student_success"] is not None
    # along the teacher's own episodes the student's action is far nearer the teacher's
    # than the teacher's actions are to their mean
    teacher = ResidualActing(res_env.policy, ResidualGraph(teacher_policy(agent), 0.5, 3))
    own = ChunkExecutor(lambda h, s: student(h, torch.zeros(h.shape[0], 1, student.act_dim), s),
                        1, 1, student.obs_history, clock=True)
    obs = env.reset(seed=11)
    want, got = [], []
    with torch.no_grad():
        for _ in range(40):
            want.append(teacher(obs))
            got.append(own(obs))
            obs, _, _, terminated, truncated, _ = env.step(want[-1])
            teacher.reset(terminated | truncated)
            own.reset(terminated | truncated)
    w, g = torch.cat(want), torch.cat(got)
    assert float(((g - w) ** 2).mean()) < 0.5 * float(((w - w.mean(0)) ** 2).mean())
    export_path(ExportConfig(run=tmp_path / "res", policy="student", out=tmp_path / "stud"))
    stud = load_policy(tmp_path / "stud")
    assert (stud.horizon, stud.execute) == (1, 1) and stud.meta.get("residual") is None
    assert stud.clock == (flow_executed, 3)
    hist = obs[:, None].repeat(1, student.obs_history, 1)
    with torch.no_grad():
        ref = student(hist, torch.zeros(2, 1, student.act_dim), torch.tensor([5.0, 6.0]))
    np.testing.assert_allclose(stud.chunk(hist.numpy(), steps=np.array([5, 6])), ref.numpy(),
                               atol=1e-5)
    with pytest.raises(ArtifactError, match="sees a clock"):
        stud.chunk(hist.numpy())
    # acting step by step, the artifact counts each env's steps from its episode's start
    own.reset()
    obs = env.reset(seed=12)
    for _ in range(45):
        with torch.no_grad():
            a = own(obs)
        np.testing.assert_allclose(stud(obs.numpy()), a.numpy(), atol=1e-5)
        obs, _, _, terminated, truncated, _ = env.step(a)
        own.reset(terminated | truncated)
        stud.reset((terminated | truncated).numpy())
    # `robot-rl eval RUN --student` evaluates the one-step student as its artifact decides
    from robot_rl.kinds.eval_config import EvalConfig
    from robot_rl.kinds.evaluation import evaluate_path

    of_run, of_art = (evaluate_path(EvalConfig(path=path, student=student_flag, episodes=4,
                                               num_envs=2, seed=5))
                      for path, student_flag in ((tmp_path / "res", True),
                                                 (tmp_path / "stud", False)))
    assert of_run.label.endswith("its one-step student")
    assert of_run.result.success_rate == of_art.result.success_rate
    assert of_run.result.return_mean == pytest.approx(of_art.result.return_mean, rel=1e-3)
    with pytest.raises(ConfigError, match="--sees all is for a chunked teacher"):
        distill(DistillConfig(run=tmp_path / "res", sees="all"))  # an actor's student


def test_a_residual_run_starts_from_the_flow_policy_itself(flow_run: Path, tmp_path: Path):
    """The residual actor's mean starts at zero: the first evaluation is the flow's own."""
    runner = ResidualRunner(ResidualConfig(policy=flow_run, num_envs=2, runs_dir=tmp_path,
                                           run_name="zero", progress=False, safety="off",
                                           sac=SACConfig(actor_hidden=(8,),
                                                         critic_hidden=(8,))),
                            console=Console(file=sys.stderr))
    obs = runner.env.reset(seed=0)
    with torch.no_grad():
        residual = runner.agent.act(obs, deterministic=True, gate=False).action
    assert float(residual.abs().max()) == 0.0
    assert isinstance(runner.env, ResidualEnv)
    torch.testing.assert_close(runner.env.applied(residual), runner.env.base)
    # the default decision: every 0.1 s of the flow's 50-Hz task, kept in the run's config
    assert runner.env.every == runner.cfg.every == 5 and runner.cfg.explore_ramp == 100_000
    assert json.loads((runner.run_dir / "config.json").read_text())["every"] == 5


def test_the_default_decision_period_follows_the_control_rate(flow_run: Path) -> None:
    """``every`` unset: the control steps in 0.1 s, executed-action critics too; 1 with
    demonstrations in the batch (single control steps); as given when set."""
    cfg = ResidualConfig(policy=flow_run)
    assert cfg.every is None and cfg.scale == 0.4 and cfg.sac.updates_per_step == 20
    assert [cfg.decision_steps(dt) for dt in (0.02, 0.05, 0.1, 0.2)] == [5, 2, 1, 1]
    executed = dataclasses.replace(cfg, critic_action="executed")
    assert executed.decision_steps(0.02) == 5
    assert dataclasses.replace(executed, demo_ratio=0.5).decision_steps(0.02) == 1
    assert dataclasses.replace(cfg, every=3).decision_steps(0.02) == 3
    # a run saved before the ramp and ``every`` existed resumes as it ran: without them
    saved = {k: v for k, v in to_dict(cfg).items() if k not in ("explore_ramp", "every")}
    old = ResidualConfig.from_saved(saved)
    assert (old.explore_ramp, old.every, old.scale) == (0, 1, 0.4)
    assert ResidualConfig.from_saved(to_dict(cfg)).explore_ramp == 100_000


@pytest.mark.slow
def test_the_critic_warmup_keeps_the_actor_still_then_lets_it_move(flow_run: Path,
                                                                   tmp_path: Path):
    """``critic_warmup`` critic-only steps: the residual's mean stays at zero through them
    while the critics learn; the actor moves on the next update."""
    runner = ResidualRunner(ResidualConfig(policy=flow_run, num_envs=2, runs_dir=tmp_path,
                                           run_name="warm", progress=False, safety="off",
                                           total_steps=40, critic_warmup=20, every=1,
                                           sac=SACConfig(actor_hidden=(8,), critic_hidden=(8,),
                                                         batch_size=8, learning_starts=16)),
                            console=Console(file=sys.stderr))
    critic = [p.clone() for p in runner.agent.critic.parameters()]
    runner.train()  # 20 vector steps: the 16 warm-up transitions, then one update each
    assert 0 < runner.agent.updates < 20
    obs = runner.env.reset(seed=0)
    for _ in range(20 - runner.agent.updates):
        runner.learn()
    mean = runner.agent.act(obs, deterministic=True, gate=False).action
    assert runner.agent.updates == 20 and float(mean.abs().max()) == 0.0
    assert any(not torch.equal(a, b) for a, b in zip(critic, runner.agent.critic.parameters(),
                                                     strict=True))
    runner.learn()
    assert float(runner.agent.act(obs, deterministic=True, gate=False).action.abs().max()) > 0
    with pytest.raises(ConfigError, match="critic-warmup"):
        ResidualConfig(policy=flow_run, critic_warmup=-1).validate()


@pytest.mark.slow
def test_progressive_exploration_applies_the_residual_ever_more_often(flow_run: Path,
                                                                       tmp_path: Path):
    """``explore_ramp``: no correction at the first decision, the residual chosen in a share
    env steps / ramp of the envs, always from the ramp's end on (Policy Decorator)."""
    runner = ResidualRunner(ResidualConfig(policy=flow_run, num_envs=4, runs_dir=tmp_path,
                                           run_name="ramp", progress=False, safety="off",
                                           explore_ramp=1_000,
                                           sac=SACConfig(actor_hidden=(8,), critic_hidden=(8,),
                                                         learning_starts=10**6)),
                            console=Console(file=sys.stderr))
    obs = runner.env.reset(seed=0)
    first = runner.decide(obs)[0]  # uniform warm-up residuals, none applied at 0 env steps
    assert first.shape == (4, runner.env.act_dim) and float(first.abs().max()) == 0.0
    runner.env_steps = 500
    runner.decide(obs)
    runner.save()  # a resumed run draws the masks this one would draw next
    resumed = ResidualRunner(ResidualConfig(policy=flow_run, resume=tmp_path / "ramp",
                                            progress=False),
                             console=Console(file=sys.stderr))
    assert resumed.env_steps == 500
    masks = [explore_mask(0.5, 64, r._explore_gen) for r in (runner, resumed)]
    assert torch.equal(*masks) and 0 < int(masks[0].sum()) < 64
    runner.env_steps = 1_000
    assert bool((runner.decide(obs)[0].abs().amax(1) > 0).all())
    share = explore_mask(0.25, 20_000, torch.Generator().manual_seed(0)).float().mean()
    assert abs(float(share) - 0.25) < 0.01
    with pytest.raises(ConfigError, match="explore-ramp"):
        ResidualConfig(policy=flow_run, explore_ramp=-1).validate()


class _RampChunks(torch.nn.Module):
    """A chunk policy by hand: every chunk at history (B, 1, O) is ``obs[0] + h`` for its
    h-th action, in every action element."""

    def __init__(self, horizon: int, executed: int, act_dim: int):
        super().__init__()
        self.horizon, self.act_dim, self.obs_history = horizon, act_dim, 1
        self.cfg = SimpleNamespace(horizon=horizon, executed=executed, obs_history=1)
        self.w = torch.nn.Parameter(torch.zeros(()))

    def forward(self, hist: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        h = torch.arange(self.horizon, dtype=hist.dtype)
        return (hist[:, -1, :1] + h)[:, :, None].expand(-1, -1, self.act_dim) + 0 * noise


def test_demonstrations_get_the_base_action_it_would_take_along_each_episode() -> None:
    """Chunks of 3, 2 executed, re-planned from each episode's first step; the last step's
    next base is a fresh chunk's first action at the final observation (hand-computed)."""
    policy = cast(ChunkPolicy, _RampChunks(horizon=3, executed=2, act_dim=2))
    v = torch.tensor([10.0, 11, 12, 20, 21, 22, 23, 24])  # episodes of 3 and 5 steps
    tr = {"obs": torch.stack([v, -v], 1), "next_obs": torch.stack([v + 1, v], 1),
          "episode": torch.tensor([4, 4, 4, 7, 7, 7, 7, 7])}
    base, next_base = base_along_episodes(policy, tr)
    want = torch.tensor([10 + 0, 10 + 1, 12 + 0, 20 + 0, 20 + 1, 22 + 0, 22 + 1, 24 + 0.0])
    torch.testing.assert_close(base, want[:, None].expand(-1, 2))
    want_next = torch.tensor([11.0, 12, 12 + 1, 21, 22, 23, 24, 24 + 1])
    torch.testing.assert_close(next_base, want_next[:, None].expand(-1, 2))


def test_executed_action_critics_score_base_plus_the_scaled_residual() -> None:
    """The critics' action is clip(base + scale * residual), the base read back from the
    normalized observation's last A features (hand-computed)."""
    agent = ExecutedActionSAC(3, 2, SACConfig(gamma=0.9, actor_hidden=(8,),
                                              critic_hidden=(8,)),
                              SafetyConfig(mode="off"), scale=0.5)
    agent.normalizer.mean.copy_(torch.tensor([0.0, 0.2, -0.4]))
    agent.normalizer.var.copy_(torch.tensor([1.0, 4.0, 0.25]) - agent.normalizer.eps)
    raw = torch.tensor([[5.0, 0.8, -0.2], [1.0, -0.6, 0.1]])
    residual = torch.tensor([[1.0, 0.4], [-1.0, 0.2]])
    got = agent.critic_action(agent.normalize(raw), residual)
    want = torch.tensor([[1.0, 0.0], [-1.0, 0.2]])  # 0.8 + 0.5 clipped; -0.2 + 0.2; ...
    torch.testing.assert_close(got, want)
    # an update scores the actor's next actions (TD target) and its actions (actor loss) so
    seen: list[torch.Tensor] = []
    scored = agent.critic_action
    agent.critic_action = lambda x, a: seen.append(x) or scored(x, a)  # type: ignore
    nxt = raw + 1.0
    agent.update(Batch(raw, want, torch.zeros(2), torch.zeros(2), nxt, torch.zeros(2)))
    assert len(seen) == 2
    torch.testing.assert_close(seen[0], agent.normalize(nxt))
    torch.testing.assert_close(seen[1], agent.normalize(raw))


def test_the_anchor_fades_over_the_exploration_ramp(flow_run: Path, tmp_path: Path) -> None:
    """--sac.anchor W: W at the start, W/2 halfway through the ramp, none after it; with
    --anchor-steps 0, W throughout; each decision sets the agent's weight."""
    cfg = ResidualConfig(policy=flow_run, num_envs=2, runs_dir=tmp_path, run_name="anchor",
                         progress=False, safety="off", explore_ramp=100,
                         sac=SACConfig(anchor=0.2, actor_hidden=(8,), critic_hidden=(8,)))
    runner = ResidualRunner(cfg, console=Console(file=sys.stderr))
    assert [runner.anchor_weight(n) for n in (0, 50, 100, 200)] == [0.2, 0.1, 0.0, 0.0]
    runner.env_steps = 75
    runner.decide(runner.env.reset(seed=0))
    assert runner.agent.mean_anchor == pytest.approx(0.05)
    runner.cfg = dataclasses.replace(runner.cfg, anchor_steps=0)
    assert [runner.anchor_weight(n) for n in (0, 50, 200)] == [0.2, 0.2, 0.2]
    with pytest.raises(ConfigError, match="anchor-steps"):
        dataclasses.replace(cfg, anchor_steps=-1).validate()


def test_overtime_is_whole_decisions_on_the_training_env_only(flow_run: Path,
                                                               tmp_path: Path) -> None:
    """--overtime 0.23 s on the flow's 50-Hz task, a decision every 5 control steps: 2
    decisions (10 control steps) on the training env; evaluation episodes end on time."""
    cfg = ResidualConfig(policy=flow_run, num_envs=2, runs_dir=tmp_path, run_name="over",
                         progress=False, safety="off", overtime=0.23,
                         sac=SACConfig(actor_hidden=(8,), critic_hidden=(8,)))
    assert cfg.overtime_steps(0.02) == 10 and cfg.overtime_steps(0.1) == 2
    runner = ResidualRunner(cfg, console=Console(file=sys.stderr))
    assert isinstance(runner.env, ResidualEnv) and isinstance(runner.eval_env, ResidualEnv)
    assert isinstance(runner.env.env, BatchedEnv) and isinstance(runner.eval_env.env, BatchedEnv)
    assert (runner.env.env.overtime, runner.eval_env.env.overtime) == (10, 0)
    with pytest.raises(ConfigError, match="overtime"):
        dataclasses.replace(cfg, overtime=-1.0).validate()


@pytest.mark.slow
def test_executed_action_critics_with_held_corrections_store_each_decisions_first(
        flow_run: Path, tmp_path: Path) -> None:
    """--critic-action executed at the default decision period (5 control steps on the
    50-Hz test flow): the replay holds one transition per decision, its action the
    decision's first executed action, base plus at most the bound."""
    cfg = ResidualConfig(policy=flow_run, num_envs=2, total_steps=100, eval_every=100,
                         eval_episodes=2, runs_dir=tmp_path, run_name="held", progress=False,
                         safety="off", scale=0.3, critic_action="executed", explore_ramp=0,
                         sac=SACConfig(batch_size=4, learning_starts=8, actor_hidden=(8,),
                                       critic_hidden=(8,)))
    runner = ResidualRunner(cfg, console=Console(file=sys.stderr))
    assert runner.cfg.every == 5 and isinstance(runner.agent, ExecutedActionSAC)
    runner.train()
    n, n_obs = len(runner.buffer), runner.env.obs_dim - runner.env.act_dim
    assert n == 100 // 5 and runner.agent.updates > 0  # env steps count every env
    obs, executed = runner.buffer.obs[:n], runner.buffer.action[:n]
    moved = (executed - obs[:, n_obs:]).abs()
    assert float(moved.max()) <= 0.3 + 1e-5 and float(moved.max()) > 0.0
    loaded, _, _ = load_residual(runner.run_dir, 1, 0)  # its critics score what they learned
    assert isinstance(loaded, ExecutedActionSAC) and loaded.scale == 0.3


@pytest.mark.slow
def test_a_residual_with_demonstrations_learns_from_executed_actions(flow_run: Path,
                                                                     tmp_path: Path) -> None:
    """--critic-action executed --demo-ratio 0.5: the replay holds the executed actions, the
    demonstrations (the flow's own dataset) enter with their base actions, half a batch."""
    cfg = ResidualConfig(policy=flow_run, num_envs=2, total_steps=40, eval_every=40,
                         eval_episodes=2, runs_dir=tmp_path, run_name="demo", progress=False,
                         safety="off", scale=0.3, critic_action="executed", demo_ratio=0.5,
                         explore_ramp=0,
                         sac=SACConfig(batch_size=8, learning_starts=16, actor_hidden=(8,),
                                       critic_hidden=(8,)))
    runner = ResidualRunner(cfg, console=Console(file=sys.stderr))
    env = runner.env
    assert isinstance(env, ResidualEnv) and isinstance(runner.agent, ExecutedActionSAC)
    runner.train()
    assert runner.agent.updates > 0 and runner.demos is not None
    ds = Dataset(flow_run.parent / "demos")
    n_obs = env.env.obs_dim
    assert len(runner.demos) == ds.num_frames
    frames = ds.frames()
    np.testing.assert_allclose(runner.demos.obs[:, :n_obs].numpy(), frames["observation.state"])
    np.testing.assert_allclose(runner.demos.action.numpy(), frames["action"])
    # the online replay: each stored action is what the env executed for its observation
    n = len(runner.buffer)
    obs, executed = runner.buffer.obs[:n], runner.buffer.action[:n]
    residual = (executed - obs[:, n_obs:]) / 0.3
    assert float(residual.abs().max()) <= 1.0 + 1e-5
    assert not torch.equal(executed, obs[:, n_obs:])  # not the base itself: residuals moved it
    batch = runner.sample_batch()
    assert batch.obs.shape == (8, n_obs + env.act_dim)
    with pytest.raises(ConfigError, match="critic-action executed"):
        ResidualConfig(policy=flow_run, demo_ratio=0.5).validate()
