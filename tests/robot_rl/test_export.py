"""The deploy artifact: ONNX, TorchScript and torch agree; bad artifacts refuse to load;
``load_policy`` needs no training code."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from robot_rl.algos import SAC
from robot_rl.algos.configs import SACConfig, SafetyConfig
from robot_rl.distill import teacher_policy
from robot_rl.export import ArtifactError, load_policy
from robot_rl.export.artifact import artifact_meta, export_artifact
from robot_rl.export.modules import DeployCost, DeployPolicy, ObsNorm, student_net
from robot_rl.sim import make_env


@pytest.fixture(scope="module")
def artifact(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, DeployPolicy, DeployCost]:
    torch.manual_seed(0)
    env = make_env("reach_hazard", 1)
    agent = SAC(env.obs_dim, env.act_dim, SACConfig(gamma=0.97, actor_hidden=(32, 32)),
                SafetyConfig(mode="gate", hidden=(32, 32), num_critics=3))
    agent.observe(torch.randn(256, env.obs_dim) * 3 + 1)  # non-trivial normalization
    teacher = teacher_policy(agent)
    student = DeployPolicy(ObsNorm(teacher.norm.mean, teacher.norm.std, teacher.norm.clip),
                           student_net(env.obs_dim, env.act_dim, (16, 16))).eval()
    assert agent.cost_critic is not None
    cost = DeployCost(teacher.norm, agent.cost_critic.q, 1.0).eval()
    safety = {"mode": "gate", "threshold": 0.5, "candidates": 6, "candidate_noise": 0.3,
              "fallback": "least_cost", "pessimism": 1.0, "gamma": 0.9}
    meta = artifact_meta(env, student, safety, {"test": True})
    out = export_artifact(tmp_path_factory.mktemp("art") / "export", student, meta, cost=cost)
    return out, student, cost


def test_onnx_torchscript_and_torch_agree(artifact):
    out, student, cost = artifact
    assert {p.name for p in out.iterdir()} == {"policy.onnx", "policy.pt", "policy.json",
                                               "cost_critic.onnx", "cost_critic.pt"}
    rng = np.random.default_rng(1)
    obs = rng.normal(size=(32, student.norm.mean.shape[0])).astype(np.float32) * 3
    with torch.no_grad():
        ref = student(torch.from_numpy(obs)).numpy()
    for backend in ("onnx", "torchscript"):
        policy = load_policy(out, backend=backend)
        assert policy.backend == backend
        np.testing.assert_allclose(policy(obs), ref, atol=1e-5)
        for i in (3, 4, 3):  # one sample at a time: the pre-bound buffers are reused
            np.testing.assert_allclose(policy(obs[i]), ref[i], atol=1e-5)
        one = policy(obs[5])
        policy(obs[6])
        np.testing.assert_allclose(one, ref[5], atol=1e-5)  # results are not overwritten
        acts = rng.uniform(-1, 1, size=(5, policy.act_dim)).astype(np.float32)
        with torch.no_grad():
            ref_c = cost(torch.from_numpy(np.repeat(obs[:1], 5, 0)),
                         torch.from_numpy(acts)).numpy()
        np.testing.assert_allclose(policy.cost(obs[0], acts), ref_c, atol=1e-5, rtol=1e-5)


def test_metadata_describes_the_deploy_contract(artifact):
    out, _, _ = artifact
    meta = json.loads((out / "policy.json").read_text())
    env = make_env("reach_hazard", 1)
    assert meta["observation"]["dim"] == env.obs_dim
    assert [t["name"] for t in meta["observation"]["layout"]] == [n for n, _ in env.obs_layout]
    assert meta["robot"]["joint_names"] == list(env.robot.joint_names)
    assert meta["action"]["space"]["type"] == "joint_delta"
    assert meta["control"]["rate_hz"] == pytest.approx(50.0)
    assert meta["safety"]["threshold"] == 0.5
    assert meta["safety"]["cost_critic"]["onnx"] == "cost_critic.onnx"
    assert len(meta["observation"]["normalization"]["mean"]) == env.obs_dim


def test_safe_action_goes_through_the_gate(artifact):
    out, _, _ = artifact
    policy = load_policy(out)
    obs = np.zeros(policy.obs_dim, np.float32)
    a, hold, rejected = policy.safe_action(obs)
    assert a.shape == (policy.act_dim,) and not hold
    costs = policy.cost(obs, a[None])
    assert rejected == bool(costs[0] > policy.threshold) or not rejected
    policy.threshold = -1e9  # nothing is safe: least-cost fallback, flagged as rejected
    policy._gate = None
    a2, hold2, rejected2 = policy.safe_action(obs)
    assert rejected2 and not hold2 and np.all(np.abs(a2) <= 1.0)


def test_mismatched_or_broken_artifacts_refuse_to_load(artifact, tmp_path):
    out, _, _ = artifact
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(out, bad)
    meta = json.loads((bad / "policy.json").read_text())
    meta["observation"]["dim"] += 1
    meta["observation"]["layout"].append({"name": "extra", "width": 1})
    (bad / "policy.json").write_text(json.dumps(meta))
    for backend in ("onnx", "torchscript"):
        with pytest.raises(ArtifactError, match="do not match|does not accept"):
            load_policy(bad, backend=backend)
    meta["observation"]["dim"] -= 1
    meta["observation"]["layout"].pop()
    meta["action"]["dim"] = 3
    (bad / "policy.json").write_text(json.dumps(meta))
    for backend in ("onnx", "torchscript"):
        with pytest.raises(ArtifactError, match="action dim"):
            load_policy(bad, backend=backend)
    (bad / "policy.onnx").write_bytes(b"garbage")
    meta["action"]["dim"] = 7
    (bad / "policy.json").write_text(json.dumps(meta))
    with pytest.raises(ArtifactError, match="cannot load"):
        load_policy(bad)
    with pytest.raises(ArtifactError, match="no policy.json"):
        load_policy(tmp_path)


@pytest.mark.slow
def test_load_policy_imports_no_training_code(artifact):
    out, _, _ = artifact
    code = f"""
import sys
import numpy as np
from robot_rl.export import load_policy
p = load_policy({str(out)!r})
a = p(np.zeros(p.obs_dim, np.float32))
print("torch" in sys.modules)  # the bare ONNX policy does not even need torch
a2, hold, rejected = p.safe_action(np.zeros(p.obs_dim, np.float32))
assert a.shape == (p.act_dim,)
# the safety critic's gate (robot_rl.algos.gate) is deploy code; the learners are not
training = [m for m in sys.modules if m.startswith(("robot_rl.algos.", "robot_rl.runner",
            "robot_rl.replay", "robot_rl.distill", "robot_rl.export.artifact", "robot_rl.nets"))
            and m != "robot_rl.algos.gate"]
assert not training, training
"""
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "False"
