"""Mirror images of transitions (robot_rl/sim/mirror.py) and of demonstrations
(robot_rl/data/mirror.py, ``robot-rl bc --mirror``), and the learners' ``--mirror``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
import pytest
import torch
from rich.console import Console

from robot_rl.algos.configs import SACConfig
from robot_rl.data.format import DatasetSpec
from robot_rl.data.mirror import EPISODE_OFFSET, mirror_signs, with_mirror_images
from robot_rl.data.reader import Dataset
from robot_rl.errors import ConfigError
from robot_rl.replay import Batch
from robot_rl.robots import get_robot
from robot_rl.sim.mirror import MirrorSigns, action_signs

S = np.diag([1.0, -1.0, 1.0])


def test_arm7s_mirror_signs_are_its_kinematics() -> None:
    robot = get_robot("arm7")
    assert robot.mirror is not None
    model = mujoco.MjModel.from_xml_path(str(robot.mjcf))
    data = mujoco.MjData(model)
    home, signs = np.asarray(robot.home), np.asarray(robot.mirror)
    rng = np.random.default_rng(0)
    for _ in range(200):
        dq = rng.uniform(-0.6, 0.6, robot.num_joints)
        poses = []
        for q in (home + dq, home + signs * dq):
            data.qpos[:robot.num_joints] = q
            mujoco.mj_kinematics(model, data)
            site = data.site(robot.ee_site)
            poses.append((site.xpos.copy(), site.xmat.reshape(3, 3).copy()))
        (p, r), (pm, rm) = poses
        np.testing.assert_allclose(pm, S @ p, atol=1e-12)
        # about the tool axis to 0.8 mrad: home's joint 7 is 0.785, the hand's turn pi/4
        np.testing.assert_allclose(rm, S @ r @ S, atol=1e-3)
        np.testing.assert_allclose(rm[:, 2], (S @ r @ S)[:, 2], atol=1e-12)
    # a wrong sign is caught: joint 2 does not change sign
    data.qpos[:robot.num_joints] = home + np.eye(robot.num_joints)[1] * 0.3
    mujoco.mj_kinematics(model, data)
    p = data.site(robot.ee_site).xpos.copy()
    data.qpos[:robot.num_joints] = home - np.eye(robot.num_joints)[1] * 0.3
    mujoco.mj_kinematics(model, data)
    assert np.abs(data.site(robot.ee_site).xpos - S @ p).max() > 0.01


def _push_spec(action_space: dict, obs_names: tuple[str, ...] | None = None,
               task: str = "push", robot: str = "arm7") -> DatasetSpec:
    names = obs_names or tuple(
        f"{term}.{i}" for term, width in (("joint_pos", 7), ("joint_vel", 7), ("ee_pos", 3),
                                          ("puck_pos", 3), ("goal", 2), ("ee_to_puck", 3),
                                          ("puck_to_goal", 2), ("last_action", 3))
        for i in range(width))
    return DatasetSpec(fps=50.0, robot_type=robot, task=task, task_text="", obs_names=names,
                       action_names=(), action_space=action_space, joint_names=())


EE_POSITION = {"type": "ee_delta", "rotation": False, "gripper": False, "box_lo": None,
               "box_hi": None}


def test_the_signs_of_push_in_end_effector_positions() -> None:
    signs = mirror_signs(_push_spec(EE_POSITION))
    joints = [-1, 1, -1, 1, -1, 1, -1]
    y3, y2 = [1, -1, 1], [1, -1]
    np.testing.assert_array_equal(signs.obs, joints + joints + y3 + y3 + y2 + y3 + y2 + y3)
    np.testing.assert_array_equal(signs.action, y3)


def test_the_signs_of_each_action_space() -> None:
    arm = get_robot("arm7")
    joints = [-1, 1, -1, 1, -1, 1, -1]
    assert action_signs({"type": "joint_delta", "gripper": True}, arm).tolist() == joints + [1]
    assert action_signs({"type": "joint_delta", "gripper": False}, arm).tolist() == joints
    assert action_signs({"type": "ee_delta", "rotation": True, "gripper": True}, arm
                        ).tolist() == [1, -1, 1, -1, 1, -1, 1]
    assert action_signs({"type": "ee_pose", "lo": (0.2, -0.4, 0.0), "hi": (0.8, 0.4, 0.5),
                         "rotation": False, "gripper": False}, arm).tolist() == [1, -1, 1]
    with pytest.raises(ConfigError, match="centred on y = 0"):
        action_signs({"type": "ee_pose", "lo": (0.2, -0.3, 0.0), "hi": (0.8, 0.4, 0.5)}, arm)


def test_what_has_no_mirror_image_is_refused() -> None:
    with pytest.raises(ConfigError, match="task 'reach' declares no mirror"):
        mirror_signs(_push_spec(EE_POSITION, task="reach"))
    with pytest.raises(ConfigError, match="robot 'pusher' declares no mirror"):
        mirror_signs(_push_spec({"type": "joint_delta", "gripper": False}, robot="pusher"))
    with pytest.raises(ConfigError, match="no mirror image of its observation term 'cube'"):
        mirror_signs(_push_spec(EE_POSITION, obs_names=("goal.0", "goal.1", "cube.0")))
    with pytest.raises(ConfigError, match="'goal' has 2 signs, the observation 3"):
        mirror_signs(_push_spec(EE_POSITION, obs_names=("goal.0", "goal.1", "goal.2")))


def test_every_episode_comes_twice() -> None:
    frames = {"observation.state": np.arange(6, dtype=np.float32).reshape(3, 2),
              "action": np.ones((3, 1), np.float32), "episode_index": np.array([0, 0, 4])}
    signs = MirrorSigns(np.array([1.0, -1.0], np.float32), np.array([-1.0], np.float32))
    out = with_mirror_images(frames, signs)
    np.testing.assert_array_equal(out["observation.state"][3:], [[0, -1], [2, -3], [4, -5]])
    np.testing.assert_array_equal(out["action"][:, 0], [1, 1, 1, -1, -1, -1])
    assert out["episode_index"].tolist() == [0, 0, 4, EPISODE_OFFSET, EPISODE_OFFSET,
                                             EPISODE_OFFSET + 4]


def _mirror_twin(env: Any, seed: int) -> tuple[Any, torch.Tensor]:
    """Reset a 2-env ``env`` and put env 1 in env 0's state with the arm's joints mirrored
    (the task's objects are the caller's to mirror); returns the state and its qpos."""
    st, robot = env.state, env.state.robot
    env.reset(seed=seed)
    home = torch.as_tensor(robot.home, dtype=st.dtype)
    signs = torch.as_tensor(robot.mirror, dtype=st.dtype)
    qpos, qvel = st.backend.qpos, st.backend.qvel
    qpos[1], qvel[1] = qpos[0], qvel[0]
    st.set_joint_pos(torch.tensor([1]), (home + signs * (st.joint_pos[0] - home))[None])
    return st, qpos


def test_a_mirrored_push_episode_is_an_episode_of_push() -> None:
    """The signs against the physics: one env runs the expert, a second starts from the
    mirror image of its state and takes the mirror images of its actions; its
    observations stay the mirror images of the first's."""
    from robot_rl.recording.record import named_action
    from robot_rl.sim import make_env

    action = named_action("push", "ee-position")
    env = make_env("push", 2, seed=3, nthread=1, action=action, episode_length=200)
    signs = mirror_signs(_push_spec(EE_POSITION))
    st, qpos = _mirror_twin(env, seed=3)
    puck = st.qpos_slice("puck_joint")
    qpos[1, puck.start + 1] *= -1
    st.buffers["goal"][1] = st.buffers["goal"][0] * torch.tensor([1.0, -1.0, 1.0])
    st.backend.mocap_pos[1] = st.buffers["goal"][1].to(st.backend.mocap_pos.dtype)
    st.backend.forward(torch.arange(2))
    obs = env.observe(noise=False).numpy()
    np.testing.assert_allclose(obs[1], obs[0] * signs.obs, atol=1e-6)
    worst = np.zeros(env.obs_dim)
    for _ in range(150):
        a = env.expert_action()[:1]
        obs_t, *_ = env.step(torch.cat([a, a * torch.as_tensor(signs.action)]))
        o = obs_t.numpy()
        worst = np.maximum(worst, np.abs(o[1] - o[0] * signs.obs))
    assert float(np.linalg.norm(o[0, 17:19] - obs[0, 17:19])) > 0.02  # the puck was pushed
    # contact is not bit-symmetric: 2 mm on the puck, 0.04 rad/s on a joint while pushing
    velocity = np.zeros(env.obs_dim, dtype=bool)
    velocity[7:14] = True
    assert worst[~velocity].max() < 5e-3 and worst[velocity].max() < 0.1


def test_a_mirrored_lift_episode_is_an_episode_of_lift() -> None:
    """As push's, for lift in its own joint-delta actions with the gripper: the cube's
    position and yaw mirrored, the expert grasps and lifts it in both envs."""
    from robot_rl.sim import make_env
    from robot_rl.sim.mirror import env_mirror_signs

    env = make_env("lift", 2, seed=5, nthread=1, episode_length=200)
    signs = env_mirror_signs(env)
    layout = dict(env.obs_layout)
    assert layout["gripper"] == 2 and signs.action.tolist() == [-1, 1, -1, 1, -1, 1, -1, 1]
    st, qpos = _mirror_twin(env, seed=5)
    cube = st.qpos_slice("cube_joint")
    qpos[1, cube] = qpos[0, cube] * torch.tensor([1.0, -1.0, 1.0, 1.0, -1.0, 1.0, -1.0],
                                                 dtype=qpos.dtype)
    assert abs(float(qpos[0, cube.start + 1])) > 0.01  # off the mirror plane
    st.backend.forward(torch.arange(2))
    obs = env.observe(noise=False).numpy()
    np.testing.assert_allclose(obs[1], obs[0] * signs.obs, atol=1e-6)
    worst, lifted = np.zeros(env.obs_dim), np.zeros(2, dtype=bool)
    for _ in range(150):
        a = env.expert_action()[:1]
        obs_t, *_, info = env.step(torch.cat([a, a * torch.as_tensor(signs.action)]))
        o = obs_t.numpy()
        worst = np.maximum(worst, np.abs(o[1] - o[0] * signs.obs))
        lifted |= info["success"].numpy().astype(bool)
    assert lifted.all()  # both grasped and lifted the cube
    velocity = np.zeros(env.obs_dim, dtype=bool)
    velocity[7:14] = True
    assert worst[~velocity].max() < 5e-3 and worst[velocity].max() < 0.1


def test_mirror_half_replaces_about_half_the_transitions_by_their_images() -> None:
    from robot_rl.replay import mirror_half

    g = torch.Generator().manual_seed(0)
    batch = Batch(obs=torch.rand(400, 3) + 1, action=torch.rand(400, 2) + 1,
                  reward=torch.rand(400), cost=torch.rand(400), next_obs=torch.rand(400, 3) + 1,
                  terminated=torch.zeros(400))
    s_obs, s_act = torch.tensor([1.0, -1.0, -1.0]), torch.tensor([-1.0, 1.0])
    out = mirror_half(batch, s_obs, s_act, g)
    flipped = out.obs[:, 1] < 0
    assert 150 < int(flipped.sum()) < 250
    for field, s in (("obs", s_obs), ("next_obs", s_obs), ("action", s_act)):
        new, old = getattr(out, field), getattr(batch, field)
        assert torch.equal(new[flipped], old[flipped] * s)
        assert torch.equal(new[~flipped], old[~flipped])
    assert torch.equal(out.reward, batch.reward) and torch.equal(out.cost, batch.cost)
    with pytest.raises(ConfigError, match="2 observation and 2 action"):
        mirror_half(batch, s_obs[:2], s_act, g)


@pytest.mark.slow
def test_a_residual_learns_from_mirrored_transitions(tmp_path: Path) -> None:
    from robot_rl.finetune.configs import ResidualConfig
    from robot_rl.finetune.residual import ResidualRunner
    from tests.robot_rl.flow_runs import tiny_bc_runs

    tiny_bc_runs(tmp_path / "push", "push", episode_length=20, horizon=4, execute=2)
    tiny_bc_runs(tmp_path / "reach", "reach", episode_length=20, horizon=4, execute=2)

    def cfg(task: str) -> ResidualConfig:
        return ResidualConfig(policy=tmp_path / task / "bc-flow", num_envs=2,
                              runs_dir=tmp_path / "runs", run_name=task, progress=False,
                              safety="off", total_steps=80, every=1, mirror=True,
                              sac=SACConfig(actor_hidden=(8,), critic_hidden=(8,),
                                            batch_size=32, learning_starts=16))

    runner = ResidualRunner(cfg("push"), console=_quiet())
    assert runner.mirror is not None  # the flow's observation, then its action (the base's)
    signs = mirror_signs(Dataset(tmp_path / "push" / "demos").spec)
    np.testing.assert_array_equal(runner.mirror[0], np.concatenate([signs.obs, signs.action]))
    runner.train()
    assert runner.agent.updates > 0
    _assert_learns_half_mirrored(runner)
    with pytest.raises(ConfigError, match="task 'reach' declares no mirror"):
        ResidualRunner(cfg("reach"), console=_quiet())


def _assert_learns_half_mirrored(runner: Any) -> None:
    """The batch of the runner's next gradient step is the one it samples, each transition
    as it is or as its mirror image, and both occur."""
    seen: list[Batch] = []
    update = runner.agent.update

    def spy(batch: Batch, **kw: Any) -> dict[str, float]:
        seen.append(batch)
        return update(batch, **kw)

    runner.agent.update = spy
    state = runner.agent.gen.get_state()
    plain = runner.sample_batch()
    runner.agent.gen.set_state(state)
    runner.learn()
    (learned,) = seen
    s_obs, s_act = runner.mirror
    same = (learned.obs == plain.obs).all(1) & (learned.action == plain.action).all(1)
    image = (learned.obs == plain.obs * s_obs).all(1) & (
        learned.next_obs == plain.next_obs * s_obs).all(1) & (
        learned.action == plain.action * s_act).all(1)
    assert bool((same | image).all()) and 0 < int((~same).sum()) < len(plain.obs)
    assert torch.equal(learned.reward, plain.reward)


@pytest.mark.slow
def test_sac_and_rlpd_learn_from_mirrored_transitions(tmp_path: Path) -> None:
    """``--mirror`` on SAC from scratch takes its signs from the env, RLPD's equal its
    demonstrations' (the same observation); a task without the symmetry, and DSRL, whose
    actions are noise, are refused."""
    from robot_rl.finetune.configs import DSRLConfig, FinetuneConfig
    from robot_rl.finetune.runner import FinetuneRunner
    from robot_rl.recording.config import RecordConfig
    from robot_rl.recording.record import record
    from robot_rl.runner import Runner
    from robot_rl.sim import make_task_config
    from robot_rl.train_config import TrainConfig

    sac = SACConfig(actor_hidden=(8,), critic_hidden=(8,), batch_size=32, learning_starts=16)
    common: dict[str, Any] = dict(num_envs=2, runs_dir=tmp_path / "runs", progress=False,
                                  safety="off", total_steps=40, mirror=True, eval_every=10_000,
                                  eval_episodes=2, sac=sac)
    runner = Runner(TrainConfig(task="push", run_name="sac", **common), console=_quiet())
    signs = mirror_signs(_push_spec(EE_POSITION))  # push's terms, in joint deltas:
    assert torch.equal(runner.mirror[0][:14], torch.as_tensor(signs.obs[:14]))
    assert torch.equal(runner.mirror[1], torch.as_tensor([-1.0, 1, -1, 1, -1, 1, -1]))
    runner.train()
    _assert_learns_half_mirrored(runner)

    record(RecordConfig(task="push", teleop="expert", episodes=2, out=tmp_path / "demos",
                        episode_length=20, progress=False))
    rlpd = FinetuneRunner(FinetuneConfig(
        demos=tmp_path / "demos", task="push", env=make_task_config("push", episode_length=20),
        run_name="rlpd", **common), console=_quiet())
    demo = mirror_signs(Dataset(tmp_path / "demos").spec)
    assert torch.equal(rlpd.mirror[0], torch.as_tensor(demo.obs))
    rlpd.train()
    _assert_learns_half_mirrored(rlpd)

    with pytest.raises(ConfigError, match="task 'reach' declares no mirror"):
        Runner(TrainConfig(task="reach", run_name="reach", **common), console=_quiet())
    with pytest.raises(ConfigError, match="DSRL's actions are the flow's noise"):
        DSRLConfig(policy=tmp_path, mirror=True).validate()


def _quiet() -> Console:
    return Console(file=sys.stderr)
