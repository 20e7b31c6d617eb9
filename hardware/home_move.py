"""HomeMove: the scripted move back to the start pose between episodes on a robot.

    home = HomeMove(mapper, arm_model.state(robot.home, zeros))   # the pose episodes start from
    a = home.action(arm)              # (A,) an action of the task's action space, each tick
    home.arrived(arm)                 # within tolerance and nearly still

The move acts through the task's action space like any action (the runtime's shield and
controller behind it), so it is as safe as teleoperation. Where it ends is where the simulator
starts its episodes:

    joint_delta, joint_velocity   every joint to the robot's home configuration, along a
                                  straight line in joint space at most ``joint_speed`` per
                                  joint, and halving the remaining error each step near the end
    ee_delta                      the hand to its home position and orientation (the
                                  controller's null-space posture task holds the joints near
                                  home)

A move of the hand's position alone is not enough on a redundant arm: the null space and the
wrist's orientation stay where the last episode left them, drift episode after episode, and
the policy starts from poses it never trained from. On ``benchmarks/online.py``'s held-out arm,
the policy with its weights frozen fell from 70% to 30% success over 60 episodes that way,
a joint 1.15 rad from home at the start of the later ones.
"""

from __future__ import annotations

import numpy as np

from robot_rl.controllers.arm_state import ArmState
from robot_rl.controllers.ik import orientation_error
from robot_rl.hardware.configs import HomeMoveConfig
from robot_rl.hardware.teleop.base import TeleopCommand
from robot_rl.hardware.teleop.mapping import TeleopMapper


class HomeMove:
    """See the module docstring. ``mapper``: the task's ``TeleopMapper`` (its action space);
    ``home``: the arm's state at the home configuration (one arm)."""

    def __init__(self, mapper: TeleopMapper, home: ArmState,
                 cfg: HomeMoveConfig | None = None):
        self.cfg = cfg = cfg or HomeMoveConfig()
        cfg.validate()
        self.mapper = mapper
        self.joint_space = mapper.kind != "ee_delta"
        self.home_q = np.asarray(home.q, dtype=np.float64)[0].copy()
        self.home_ee = np.asarray(home.ee_pos, dtype=np.float64)[0].copy()
        self.home_rot = np.asarray(home.ee_rot, dtype=np.float64)[0].copy()

    def error(self, arm: ArmState) -> float:
        """How far ``arm`` is from home: the largest joint error [rad] (joint action spaces)
        or the hand's distance [m] (ee_delta)."""
        if self.joint_space:
            return float(np.max(np.abs(self.home_q - np.asarray(arm.q)[0])))
        return float(np.linalg.norm(self.home_ee - np.asarray(arm.ee_pos)[0]))

    def arrived(self, arm: ArmState) -> bool:
        cfg = self.cfg
        if float(np.max(np.abs(np.asarray(arm.qd)[0]))) >= cfg.still:
            return False
        if self.joint_space:
            return self.error(arm) < cfg.joint_tolerance
        rot = np.asarray(arm.ee_rot, dtype=np.float64)[0]
        turn = float(np.linalg.norm(orientation_error(rot[None], self.home_rot[None])[0]))
        return self.error(arm) < cfg.pos_tolerance and turn < cfg.rot_tolerance

    def action(self, arm: ArmState) -> np.ndarray:
        """(A,) the next step of the move (the gripper open)."""
        if self.joint_space:
            err = self.home_q - np.asarray(arm.q, dtype=np.float64)[0]
            step = self.cfg.joint_speed * self.mapper.dt
            dq = err * min(0.5, step / max(float(np.max(np.abs(err))), 1e-9))
            return self.mapper.joint_step(dq, gripper=-1.0)
        err = self.home_ee - np.asarray(arm.ee_pos, dtype=np.float64)[0]
        dist = float(np.linalg.norm(err))
        lin = self.cfg.lin_speed * err / max(dist, 0.05)  # proportional within 5 cm
        rot = np.asarray(arm.ee_rot, dtype=np.float64)[0]
        turn = orientation_error(rot[None], self.home_rot[None])[0]
        ang = np.clip(0.5 * turn / float(self.mapper.cfg.rot_scale), -1.0, 1.0)
        return self.mapper(TeleopCommand(np.concatenate([lin, ang]), -1.0), arm)
