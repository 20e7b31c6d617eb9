"""The joint PD law in the physics equals its torch form; action-space mappings."""

from __future__ import annotations

import mujoco
import numpy as np
import torch

from robot_rl.controllers import (
    JointDelta,
    JointDeltaConfig,
    JointTorque,
    JointTorqueConfig,
    pd_torque,
    realize_pd_in_model,
)
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


def test_joint_delta_targets() -> None:
    robot = get_robot("arm7")
    space = JointDelta(JointDeltaConfig(scale=0.1, gripper=True), robot)
    model = _model(pd=True)
    space.bind(model, torch.device("cpu"), torch.float64)
    assert space.dim == 8 and len(space.actuator_ids) == 8
    q = torch.tensor([robot.home, robot.q_max], dtype=torch.float64)
    a = torch.tensor([[0.5] * 7 + [-1.0], [1.0] * 7 + [1.0]])
    ctrl = space(a, q)
    torch.testing.assert_close(ctrl[0, :7], q[0] + 0.05)
    torch.testing.assert_close(ctrl[1, :7], q[1])  # clamped at the upper limit
    assert ctrl[0, 7] == robot.gripper.open_ctrl and ctrl[1, 7] == robot.gripper.closed_ctrl


def test_joint_torque_spans_the_control_range() -> None:
    robot = get_robot("arm7")
    space = JointTorque(JointTorqueConfig(), robot)
    space.bind(_model(pd=False), torch.device("cpu"), torch.float64)
    q = torch.zeros(3, 7, dtype=torch.float64)
    ctrl = space(torch.stack([torch.full((7,), v) for v in (-1.0, 0.0, 1.0)]), q)
    tau = torch.tensor(robot.tau_max, dtype=torch.float64)
    torch.testing.assert_close(ctrl, torch.stack([-tau, torch.zeros(7, dtype=torch.float64),
                                                  tau]))
