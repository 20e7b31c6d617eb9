"""The built-in arm's figures, and a user's own MJCF plugged in through RobotSpec."""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import torch

from robot_rl.sim import RobotSpec, get_robot, list_robots, make_env, register_robot
from robot_rl.sim.scene import SceneBuilder

USER_ARM = """
<mujoco model="three_link">
  <compiler angle="radian"/>
  <worldbody>
    <body name="base">
      <geom type="cylinder" size="0.05 0.05" pos="0 0 0.05" contype="2" conaffinity="1"/>
      <body name="l1" pos="0 0 0.1">
        <joint name="a" axis="0 0 1" range="-2.5 2.5" actuatorfrcrange="-40 40" damping="1"
               armature="0.05"/>
        <geom type="capsule" fromto="0 0 0 0 0 0.3" size="0.04" mass="2" contype="2"
              conaffinity="1"/>
        <body name="l2" pos="0 0 0.3">
          <joint name="b" axis="0 1 0" range="-1.5 1.5" actuatorfrcrange="-40 40" damping="1"
                 armature="0.05"/>
          <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.035" mass="1.5" contype="2"
                conaffinity="1"/>
          <body name="l3" pos="0.3 0 0">
            <joint name="c" axis="0 1 0" range="-2 2" damping="0.5" armature="0.02"/>
            <geom type="capsule" fromto="0 0 0 0.25 0 0" size="0.03" mass="1" contype="2"
                  conaffinity="1"/>
            <site name="tool" pos="0.25 0 0"/>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor name="ma" joint="a" ctrlrange="-40 40"/>
    <motor name="mb" joint="b" ctrlrange="-40 40"/>
    <motor name="mc" joint="c" ctrlrange="-15 15"/>
  </actuator>
</mujoco>
"""


def test_builtin_arm_has_panda_figures() -> None:
    r = get_robot("arm7")
    assert "arm7" in list_robots() and r.num_joints == 7 and r.gripper is not None
    model = SceneBuilder(r, 0.002).compile()
    r.validate(model)
    assert model.opt.timestep == 0.002
    np.testing.assert_allclose(model.jnt_range[:7, 0], r.q_min)
    np.testing.assert_allclose(model.jnt_range[:7, 1], r.q_max)
    np.testing.assert_allclose(np.abs(model.jnt_actfrcrange[:7, 1]), r.tau_max)
    assert r.tau_max == (87.0,) * 4 + (12.0,) * 3
    mass = model.body_subtreemass[model.body("link1").id]
    assert 15.0 < mass < 20.0  # a Panda's moving links weigh ~17 kg
    data = mujoco.MjData(model)
    data.qpos[:7] = r.home
    mujoco.mj_kinematics(model, data)
    ee = data.site(r.ee_site)
    np.testing.assert_allclose(ee.xpos, [0.307, 0.0, 0.495], atol=0.01)
    np.testing.assert_allclose(ee.xmat.reshape(3, 3)[:, 2], [0, 0, -1], atol=1e-6)  # down


def test_gravity_is_compensated_through_the_actuators() -> None:
    env = make_env("reach", 1, init_joint_noise=0.0)
    env.reset(seed=0)
    for _ in range(50):  # one second of "hold": zero joint deltas
        env.step(torch.zeros(1, 7))
    q = env.state.joint_pos[0]
    torch.testing.assert_close(q, torch.tensor(env.robot.home, dtype=q.dtype), atol=2e-3,
                               rtol=0)


def test_user_mjcf_plugs_in(tmp_path: Path) -> None:
    path = tmp_path / "three_link.xml"
    path.write_text(USER_ARM)
    spec = RobotSpec.from_mjcf(path, name="three_link", joint_names=("a", "b", "c"),
                               ee_site="tool", qd_max=(2.0, 2.0, 3.0), home=(0.0, 0.5, 0.8))
    assert spec.root_body == "base" and spec.actuator_names == ("ma", "mb", "mc")
    assert spec.q_min == (-2.5, -1.5, -2.0) and spec.tau_max == (40.0, 40.0, 15.0)
    register_robot("three_link", lambda: spec, overwrite=True)
    env = make_env("reach", 4, robot="three_link", target_lo=(0.2, -0.2, 0.2),
                   target_hi=(0.4, 0.2, 0.5))
    obs = env.reset(seed=0)
    assert env.act_dim == 3 and obs.shape == (4, 3 + 3 + 3 + 3 + 3 + 3)
    def distance() -> torch.Tensor:
        return torch.linalg.vector_norm(env.state.buffers["target"] - env.state.sensors["ee_pos"],
                                        dim=1)

    dist0 = distance()
    for _ in range(60):
        obs, *_ = env.step(env.expert_action())
        assert torch.isfinite(obs).all()
    dist = distance()
    assert (dist < dist0).all()  # the expert (and the whole stack) work on another arm
