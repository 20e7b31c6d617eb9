"""The env and the deploy runtime act through one pipeline: the same readings and actions
give the same joint commands on both sides.

A one-env ``BatchedEnv`` steps its simulation; after every step its arm state is handed to
the runtime as a ``JointReading`` and both receive the same action (random, out of bounds,
NaN bursts). The env's command is what it writes into the arm actuators' controls (the
joint targets, or the first torque of the control period); the runtime's is what it sends.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from robot_rl.controllers import (
    EEDeltaConfig,
    EEPoseConfig,
    JointDeltaConfig,
    JointImpedanceConfig,
    JointTorqueConfig,
    JointVelocityConfig,
    MotionConfig,
    OSCConfig,
    ShieldConfig,
)
from robot_rl.errors import ConfigError
from robot_rl.export.artifact import task_meta
from robot_rl.hardware.configs import DeployConfig
from robot_rl.hardware.robot import RobotError
from robot_rl.hardware.runtime import DeployRuntime
from robot_rl.sim import make_env
from tests.hardware.conftest import ScriptedRobot

CASES = [
    ("joint_delta", JointDeltaConfig(gripper=False), None, "position", False),
    ("joint_delta_velocity_iface", JointDeltaConfig(gripper=False), None, "velocity", False),
    ("joint_velocity", JointVelocityConfig(gripper=False), None, "position", False),
    ("joint_impedance", JointDeltaConfig(gripper=False), JointImpedanceConfig(), "position",
     False),
    ("ee_delta_diff_ik", EEDeltaConfig(gripper=False), None, "position", False),
    ("ee_pose_diff_ik_velocity_iface", EEPoseConfig(gripper=False), None, "velocity", False),
    ("ee_delta_osc", EEDeltaConfig(gripper=False), OSCConfig(), "effort", False),
    ("ee_pose_osc", EEPoseConfig(gripper=False), OSCConfig(), "effort", False),
    ("joint_torque", JointTorqueConfig(), None, "effort", False),
    # the motion profile of joint targets (controllers.motion) runs in both the same way
    ("joint_delta_motion", JointDeltaConfig(gripper=False), None, "position", True),
    ("ee_delta_diff_ik_motion", EEDeltaConfig(gripper=False), None, "velocity", True),
]


class _Scripted:
    """A policy stand-in with the env's policy.json half; the test acts through ``override``."""

    has_cost_critic = False
    images: list = []  # sees no cameras

    def __init__(self, env: Any):
        self.meta = task_meta(env)
        self.obs_dim, self.act_dim = env.obs_dim, env.act_dim
        self.path = "scripted"

    @property
    def joint_names(self) -> list[str]:
        return list(self.meta["robot"]["joint_names"])

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        return np.zeros(self.act_dim, dtype=np.float32)


def _actions(n: int, dim: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1.3, 1.3, (n, dim)).astype(np.float32)  # some beyond the bounds
    a[n // 3: n // 3 + 4] = np.sign(a[n // 3: n // 3 + 4])  # full-scale flips
    a[n // 2, 1] = np.nan  # a NaN burst: both hold
    a[n // 2 + 1] = np.inf
    return a


def _twin(env: Any, interface: str, rate_hz: float, actions: np.ndarray
          ) -> tuple[DeployRuntime, ScriptedRobot, dict[str, int], list[np.ndarray]]:
    """(runtime, its robot, {"i": the action index both act on}, the env's arm controls
    written before each physics call since the list was last cleared)."""
    robot = ScriptedRobot(interface=interface)
    rt = DeployRuntime(_Scripted(env), robot,  # type: ignore[arg-type]
                       DeployConfig(rate_hz=rate_hz, sliced_policy=False, gate=False))
    k = {"i": 0}
    rt.override = lambda obs, reading, arm: actions[k["i"]]
    arm_cols = env.arm_actuator_ids
    written: list[np.ndarray] = []
    step_physics = env.backend.step

    def spy(*args: Any, **kwargs: Any) -> Any:
        written.append(env.backend.ctrl[0, arm_cols].numpy().copy())
        return step_physics(*args, **kwargs)

    env.backend.step = spy
    return rt, robot, k, written


def _settle_fingers(env: Any) -> tuple[np.ndarray, np.ndarray]:
    """The env's (q, qd) as a reading gives them: the runtime's model keeps the fingers at
    their defaults, so the env's fingers are put there too (they drift by micrometres, which
    changes the arm's mass matrix by ~1e-8)."""
    s = env.state
    for j in env.robot.gripper.joints:
        s.qpos[0, s.qpos_slice(j)], s.qvel[0, s.qvel_slice(j)] = 0.0, 0.0
    env.backend.forward(torch.zeros(1, dtype=torch.long))
    return s.joint_pos[0].numpy().copy(), s.joint_vel[0].numpy().copy()


@pytest.mark.parametrize(("name", "action", "controller", "interface", "motion"), CASES,
                         ids=[c[0] for c in CASES])
def test_env_and_runtime_send_the_same_joint_commands(name, action, controller, interface,
                                                      motion):
    env = make_env("reach", 1, dr="off", action=action, controller=controller,
                   shield=ShieldConfig(max_action_delta=0.5),
                   motion=MotionConfig(enabled=motion))
    env.reset(seed=7)
    actions = _actions(40, env.act_dim, seed=len(name))
    # The env's command: the arm actuators' controls at the first physics call of a step.
    rt, robot, k, written = _twin(env, interface, 1.0 / env.control_dt, actions)
    s = env.state
    worst = 0.0
    for i in range(len(actions)):
        k["i"] = i
        robot.set(*_settle_fingers(env), stamp=float(i))
        sent = rt.tick(robot.observe(), now=i * env.control_dt)
        written.clear()
        _, _, _, _, _, info = env.step(torch.from_numpy(actions[i][None]))
        assert sent is not None and sent.hold == bool(info["invalid_action"][0]), i
        want = written[0]
        if interface == "velocity":  # the env's servo is the position target; the runtime
            kp, kd = rt.pipeline.controller.kp, rt.pipeline.controller.kd  # sends its speed
            lim = rt.pipeline.shield.qd_limit
            want = np.clip(kp / kd * (want - robot.reading.q), -lim, lim)
        worst = max(worst, float(np.abs(sent.values - want).max()))
        for layer in ("nan_guard", "action_bounds", "rate_limit"):
            assert bool(info["safety"][layer][0]) == (rt.stats.shield[layer] > 0), (i, layer)
            rt.stats.shield[layer] = 0
        assert np.array_equal(rt.action, s.action[0].numpy(), equal_nan=True), i
    assert worst <= 1e-9, f"{name}: commands differ by up to {worst:.3g}"


@pytest.mark.parametrize(("action", "motion", "interface"),
                         [(JointDeltaConfig(gripper=False), False, "position"),
                          (EEDeltaConfig(gripper=False), True, "position"),
                          (JointDeltaConfig(gripper=False), False, "effort")],
                         ids=["joint_delta", "ee_delta_diff_ik_motion", "joint_delta_effort"])
def test_a_ramped_command_is_the_same_at_every_physics_step_and_tick(action, motion,
                                                                      interface) -> None:
    """``MotionConfig.ramp`` at 20 Hz: the env writes the ramp's value before each of the 25
    physics steps of a control step; the runtime at 500 Hz sends it at each of its 25
    ticks (the same readings at the step's start; the ramp depends on nothing else). On an
    effort interface it sends the PD law's torque towards the ramp's value at each tick."""
    env = make_env("reach", 1, dr="off", action=action, decimation=25,
                   shield=ShieldConfig(max_action_delta=0.5),
                   motion=MotionConfig(enabled=motion, ramp=True))
    env.reset(seed=7)
    n = env.cfg.decimation
    actions = _actions(12, env.act_dim, seed=3)
    rt, robot, k, written = _twin(env, interface, 1.0 / env.cfg.physics_dt, actions)
    assert rt.decimation == n
    kp, kd = rt.pipeline.controller.kp, rt.pipeline.controller.kd
    tau = np.asarray(env.robot.tau_max) * ShieldConfig().torque_fraction
    moved = 0.0
    for i in range(len(actions)):
        k["i"] = i
        q, qd = _settle_fingers(env)
        sent = []
        for j in range(n):
            robot.set(q, qd, stamp=float(i * n + j))
            out = rt.tick(robot.observe(), now=(i * n + j) * env.cfg.physics_dt)
            assert out is not None
            sent.append(out.values)
        written.clear()
        env.step(torch.from_numpy(actions[i][None]))
        assert len(written) == n, len(written)
        want = np.array(written) if interface == "position" else \
            np.clip(kp * (np.array(written) - q) - kd * qd, -tau, tau)
        np.testing.assert_allclose(np.array(sent), want, rtol=0, atol=1e-9,
                                   err_msg=f"step {i}")
        moved = max(moved, float(np.abs(written[-1] - written[0]).max()))
    assert moved > 1e-3  # the commands did move within the steps
    with pytest.raises(ConfigError, match="ramp"):  # one command per step cannot ramp
        DeployRuntime(_Scripted(env), ScriptedRobot(interface="position"),  # type: ignore[arg-type]
                      DeployConfig(rate_hz=1.0 / env.control_dt, gate=False))
    slow = make_env("reach", 1, dr="off", action=action, decimation=50,
                    motion=MotionConfig(enabled=motion, ramp=True))
    with pytest.raises(ConfigError, match="simulation only"):  # 10 Hz: longer than the lag
        DeployRuntime(_Scripted(slow), ScriptedRobot(interface="position"),  # type: ignore[arg-type]
                      DeployConfig(gate=False))


@pytest.mark.parametrize("controller", [None, JointImpedanceConfig()],
                         ids=["joint_pd", "joint_impedance"])
def test_joint_targets_on_an_effort_interface_are_the_pd_law_of_the_env_targets(controller):
    """A torque-controlled arm (a Franka's effort interface): the runtime sends, at each of
    its 1 kHz ticks (Franka's rate), the joint PD law's torque towards the joint target the
    env writes into its position servos (``controllers.servo.pd_effort``), from the tick's
    reading."""
    env = make_env("reach", 1, dr="off", action=JointDeltaConfig(gripper=False),
                   controller=controller, shield=ShieldConfig(max_action_delta=0.5))
    env.reset(seed=7)
    actions = _actions(20, env.act_dim, seed=5)
    rt, robot, k, written = _twin(env, "effort", 1000.0, actions)
    kp, kd = rt.pipeline.controller.kp, rt.pipeline.controller.kd
    tau = np.asarray(env.robot.tau_max) * ShieldConfig().torque_fraction  # the shield's
    worst, pushed = 0.0, 0.0
    for i in range(len(actions)):
        k["i"] = i
        q, qd = _settle_fingers(env)
        sent = []
        for j in range(rt.decimation):
            robot.set(q, qd, stamp=float(i * rt.decimation + j))
            out = rt.tick(robot.observe(), now=(i * rt.decimation + j) * 0.001)
            assert out is not None and out.interface == "effort"
            sent.append(out.values)
        written.clear()
        env.step(torch.from_numpy(actions[i][None]))
        want = np.clip(kp * (written[0] - q) - kd * qd, -tau, tau)
        worst = max(worst, float(np.abs(np.array(sent) - want).max()))
        pushed = max(pushed, float(np.abs(want).max()))
    assert pushed > 1.0  # the torques were not all zero
    assert worst <= 1e-9, f"commands differ by up to {worst:.3g}"


def test_a_torque_controller_needs_an_effort_interface() -> None:
    env = make_env("reach", 1, dr="off", action=EEDeltaConfig(gripper=False),
                   controller=OSCConfig())
    with pytest.raises(RobotError, match="needs the effort interface"):
        DeployRuntime(_Scripted(env), ScriptedRobot(interface="position"),  # type: ignore[arg-type]
                      DeployConfig(gate=False))
