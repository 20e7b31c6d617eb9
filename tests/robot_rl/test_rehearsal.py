"""The rehearsal's batched copy of a held-out simulated arm (benchmarks/online_rehearsal.py)."""

from __future__ import annotations

import numpy as np

from benchmarks.online_rehearsal import held_out_env
from robot_rl.hardware.sim_robot import SimRobotConfig, build_model
from robot_rl.robots import get_robot
from robot_rl.sim.env import robot_bodies
from robot_rl.sim.tasks import make_task_config


def test_the_batched_copy_has_the_held_out_arms_dynamics_in_every_env() -> None:
    robot = get_robot("arm7")
    sim = SimRobotConfig(mass_scale=1.6, kp=tuple(0.4 * k for k in robot.kp),
                         kd=tuple(0.7 * k for k in robot.kd), frictionloss=2.5,
                         damping_scale=1.3, actuation_delay=0.015)
    task = make_task_config("reach")
    env = held_out_env(task, 3, sim)
    env.reset(seed=0)  # randomization (the fixed mass scale) is written at reset
    arm = build_model(sim, robot, scene=task)  # the simulated arm's own model
    model, be = env.backend.model, env.backend
    acts = [model.actuator(n).id for n in robot.actuator_names]
    dofs = [int(model.joint(n).dofadr[0]) for n in robot.joint_names]
    bodies = robot_bodies(model, robot)

    def field(name: str) -> np.ndarray:
        return be.model_field(name).cpu().numpy()

    for e in range(3):
        np.testing.assert_allclose(field("actuator_gainprm")[e, acts, 0],
                                   arm.actuator_gainprm[acts, 0])
        np.testing.assert_allclose(field("actuator_biasprm")[e, acts, 1:3],
                                   arm.actuator_biasprm[acts, 1:3])
        np.testing.assert_allclose(field("dof_frictionloss")[e, dofs], arm.dof_frictionloss[dofs])
        np.testing.assert_allclose(field("dof_damping")[e, dofs], arm.dof_damping[dofs])
        np.testing.assert_allclose(field("body_mass")[e, bodies], arm.body_mass[bodies])
    assert env.cfg.dr.action_delay_max == 1  # 15 ms at 50 Hz: 0 or 1 control step
