"""The joint PD law in the physics equals its torch form; action-space mappings."""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np
import pytest
import torch

from robot_rl.controllers import (
    ArmState,
    EEDelta,
    EEDeltaConfig,
    EEPose,
    EEPoseConfig,
    JointDelta,
    JointDeltaConfig,
    JointTorque,
    JointTorqueConfig,
    JointVelocity,
    JointVelocityConfig,
    pd_torque,
    realize_pd_in_model,
)
from robot_rl.errors import ConfigError
from robot_rl.sim import get_robot
from robot_rl.sim.scene import SceneBuilder


def _model(pd: bool) -> mujoco.MjModel:
    robot = get_robot("arm7")
    scene = SceneBuilder(robot, 0.002)
    if pd:
        realize_pd_in_model(scene.spec, robot.actuator_names, robot.kp, robot.kd, robot.q_min,
                            robot.q_max, robot.tau_max)
    return scene.compile()


def test_pd_in_physics_matches_the_torch_law() -> None:
    """Drive one arm by MuJoCo's affine actuator, another by torch torques every substep.

    With the Euler integrator both are explicit, so they agree to rounding; with the
    implicit-fast integrator used for training, the damping is integrated implicitly, which
    changes the trajectory only slightly.
    """
    robot = get_robot("arm7")
    kp, kd, tau = (torch.tensor(x, dtype=torch.float64) for x in (robot.kp, robot.kd,
                                                                 robot.tau_max))
    target = torch.tensor(robot.home, dtype=torch.float64) + torch.tensor(
        [0.3, -0.2, 0.25, 0.3, -0.4, 0.3, 0.5], dtype=torch.float64)
    for integrator, tol in ((mujoco.mjtIntegrator.mjINT_EULER, 1e-9),
                            (mujoco.mjtIntegrator.mjINT_IMPLICITFAST, 5e-3)):
        m_pd, m_tq = _model(pd=True), _model(pd=False)
        for m in (m_pd, m_tq):
            m.opt.integrator = integrator
        d_pd, d_tq = mujoco.MjData(m_pd), mujoco.MjData(m_tq)
        for d in (d_pd, d_tq):
            d.qpos[:7] = robot.home
        d_pd.ctrl[:7] = target.numpy()
        for _ in range(300):  # 0.6 s
            q, qd = torch.from_numpy(d_tq.qpos[:7].copy()), torch.from_numpy(d_tq.qvel[:7].copy())
            d_tq.ctrl[:7] = pd_torque(q, qd, target, kp, kd, tau).numpy()
            mujoco.mj_step(m_pd, d_pd)
            mujoco.mj_step(m_tq, d_tq)
        np.testing.assert_allclose(d_pd.qpos[:7], d_tq.qpos[:7], atol=tol)
        np.testing.assert_allclose(d_pd.qpos[:7], target.numpy(), atol=0.02)  # it tracks


def test_pd_torque_clamps_to_limits() -> None:
    tau = pd_torque(torch.zeros(2), torch.zeros(2), torch.tensor([10.0, -10.0]),
                    torch.tensor([100.0, 100.0]), torch.ones(2), torch.tensor([87.0, 12.0]))
    assert tau.tolist() == [87.0, -12.0]


def _arm_state(q: torch.Tensor) -> ArmState:
    e, n = q.shape
    return ArmState(q=q, qd=torch.zeros_like(q), ee_pos=torch.zeros(e, 3, dtype=q.dtype),
                    ee_rot=torch.eye(3, dtype=q.dtype).expand(e, 3, 3),
                    jac=torch.zeros(e, 6, n, dtype=q.dtype))


@pytest.mark.slow
def test_joint_delta_targets() -> None:
    robot = get_robot("arm7")
    space = JointDelta(JointDeltaConfig(scale=0.1, gripper=True), robot)
    space.bind(_model(pd=True))
    assert space.dim == 8 and space.kind == "joint"
    q = torch.tensor([robot.home, robot.q_max], dtype=torch.float64)
    a = torch.tensor([[0.5] * 7 + [-1.0], [1.0] * 7 + [1.0]], dtype=torch.float64)
    t = space(a, _arm_state(q))
    torch.testing.assert_close(t.joint[0], q[0] + 0.05)
    torch.testing.assert_close(t.joint[1], q[1])  # clamped at the upper limit
    assert t.gripper[0, 0] == robot.gripper.open_ctrl
    assert t.gripper[1, 0] == robot.gripper.closed_ctrl


def test_joint_torque_spans_the_control_range() -> None:
    robot = get_robot("arm7")
    space = JointTorque(JointTorqueConfig(), robot)
    space.bind(_model(pd=False))
    q = torch.zeros(3, 7, dtype=torch.float64)
    a = torch.stack([torch.full((7,), v, dtype=torch.float64) for v in (-1.0, 0.0, 1.0)])
    t = space(a, _arm_state(q))
    tau = torch.tensor(robot.tau_max, dtype=torch.float64)
    assert t.kind == "torque"
    torch.testing.assert_close(t.joint, torch.stack([-tau, torch.zeros(7, dtype=torch.float64),
                                                     tau]))


def test_joint_velocity_integrates_a_clamped_reference() -> None:
    robot = get_robot("arm7")
    space = JointVelocity(JointVelocityConfig(scale=1.0, max_lead=0.05, gripper=False), robot,
                          control_dt=0.02)
    q = torch.tensor([robot.home], dtype=torch.float64)
    s = _arm_state(q)
    space.reset(torch.tensor([0]), q)
    a = torch.ones(1, 7, dtype=torch.float64)
    first = space(a, s).joint.clone()
    torch.testing.assert_close(first, q + 0.02)
    for _ in range(10):  # the arm does not move: the reference stops max_lead ahead
        last = space(a, s).joint
    torch.testing.assert_close(last, q + 0.05)


def test_ee_delta_and_pose_targets() -> None:
    robot = get_robot("arm7")
    q = torch.tensor([robot.home], dtype=torch.float64)
    s = _arm_state(q)
    s.ee_pos = torch.tensor([[0.5, 0.0, 0.3]], dtype=torch.float64)
    delta = EEDelta(EEDeltaConfig(pos_scale=0.05, rot_scale=0.3, gripper=False), robot)
    a = torch.tensor([[1.0, -1.0, 0.0, 0.0, 0.0, 1.0]], dtype=torch.float64)
    t = delta(a, s)
    torch.testing.assert_close(t.pos, torch.tensor([[0.55, -0.05, 0.3]], dtype=torch.float64))
    c, sn = np.cos(0.3), np.sin(0.3)  # 0.3 rad about world z
    torch.testing.assert_close(t.rot[0], torch.tensor([[c, -sn, 0], [sn, c, 0], [0, 0, 1]],
                                                      dtype=torch.float64))
    pose = EEPose(EEPoseConfig(lo=(0.2, -0.4, 0.0), hi=(0.8, 0.4, 0.6), gripper=False), robot)
    pose.bind(_model(pd=True))
    t = pose(torch.tensor([[-1.0, 1.0, 0.0, 0, 0, 0]], dtype=torch.float64), s)
    torch.testing.assert_close(t.pos, torch.tensor([[0.2, 0.4, 0.3]], dtype=torch.float64))
    hold = pose.hold(s)
    torch.testing.assert_close(hold.pos, s.ee_pos)


def test_ee_delta_clips_targets_into_its_box_and_holds_where_the_arm_is() -> None:
    robot = get_robot("arm7")
    s = _arm_state(torch.tensor([robot.home], dtype=torch.float64))
    s.ee_pos = torch.tensor([[0.5, 0.0, 0.03]], dtype=torch.float64)  # below the box's floor
    cfg = EEDeltaConfig(pos_scale=0.05, rotation=False, gripper=False,
                        box_lo=(0.3, -0.2, 0.025), box_hi=(0.52, 0.2, 0.4))
    space = EEDelta(cfg, robot)
    a = torch.tensor([[1.0, -1.0, -1.0], [-1.0, 0.5, 1.0]], dtype=torch.float64)
    s2 = _arm_state(torch.tensor([robot.home] * 2, dtype=torch.float64))
    s2.ee_pos = torch.tensor([[0.5, 0.0, 0.03], [0.5, 0.0, 0.03]], dtype=torch.float64)
    want = [[0.52, -0.05, 0.025], [0.45, 0.025, 0.08]]  # x to the box, z to its floor
    torch.testing.assert_close(space(a, s2).pos, torch.tensor(want, dtype=torch.float64))
    np.testing.assert_allclose(space(a.numpy(), s2.numpy()).pos, want)  # the numpy path
    # the hold pose is where the arm is, even outside the box
    torch.testing.assert_close(space.hold(s).pos, s.ee_pos)
    no_box = EEDelta(dataclasses.replace(cfg, box_lo=None, box_hi=None), robot)
    torch.testing.assert_close(no_box(a, s2).pos[0], torch.tensor([0.55, -0.05, -0.02],
                                                                   dtype=torch.float64))
    for lo, hi in (((0.3, -0.2, 0.025), None), ((0.3, 0.2, 0.025), (0.52, 0.2, 0.4))):
        with pytest.raises(ConfigError, match="target box"):
            EEDelta(dataclasses.replace(cfg, box_lo=lo, box_hi=hi), robot)
