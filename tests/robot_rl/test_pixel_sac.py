"""Asymmetric SAC from pixels: replay extras, the actor, the update's gradient paths, the
runner (train, resume, export, eval) and fine-tuning a DAgger student."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch
from rich.console import Console

from robot_rl.algos.configs import SACConfig, SafetyConfig
from robot_rl.distill.configs import DaggerConfig, PixelDistillConfig
from robot_rl.distill.pixels import distill_pixels
from robot_rl.errors import ConfigError
from robot_rl.replay import ReplayBuffer
from robot_rl.vision.configs import PixelInputs, PixelPolicyConfig, PixelTrainConfig
from robot_rl.vision.pixel_runner import PIXEL_POLICY, PixelRunner
from robot_rl.vision.pixel_sac import (
    PROPRIO,
    PixelActor,
    PixelSAC,
    image_key,
    replay_extra,
)
from robot_rl.vision.student import PixelPolicy
from robot_rl.vision.student_file import load_pixel_student

SHAPES = {"front.rgb": (3, 24, 24), "front.depth": (1, 24, 24)}
SMALL = PixelPolicyConfig(features=8, encoder_width=8, hidden=(16,), state_hidden=(16,))


def test_replay_stores_extra_tensors_in_their_dtypes_and_round_trips():
    spec = {"img": ((3, 4, 4), torch.uint8), "d": ((1,), torch.float16)}
    buf = ReplayBuffer(5, 2, 1, extra=spec)
    img = torch.arange(4 * 48, dtype=torch.uint8).view(4, 3, 4, 4)
    obs = torch.arange(8.0).view(4, 2)
    buf.add(obs, torch.zeros(4, 1), torch.zeros(4), torch.zeros(4), obs + 1, torch.zeros(4),
            mask=torch.tensor([True, False, True, True]),
            extra={"img": img, "d": torch.full((4, 1), 0.5)})
    assert len(buf) == 3 and buf.extra["img"].dtype == torch.uint8
    assert torch.equal(buf.extra["img"][:3], img[[0, 2, 3]])  # the masked row is skipped
    assert torch.equal(buf.obs[:3], obs[[0, 2, 3]])
    batch = buf.sample(7, torch.Generator().manual_seed(0))
    assert batch.extra["img"].shape == (7, 3, 4, 4) and batch.extra["d"].dtype == torch.float16
    rows = [int(torch.nonzero((buf.obs[:3] == o).all(1))[0]) for o in batch.obs]
    assert torch.equal(batch.extra["img"], buf.extra["img"][rows])  # rows stay together
    again = ReplayBuffer(5, 2, 1, extra=spec)
    again.load_state_dict(buf.state_dict())
    assert torch.equal(again.extra["img"][:3], buf.extra["img"][:3])
    with pytest.raises(ConfigError, match="extra tensors"):
        buf.add(obs, torch.zeros(4, 1), torch.zeros(4), torch.zeros(4), obs, torch.zeros(4),
                extra={"img": img})
    with pytest.raises(ConfigError, match="does not match"):
        ReplayBuffer(5, 2, 1).load_state_dict(buf.state_dict())


def _policy(state_dim: int = 2) -> PixelPolicy:
    torch.manual_seed(0)
    return PixelPolicy(SMALL, SHAPES, proprio_dim=5, act_dim=3, state_dim=state_dim)


def _images(n: int, gen: torch.Generator) -> dict[str, torch.Tensor]:
    return {"front.rgb": torch.randint(0, 256, (n, 3, 24, 24), generator=gen,
                                       dtype=torch.uint8),
            "front.depth": torch.rand(n, 1, 24, 24, generator=gen) * 2}


def test_the_actor_mean_is_the_pixel_policy_and_its_spread_starts_as_configured():
    policy = _policy()
    actor = PixelActor(policy, init_log_std=-1.5)
    gen = torch.Generator().manual_seed(1)
    proprio, images = torch.randn(4, 5, generator=gen), _images(4, gen)
    mean, log_std, est, _ = actor.dist(proprio, images)
    assert torch.allclose(torch.tanh(mean), policy(proprio, images), atol=1e-6)
    assert torch.allclose(log_std, torch.full_like(log_std, -1.5), atol=1e-4)
    assert est is not None and est.shape == (4, 2)


def _agent(safety: str = "off", **kw: object) -> PixelSAC:
    # critic state: 6 columns; the state head estimates columns 4 and 5
    return PixelSAC(PixelActor(_policy()), critic_dim=6, act_dim=3,
                    cfg=SACConfig(gamma=0.97, batch_size=8, num_critics=2),
                    safety=SafetyConfig(mode=safety, candidates=4),  # type: ignore[arg-type]
                    state_cols=torch.tensor([4, 5]), **kw)  # type: ignore[arg-type]


def _filled(agent: PixelSAC, n: int = 32) -> ReplayBuffer:
    buf = ReplayBuffer(64, 6, 3, extra=replay_extra(5, SHAPES))
    gen = torch.Generator().manual_seed(2)
    critic = torch.randn(n, 6, generator=gen)
    extra = {PROPRIO: torch.randn(n, 5, generator=gen),
             f"next_{PROPRIO}": torch.randn(n, 5, generator=gen)}
    for nxt in (False, True):
        for k, v in _images(n, gen).items():
            extra[image_key(k, nxt)] = v
    buf.add(critic, torch.rand(n, 3, generator=gen) * 2 - 1, torch.randn(n, generator=gen),
            (torch.rand(n, generator=gen) < 0.3).float(), critic + 0.1, torch.zeros(n),
            extra=extra)
    agent.observe(critic)
    return buf


def _params(module: torch.nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in module.parameters()]


def _changed(before: list[torch.Tensor], module: torch.nn.Module) -> bool:
    return any(not torch.equal(a, b) for a, b in zip(before, module.parameters(), strict=True))


def test_critics_learn_from_state_and_perception_from_the_state_loss():
    agent = _agent()
    buf = _filled(agent)
    policy = agent.policy
    enc, critic, head = _params(policy.encoders), _params(agent.critic), _params(policy.state_head)
    agent.update(buf.sample(8, agent.gen), actor=False)  # critics only: the actor holds still
    assert _changed(critic, agent.critic)
    assert not _changed(enc, policy.encoders) and not _changed(head, policy.state_head)
    metrics = agent.update(buf.sample(8, agent.gen))
    assert _changed(enc, policy.encoders) and _changed(head, policy.state_head)
    assert metrics["losses/actor_aux"] > 0  # the state head's regression of columns 4, 5

    # without the state loss SAC trains the action MLP and leaves perception alone ...
    quiet = _agent(state_weight=0.0)
    buf = _filled(quiet)
    enc, mlp = _params(quiet.policy.encoders), _params(quiet.policy.mlp)
    quiet.update(buf.sample(8, quiet.gen))
    assert _changed(mlp, quiet.policy.mlp) and not _changed(enc, quiet.policy.encoders)
    # ... unless its gradient is let through the estimate
    through = _agent(state_weight=0.0, rl_trains_perception=True)
    buf = _filled(through)
    enc = _params(through.policy.encoders)
    through.update(buf.sample(8, through.gen))
    assert _changed(enc, through.policy.encoders)

    # an actor on the features learns them from SAC's loss; its state head, without the
    # auxiliary loss, is not touched
    on_features = dataclasses.replace(SMALL, act_on="features")
    feats = PixelSAC(PixelActor(PixelPolicy(on_features, SHAPES, 5, 3, state_dim=2)), 6, 3,
                     SACConfig(gamma=0.97, batch_size=8), SafetyConfig(mode="off"),
                     state_cols=torch.tensor([4, 5]), state_weight=0.0)
    buf = _filled(feats)
    enc, head = _params(feats.policy.encoders), _params(feats.policy.state_head)
    metrics = feats.update(buf.sample(8, feats.gen))
    assert "losses/actor_aux" not in metrics and not _changed(head, feats.policy.state_head)
    assert _changed(enc, feats.policy.encoders)


def test_the_anchor_pulls_toward_the_initial_action_mlp_and_stays_frozen():
    agent = _agent(state_weight=0.0, anchor_weight=100.0)
    buf = _filled(agent)
    assert agent.anchor is not None
    start = _params(agent.anchor)
    assert not _changed(start, agent.policy.mlp)  # the initial action MLP
    first = agent.update(buf.sample(8, agent.gen))
    assert first["losses/actor_aux"] == 0.0  # nothing moved yet
    second = agent.update(buf.sample(8, agent.gen))
    assert second["losses/actor_aux"] > 0.0
    assert not _changed(start, agent.anchor) and _changed(start, agent.policy.mlp)
    assert agent.q_scale > 0
    restored = _agent(state_weight=0.0, anchor_weight=100.0)
    restored.load_full_state(agent.full_state())
    assert restored.q_scale == agent.q_scale and not _changed(start, restored.anchor)


def test_the_gate_scores_pixel_actions_with_the_critic_state():
    agent = _agent("gate")
    gen = torch.Generator().manual_seed(3)
    proprio, images, critic = torch.randn(5, 5, generator=gen), _images(5, gen), \
        torch.randn(5, 6, generator=gen)
    step = agent.act_pixels(proprio, images, critic, deterministic=True)
    assert step.action.shape == (5, 3) and step.hold.shape == (5,)
    # every candidate over the threshold: all rejected, each env gets its least-cost one
    agent.safety_cfg.threshold = -1.0
    agent.gate.threshold = -1.0
    step = agent.act_pixels(proprio, images, critic, deterministic=True)
    assert bool(step.rejected.all())
    with pytest.raises(TypeError, match="act_pixels"):
        agent.act(critic)


def _tiny(tmp_path: Path, **kw: object) -> PixelTrainConfig:
    base: dict = dict(task="push", inputs=PixelInputs(cameras=("front",), size=24),
                      num_envs=2, total_steps=60,
                      eval_every=1_000, eval_episodes=2, log_every=20, runs_dir=tmp_path,
                      run_name="pix", progress=False, policy=SMALL, safety="both",
                      sac=SACConfig(batch_size=8, buffer_size=200, learning_starts=20))
    base.update(kw)
    cfg = PixelTrainConfig(**base)
    cfg.env.episode_length = 15
    return cfg


@pytest.mark.slow
def test_train_pixels_trains_resumes_evaluates_and_exports(tmp_path, cli):
    runner = PixelRunner(_tiny(tmp_path), Console(quiet=True))
    runner.train()
    run = runner.run_dir
    assert runner.agent.updates > 0 and len(runner.buffer) == 60
    stored = runner.buffer.extra[image_key("front.rgb")][:60]
    assert stored.dtype == torch.uint8 and int(stored.max()) > 0  # real frames were kept
    saved, state = load_pixel_student(run / PIXEL_POLICY)
    assert state["trained_by"] == "train-pixels"
    assert state["state_terms"] == ["puck_pos", "ee_to_puck", "puck_to_goal"]
    assert saved.state_dim == state["state_dim"] == 8  # their columns
    for a, b in zip(saved.state_dict().values(), runner.agent.policy.state_dict().values(),
                    strict=True):
        assert torch.equal(a, b)
    # the normalization was fitted to the warm-up data, not left at the identity
    assert not torch.equal(saved.proprio_norm.std, torch.ones_like(saved.proprio_norm.std))

    resumed = PixelRunner(_tiny(tmp_path, total_steps=80, resume=run), Console(quiet=True))
    assert resumed.env_steps == 60 and len(resumed.buffer) == 60
    resumed.train()
    assert resumed.env_steps == 80

    cli("eval", str(run), "--episodes", "2", "--num-envs", "2")
    cli("export", str(run))
    meta = json.loads((run / "export" / "policy.json").read_text())
    assert [i["key"] for i in meta["images"]] == ["front.rgb"]
    assert meta["provenance"]["trained_by"] == "train-pixels"


@pytest.mark.slow
def test_fine_tuning_a_student_starts_from_it_and_trains_the_critics_first(tmp_path):
    student_cfg = PixelDistillConfig(task="push", action_steps=2, policy_iterations=0,
                                     action_batch=8, out=tmp_path / "s.pt", policy=SMALL,
                                     inputs=PixelInputs(cameras=("front",), size=24),
                                     dagger=DaggerConfig(iterations=1, num_envs=2, rollout_steps=4,
                                                         grad_steps=2, batch_size=8,
                                                         eval_episodes=0, progress=False))
    distill_pixels(student_cfg, Console(quiet=True))
    student, _ = load_pixel_student(tmp_path / "s.pt")
    # flags naming other inputs give way to the student's
    cfg = _tiny(tmp_path, student=tmp_path / "s.pt",
                inputs=PixelInputs(cameras=("front", "wrist"), size=32), critic_warmup=10_000)
    runner = PixelRunner(cfg, Console(quiet=True))
    assert runner.cfg.inputs.cameras == ("front",) and runner.cfg.inputs.size == 24
    critic = _params(runner.agent.critic)
    runner.train()
    assert runner.agent.updates > 0 and _changed(critic, runner.agent.critic)
    for a, b in zip(student.state_dict().values(), runner.agent.policy.state_dict().values(),
                    strict=True):
        assert torch.equal(a, b)  # the actor waits for the critics
    assert runner._gate() is False  # and so does the gate (safety "both")
    with pytest.raises(ConfigError, match="trained on 'push'"):
        PixelRunner(_tiny(tmp_path, task="lift", student=tmp_path / "s.pt", run_name="x"))
