"""The built-in arms beside arm7: ur6 (6-DoF, UR5e-like) and so5 (5-DoF, SO-101-like). Their
published figures, every task's scripted expert on each (lift where there is a gripper), the
tasks laid out for each arm's reach, and the pose-target controllers with 5 and 6 joints."""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np
import pytest
import torch

from robot_rl.controllers import DiffIKConfig, EEDeltaConfig, OSCConfig
from robot_rl.errors import ConfigError
from robot_rl.robots import get_robot, list_robots
from robot_rl.sim import make_env, make_task_config
from robot_rl.sim.scene import SceneBuilder


def test_the_arms_have_their_published_figures() -> None:
    assert {"arm7", "ur6", "so5"} <= set(list_robots())
    ur, so = get_robot("ur6"), get_robot("so5")
    assert ur.joint_names == ("shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint",
                              "wrist_1_joint", "wrist_2_joint", "wrist_3_joint")
    assert ur.tau_max == (150.0,) * 3 + (28.0,) * 3 and ur.gripper is None
    assert ur.q_max[2] == pytest.approx(np.pi, abs=1e-4) and ur.q_max[0] == pytest.approx(
        2 * np.pi, abs=1e-4)
    assert so.joint_names == ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex",
                              "wrist_roll")
    assert so.gripper is not None and so.q_max[0] == pytest.approx(1.92, abs=1e-2)
    # (arm, a pose stretching it out along +x, its reach to the tool [m], its mass with the
    # base [kg]); ur6: UR's 0.85 m to the flange, in the plane with its 0.233 m of side
    # offset, and the 10 cm rod; UR's link masses (17.7 kg), a 4 kg base and the 0.1 kg rod
    for robot, stretched, reach, mass in ((ur, (0.0,) * 6, 0.882, 21.8),
                                          (so, (0.0, 1.5708, -1.5708, 0.0, 0.0), 0.431, 0.8)):
        model = SceneBuilder(robot, 0.002).compile()
        robot.validate(model)
        assert model.body_subtreemass[model.body(robot.root_body).id] == pytest.approx(
            mass, abs=0.05)
        data = mujoco.MjData(model)
        q = [model.joint(n).qposadr[0] for n in robot.joint_names]
        data.qpos[q] = robot.home
        mujoco.mj_kinematics(model, data)
        # at home the tool points straight down
        assert data.site(robot.ee_site).xmat.reshape(3, 3)[:, 2] == pytest.approx(
            [0, 0, -1], abs=1e-3)
        # stretched out, the tool is its reach away
        data.qpos[q] = stretched
        mujoco.mj_kinematics(model, data)
        assert np.linalg.norm(data.site(robot.ee_site).xpos[:2]) == pytest.approx(reach,
                                                                                   abs=0.01)


def _expert_success(task: str, robot: str, n: int = 16) -> float:
    env = make_env(task, n, robot=robot, seed=0)
    env.reset(seed=0)
    succeeded = torch.zeros(n, dtype=torch.bool)
    for _ in range(env.max_episode_length):
        *_, info = env.step(env.expert_action())
        succeeded |= info["success"]
    return succeeded.float().mean().item()


@pytest.mark.parametrize(("task", "robot", "least"), [
    ("reach", "ur6", 1.0), ("push", "ur6", 0.9),
    ("reach", "so5", 0.8), ("push", "so5", 0.8), ("lift", "so5", 0.7),
])
def test_every_tasks_expert_works_on_every_arm(task: str, robot: str, least: float) -> None:
    assert _expert_success(task, robot) >= least


def test_a_task_an_arm_has_no_layout_for_is_refused() -> None:
    with pytest.raises(ConfigError, match="robot 'so5' lays out reach, push, lift for its "
                                          "reach; task 'reach_hazard' has no layout"):
        make_task_config("reach_hazard", robot="so5")


def test_lift_needs_a_gripper() -> None:
    with pytest.raises(ConfigError, match="'lift' grasps, and robot 'ur6' has no gripper; "
                                          "arms with one: arm7, so5"):
        make_env("lift", 1, robot="ur6")


def test_tasks_are_laid_out_for_the_arms_reach() -> None:
    arm7, so5 = make_task_config("reach"), make_task_config("reach", robot="so5")
    assert arm7.target_hi[0] == 0.7 and so5.target_hi[0] == 0.3  # type: ignore[attr-defined]
    assert so5.safety.workspace_lo[0] == 0.05 and arm7.safety.workspace_lo[0] == 0.1
    # the layout is a default: a field given beside it wins
    given = make_task_config("reach", robot="so5", target_hi=(0.25, 0.1, 0.2))
    assert given.target_hi == (0.25, 0.1, 0.2)  # type: ignore[attr-defined]
    # ur6 has arm7's reach: the same layout
    assert make_task_config("push", robot="ur6") == dataclasses.replace(
        make_task_config("push"), robot="ur6")


@pytest.mark.parametrize("robot", ["ur6", "so5"])
@pytest.mark.parametrize("controller", [OSCConfig(), DiffIKConfig()], ids=["osc", "diff_ik"])
def test_pose_targets_move_the_hand_with_5_and_6_joints(robot: str, controller: object) -> None:
    """An end-effector action along +x moves the hand along +x with either controller; with
    five joints the rotation it cannot make is left undone, never a NaN."""
    env = make_env("reach", 2, robot=robot, action=EEDeltaConfig(), controller=controller)
    env.reset(seed=0)
    start = env.state.sensors["ee_pos"].clone()
    action = torch.zeros(2, env.act_dim)
    action[:, 0] = 0.5  # +x
    action[1, 3:6] = 1.0  # and a turn about every axis
    for _ in range(25):
        obs, *_ = env.step(action)
        assert torch.isfinite(obs).all()
    moved = env.state.sensors["ee_pos"] - start
    assert (moved[:, 0] > 0.03).all(), moved
    assert moved[0, 1:].abs().max() < 0.5 * moved[0, 0]


def test_so5s_declared_mirror_is_its_kinematics() -> None:
    """home + mirror * (q - home) puts the hand at (x, -y, z) where q puts it at (x, y, z)."""
    robot = get_robot("so5")
    assert robot.mirror is not None
    model = SceneBuilder(robot, 0.002).compile()
    data = mujoco.MjData(model)
    adr = [model.joint(n).qposadr[0] for n in robot.joint_names]
    home, sign = np.asarray(robot.home), np.asarray(robot.mirror)
    rng = np.random.default_rng(0)
    flip = np.diag([1.0, -1.0, 1.0])
    for _ in range(50):
        q = rng.uniform(robot.q_min, robot.q_max)
        pos, rot = [], []
        for qq in (q, home + sign * (q - home)):
            data.qpos[adr] = qq
            mujoco.mj_kinematics(model, data)
            pos.append(data.site(robot.ee_site).xpos.copy())
            rot.append(data.site(robot.ee_site).xmat.reshape(3, 3).copy())
        assert pos[1] == pytest.approx(pos[0] * [1, -1, 1], abs=1e-9)
        # the orientation mirrored too, S R S (wrist_roll's sign shows only here: the hand
        # site lies on its axis)
        assert rot[1] == pytest.approx(flip @ rot[0] @ flip, abs=1e-9)


def test_a_recording_on_another_arm_replays_on_that_arm(tmp_path) -> None:
    from robot_rl.data import Dataset
    from robot_rl.recording.config import RecordConfig
    from robot_rl.recording.record import record
    from robot_rl.recording.sim_replay import replay_episode

    out = tmp_path / "so5_push"
    record(RecordConfig(task="push", robot="so5", teleop="expert", episodes=1,
                        episode_length=60, out=out, progress=False))
    ds = Dataset(out)
    assert ds.spec is not None and ds.spec.robot_type == "so5" and ds.spec.env["robot"] == "so5"
    r = replay_episode(ds, 0)
    assert r.max_obs_error < 1e-6 and r.max_joint_error < 1e-6  # float32 in the dataset


def test_pixel_distillation_and_recording_take_the_arm() -> None:
    from robot_rl.distill.configs import PixelDistillConfig
    from robot_rl.distill.pixels import make_teacher
    from robot_rl.recording.record import named_action

    _, task_cfg = make_teacher(PixelDistillConfig(task="push", robot="so5"))
    assert task_cfg.robot == "so5" and task_cfg == make_task_config("push", robot="so5")
    # push's end-effector target box is laid out for arm7's reach
    assert named_action("push", "ee-position", True) is not None
    with pytest.raises(ConfigError, match="lays the task out for its own"):
        named_action("push", "ee-position", True, "so5")
