"""The built-in 7-DoF arm (Panda-like figures) with its parallel gripper."""

from __future__ import annotations

from pathlib import Path

from robot_rl.robots.spec import GripperSpec, RobotSpec

ASSETS = Path(__file__).parent / "assets"

ARM7_JOINTS = tuple(f"joint{i}" for i in range(1, 8))


def arm7() -> RobotSpec:
    """7-DoF torque-driven arm: Panda kinematics, masses and limits, primitives only."""
    return RobotSpec(
        name="arm7",
        mjcf=ASSETS / "arm7.xml",
        root_body="link0",
        joint_names=ARM7_JOINTS,
        actuator_names=ARM7_JOINTS,
        ee_site="ee",
        home=(0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785),
        q_min=(-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973),
        q_max=(2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973),
        qd_max=(2.175, 2.175, 2.175, 2.175, 2.61, 2.61, 2.61),
        tau_max=(87.0, 87.0, 87.0, 87.0, 12.0, 12.0, 12.0),
        # Servo gains near critical damping at ~30 rad/s for the home-pose joint inertias,
        # with the same kp / kd = 15 /s on every joint: a joint-delta action then moves all
        # joints at the same rate (|a| = 1 with scale 0.1 rad -> 1.5 rad/s steady).
        kp=(600.0, 1200.0, 700.0, 700.0, 120.0, 120.0, 100.0),
        kd=(40.0, 80.0, 140.0 / 3.0, 140.0 / 3.0, 8.0, 8.0, 20.0 / 3.0),
        # at home every joint axis lies in the x-z plane (1, 3, 5, 7: reflected, so their
        # angles change sign) or along y (2, 4, 6: kept); the hand's -45 degrees undo joint
        # 7's home 45 (tests/test_mirror.py checks the kinematics)
        mirror=(-1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0),
        gripper=GripperSpec(
            actuator="gripper",
            joints=("finger_left", "finger_right"),
            pads=("finger_left", "finger_right"),
            open_ctrl=0.04,
            closed_ctrl=0.0,
        ),
    )


PUSHER_JOINTS = ("r_shoulder_pan_joint", "r_shoulder_lift_joint", "r_upper_arm_roll_joint",
                 "r_elbow_flex_joint", "r_forearm_roll_joint", "r_wrist_flex_joint",
                 "r_wrist_roll_joint")


def pusher() -> RobotSpec:
    """gymnasium's Pusher-v5 arm (7-DoF, torque-driven, no gravity), for the ``pusher`` task.

    Its MJCF is gymnasium's own and holds the whole scene; the ``pusher`` task names the
    actuators after their joints and adds the ``tips`` site at the arm's tip. Limits are
    the MJCF's; it has no velocity limits, so 10 rad/s is used for the velocity cost.
    """
    import gymnasium

    return RobotSpec(
        name="pusher",
        mjcf=Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets" / "pusher_v5.xml",
        root_body="r_shoulder_pan_link",
        joint_names=PUSHER_JOINTS,
        actuator_names=PUSHER_JOINTS,
        ee_site="tips",
        home=(0.0,) * 7,
        q_min=(-2.2854, -0.5236, -1.5, -2.3213, -1.5, -1.094, -1.5),
        q_max=(1.714602, 1.3963, 1.7, 0.0, 1.5, 0.0, 1.5),
        qd_max=(10.0,) * 7,
        tau_max=(2.0,) * 7,
        kp=(10.0,) * 7,
        kd=(1.0,) * 7,
    )
