"""OSC / Cartesian impedance: hand-computed torques on a 2-link arm, tracking in the env,
reference clamping against the table, and numpy (deploy) == torch (training)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from robot_rl.controllers import (
    ArmState,
    EEPoseConfig,
    OperationalSpace,
    OSCConfig,
    ShieldConfig,
    Targets,
    cartesian_impedance,
)
from robot_rl.controllers.ik import axis_angle_to_mat
from robot_rl.sim import get_robot, make_env

L1, L2, M1, M2 = 0.5, 0.4, 2.0, 1.5


def _two_link(q: np.ndarray, qd: np.ndarray) -> ArmState:
    """A planar 2-link arm (point masses at the link ends), J and M written out by hand."""
    s1, c1 = np.sin(q[0]), np.cos(q[0])
    s12, c12 = np.sin(q.sum()), np.cos(q.sum())
    jac = np.zeros((1, 6, 2))
    jac[0, 0] = [-L1 * s1 - L2 * s12, -L2 * s12]
    jac[0, 1] = [L1 * c1 + L2 * c12, L2 * c12]
    jac[0, 5] = [1.0, 1.0]
    c2 = np.cos(q[1])
    mass = np.array([[[M1 * L1**2 + M2 * (L1**2 + L2**2 + 2 * L1 * L2 * c2),
                       M2 * (L2**2 + L1 * L2 * c2)],
                      [M2 * (L2**2 + L1 * L2 * c2), M2 * L2**2]]])
    pos = np.array([[L1 * c1 + L2 * c12, L1 * s1 + L2 * s12, 0.0]])
    rot = axis_angle_to_mat(np.array([[0.0, 0.0, q.sum()]]))
    return ArmState(q=q[None], qd=qd[None], ee_pos=pos, ee_rot=rot, jac=jac, mass=mass)


class _TwoLinkRobot:  # the fields OperationalSpace reads
    name = "two_link"
    num_joints = 2
    home = (0.3, 0.8)
    kp = (10.0, 10.0)
    kd = (1.0, 1.0)


def _controller(cfg: OSCConfig) -> OperationalSpace:
    return OperationalSpace(cfg, _TwoLinkRobot())  # type: ignore[arg-type]


def test_cartesian_impedance_torque_by_hand() -> None:
    q, qd = np.array([0.3, 0.8]), np.array([0.2, -0.5])
    s = _two_link(q, qd)
    target = Targets("pose", pos=s.ee_pos + [[0.02, -0.01, 0.0]], rot=s.ee_rot)
    kp, kd = 800.0, 2.0 * np.sqrt(800.0)
    tau = _controller(cartesian_impedance(kp, 30.0, null_stiffness=0.0)).torque(target, s)
    j = s.jac[0]
    v = j @ qd
    force_xy = kp * np.array([0.02, -0.01]) - kd * v[:2]
    moment_z = -2.0 * np.sqrt(30.0) * v[5]
    expected = j[0:2].T @ force_xy + j[5] * moment_z
    np.testing.assert_allclose(tau[0], expected, rtol=1e-9)


def test_osc_torque_by_hand() -> None:
    """tau = J^T (J M^-1 J^T + lambda I)^-1 a with a = Kp e - Kd J qd, J and M by hand."""
    q, qd = np.array([0.4, 1.1]), np.array([0.3, -0.2])
    s = _two_link(q, qd)
    e = np.array([0.01, 0.02, 0.0])
    cfg = OSCConfig(pos_stiffness=100.0, rot_stiffness=50.0, null_stiffness=0.0,
                    singularity_damping=1e-3)
    tau = _controller(cfg).torque(Targets("pose", pos=s.ee_pos + e, rot=s.ee_rot), s)
    j, m = s.jac[0], s.mass[0]
    kp = np.array([100.0] * 3 + [50.0] * 3)
    a = kp * np.concatenate([e, np.zeros(3)]) - 2.0 * np.sqrt(kp) * (j @ qd)
    lam = np.linalg.inv(j @ np.linalg.inv(m) @ j.T + 1e-3 * np.eye(6))
    np.testing.assert_allclose(tau[0], j.T @ lam @ a, rtol=1e-9)


def test_reference_clamping_bounds_the_command() -> None:
    q, qd = np.array([0.4, 1.1]), np.zeros(2)
    s = _two_link(q, qd)
    c = _controller(cartesian_impedance(1000.0, 1e-6, null_stiffness=0.0, max_pos_error=0.05))
    near = c.torque(Targets("pose", pos=s.ee_pos + [[0.05, 0, 0]], rot=s.ee_rot), s)
    far = c.torque(Targets("pose", pos=s.ee_pos + [[5.0, 0, 0]], rot=s.ee_rot), s)
    np.testing.assert_allclose(far, near)


def _env(**kw):  # type: ignore[no-untyped-def]
    kw = {"action": EEPoseConfig(rotation=False, gripper=False), "controller": OSCConfig(),
          "shield": ShieldConfig(max_action_delta=None), **kw}
    return make_env("reach", 8, seed=3, episode_length=500, **kw)


def test_osc_tracks_random_targets_within_5mm_in_2s_without_the_shield() -> None:
    # the shield's joint acceleration limit would shape the law's transients: lifted here
    env = _env(shield=ShieldConfig(max_action_delta=None, max_joint_accel=1e4))
    env.reset(seed=3)
    lo = torch.tensor(env.cfg.target_lo, dtype=torch.float64)
    hi = torch.tensor(env.cfg.target_hi, dtype=torch.float64)
    gen = torch.Generator().manual_seed(0)
    target = lo + (hi - lo) * torch.rand(8, 3, generator=gen, dtype=torch.float64)
    space = env.pipeline.action_space
    action = ((target - torch.from_numpy(space._mid)) / torch.from_numpy(space._half)).float()
    for _ in range(round(2.0 / env.control_dt)):
        env.step(action)
    err = torch.linalg.vector_norm(env.state.sensors["ee_pos"] - target, dim=1)
    assert float(err.max()) < 0.005, err
    for layer in ("workspace", "joint_limits", "joint_velocity", "torque", "table_floor"):
        assert int(env.shield_counts[layer].sum()) == 0, layer


@pytest.mark.slow
@pytest.mark.parametrize("max_err", [0.02, 0.05])
def test_reference_clamping_bounds_the_force_on_the_table(max_err: float) -> None:
    """A target 20 cm under the table, shield off: the settled contact force is what the
    clamped error asks for, Lambda Kp max_error, not what the full error would."""
    kp = 200.0
    env = _env(controller=OSCConfig(pos_stiffness=kp, max_pos_error=max_err),
               action=EEPoseConfig(lo=(0.3, -0.2, -0.2), hi=(0.6, 0.2, 0.2), rotation=False,
                                   gripper=False),
               shield=ShieldConfig(enabled=False))
    env.reset(seed=0)
    down = torch.tensor([[0.0, 0.0, -1.0]]).expand(8, 3)
    force = torch.zeros(8, dtype=torch.float64)
    for i in range(250):  # clamped errors also bound the speed (Kp e_max / Kd)
        env.step(down)
        if i >= 200:  # settled on the table: mean contact force
            force += torch.linalg.vector_norm(env.state.sensors["arm_table_force"], dim=1) / 50
    s = env.state.arm_state(mass=True)
    jp = s.jac[:, :3]
    lam = torch.linalg.inv(jp @ torch.linalg.solve(s.mass, jp.transpose(1, 2)))
    bound = torch.linalg.matrix_norm(lam, ord=2) * kp * max_err
    assert bool((force > 0.2 * bound).all())  # it does press on the table
    assert bool((force < 1.2 * bound).all()), (force, bound)


def test_numpy_single_sample_equals_torch_batched() -> None:
    """The deploy loop runs the same functions on one numpy sample."""
    env = make_env("reach", 4, action=EEPoseConfig(gripper=False), controller=OSCConfig(), seed=1)
    env.reset(seed=1)
    for _ in range(3):
        env.step(env.random_action())
    s = env.state.arm_state(mass=True)
    a = env.random_action().double() * 3.0
    t = env.pipeline.action_space(a, s)
    tau = env.pipeline.controller.torque(t, s)
    t2, flags = env.pipeline.shield.filter_targets(t, s)
    out, tflags = env.pipeline.shield.filter_torque(tau * 4.0, s)
    for i in range(4):
        one = ArmState(**{k: getattr(s, k)[i:i + 1].numpy().copy() for k in
                          ("q", "qd", "ee_pos", "ee_rot", "jac", "mass", "drift", "gravity",
                           "link_pos", "link_rot")})
        t_np = env.pipeline.action_space(a[i:i + 1].numpy(), one)
        np.testing.assert_allclose(t_np.pos, t.pos[i:i + 1].numpy(), rtol=1e-12)
        np.testing.assert_allclose(env.pipeline.controller.torque(t_np, one), tau[i:i + 1].numpy(),
                                   rtol=1e-9, atol=1e-9)
        t2_np, f_np = env.pipeline.shield.filter_targets(t_np, one)
        np.testing.assert_allclose(t2_np.pos, t2.pos[i:i + 1].numpy(), rtol=1e-12)
        out_np, tf_np = env.pipeline.shield.filter_torque(tau[i:i + 1].numpy() * 4.0, one)
        np.testing.assert_allclose(out_np, out[i:i + 1].numpy(), rtol=1e-9, atol=1e-9)
        assert {k: bool(v[0]) for k, v in tf_np.items()} == \
            {k: bool(v[i]) for k, v in tflags.items()}


def test_backend_jacobian_and_mass_match_mujoco() -> None:
    import mujoco

    env = make_env("lift", 3, seed=2)
    env.reset(seed=2)
    for _ in range(4):
        env.step(env.random_action())
    body = int(env.model.site(env.robot.ee_site).bodyid[0])
    point = env.state.sensors["ee_pos"]
    jp, jr = env.backend.jacobian(body, point)
    dofs = env.state.joint_dofs
    mass = env.backend.mass_matrix(dofs)
    data = mujoco.MjData(env.model)
    for i in range(3):
        env.backend.write_data(i, data)
        mujoco.mj_forward(env.model, data)
        ref_p, ref_r = np.zeros((3, env.model.nv)), np.zeros((3, env.model.nv))
        mujoco.mj_jac(env.model, data, ref_p, ref_r, point[i].numpy(), body)
        np.testing.assert_allclose(jp[i].numpy(), ref_p, atol=1e-12)
        np.testing.assert_allclose(jr[i].numpy(), ref_r, atol=1e-12)
        full = np.zeros((env.model.nv, env.model.nv))
        mujoco.mj_fullM(env.model, data, full)
        np.testing.assert_allclose(mass[i].numpy(), full[np.ix_(dofs, dofs)], atol=1e-12)
    assert get_robot("arm7").num_joints == len(dofs)
