"""The rehearsal's batched copy of a held-out simulated arm (benchmarks/online_rehearsal.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchmarks.online_rehearsal import held_out_env
from robot_rl.hardware.configs import SimRobotConfig
from robot_rl.hardware.sim_robot import build_model
from robot_rl.robots import get_robot
from robot_rl.sim.env import robot_bodies
from robot_rl.sim.tasks import make_task_config


def test_the_batched_copy_has_the_held_out_arms_dynamics_in_every_env() -> None:
    robot = get_robot("arm7")
    sim = SimRobotConfig(mass_scale=1.6, kp=tuple(0.4 * k for k in robot.kp),
                         kd=tuple(0.7 * k for k in robot.kd),
                         frictionloss=(3.0, 3.0, 2.0, 2.0, 1.0, 0.5, 0.5),
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
    assert env._actuation.steps == (0, 1)  # 15 ms at 50 Hz: 0 or 1 control step


def test_the_batched_copys_controller_sees_the_nominal_arm_as_the_deploy_runtime_does() -> None:
    """Heavier links: the physics is the held-out arm's, but a torque controller gets the
    mass matrix and gravity of the nominal model (as ``ArmModel`` computes them on the robot),
    not the true ones the batched env would otherwise hand it."""
    import torch

    from robot_rl.controllers.arm_model import ArmModel
    from robot_rl.controllers.configs import EEDeltaConfig, OSCConfig

    robot = get_robot("arm7")
    task = make_task_config("reach")
    task.action, task.controller = EEDeltaConfig(), OSCConfig()
    env = held_out_env(task, 2, SimRobotConfig(interface="effort", mass_scale=2.5))
    env.reset(seed=0)
    q = torch.as_tensor(np.asarray(robot.home) + np.linspace(-0.3, 0.3, 7))
    env.state.set_joint_pos(torch.arange(2), q.expand(2, -1))
    env.backend.forward(torch.arange(2))
    seen = env.state.arm_state(mass=True)
    nominal = ArmModel(build_model(SimRobotConfig(), robot, scene=task), robot)
    want = nominal.state(q.numpy(), np.zeros(7), mass=True)
    heavy = ArmModel(build_model(SimRobotConfig(mass_scale=2.5), robot, scene=task), robot)
    true = heavy.state(q.numpy(), np.zeros(7), mass=True)
    assert not np.allclose(true.mass[0], want.mass[0], rtol=0.2)  # the gap is there
    for e in range(2):
        np.testing.assert_allclose(seen.mass[e].numpy(), want.mass[0], rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(seen.gravity[e].numpy(), want.gravity[0], rtol=1e-4,
                                   atol=1e-6)


def _checks(sim: SimRobotConfig, joint: int = 0
            ) -> tuple[tuple[float, float], tuple[float, float]]:
    """travel_time and holding_torque for one episode: the home pose to the home pose with
    ``joint`` turned 0.3 rad."""
    import torch

    from benchmarks.online_rehearsal import Args, goal_statics, holding_torque, travel_time
    from robot_rl.train_config import TrainConfig

    cfg = TrainConfig(task="reach")
    cfg.validate()
    start = torch.tensor([get_robot("arm7").home], dtype=torch.float64)
    goal = start.clone()
    goal[0, joint] += 0.3
    args = Args(init=Path("unused"), sim=sim)
    levers, gravity = goal_statics(sim, cfg, goal)
    return travel_time(args, cfg, start, goal, levers), holding_torque(sim, gravity)


def test_the_travel_and_holding_checks_count_the_arms_authority() -> None:
    (share, least), (weak, worst) = _checks(SimRobotConfig())
    # nominal: kp * 0.1 / kd = 1.5 rad/s on every joint; the home pose is held easily
    assert share == 0.0 and least == pytest.approx(0.3 / 1.5)
    assert weak == 0.0 and 0.0 < worst < 0.5
    friction = (6.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)  # the first joint: (60 - 6) / 40 rad/s
    (share, least), _ = _checks(SimRobotConfig(frictionloss=friction))
    assert share == 0.0 and least == pytest.approx(0.3 / (54.0 / 40.0))
    # friction the full command cannot overcome: the joint never moves
    (share, least), _ = _checks(SimRobotConfig(frictionloss=(60.5,) + (0.0,) * 6))
    assert share == 1.0 and least == float("inf")
    # ... unless it is the flange's roll, which barely moves the tool point: it need not finish
    (share, least), _ = _checks(SimRobotConfig(frictionloss=(0.0,) * 6 + (60.0,)), joint=6)
    assert share == 0.0 and least == 0.0
    # links so heavy that gravity at the home pose is beyond the actuators' torque limits
    _, (weak, worst) = _checks(SimRobotConfig(mass_scale=10.0))
    assert weak == 1.0 and worst > 1.0
