"""The built-in arms: arm7 (7-DoF, Panda-like figures, a parallel gripper), ur6 (6-DoF,
UR5e-like figures, a pushing tool) and so5 (5-DoF, SO-101-like figures, a parallel
gripper)."""

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


UR6_JOINTS = ("shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint",
              "wrist_2_joint", "wrist_3_joint")
"""Universal Robots' joint names (ur_description's, as ros2_control's UR driver names them)."""


def ur6() -> RobotSpec:
    """6-DoF torque-driven arm: a UR5e's kinematics, masses and limits (published figures),
    primitives only, a pushing tool and no gripper (reach and push; lift needs a gripper).

    Limits as ur_description's UR5e: +-2 pi on every joint but the elbow (+-pi), pi rad/s on
    every joint, 150 Nm on the base, shoulder and elbow and 28 Nm on the wrists.
    """
    tau = (150.0, 150.0, 150.0, 28.0, 28.0, 28.0)
    two_pi = 6.2832
    return RobotSpec(
        name="ur6",
        mjcf=ASSETS / "ur6.xml",
        root_body="base_link",
        joint_names=UR6_JOINTS,
        actuator_names=UR6_JOINTS,
        ee_site="ee",
        # UR's "home": upper arm up, forearm level, tool straight down
        home=(0.0, -1.5708, 1.5708, -1.5708, -1.5708, 0.0),
        q_min=(-two_pi, -two_pi, -3.1416, -two_pi, -two_pi, -two_pi),
        q_max=(two_pi, two_pi, 3.1416, two_pi, two_pi, two_pi),
        qd_max=(3.1416,) * 6,
        tau_max=tau,
        # kp / kd = 15 /s on every joint, as arm7 (a joint-delta action then moves every
        # joint at the same rate); kp near critical damping for the home-pose inertias
        kp=(1500.0, 1500.0, 900.0, 150.0, 150.0, 75.0),
        kd=(100.0, 100.0, 60.0, 10.0, 10.0, 5.0),
    )


SO5_JOINTS = ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll")
"""LeRobot's SO-101 joint names (``shoulder_pan.pos`` ... in its datasets)."""

SO5_LAYOUT: dict[str, dict[str, object]] = {
    "reach": {"target_lo": (0.14, -0.15, 0.05), "target_hi": (0.3, 0.15, 0.22)},
    "push": {"puck_radius": 0.02, "puck_half_height": 0.015, "puck_mass": 0.05,
             "puck_lo": (0.17, -0.06), "puck_hi": (0.22, 0.06),
             "goal_lo": (0.16, -0.12), "goal_hi": (0.3, 0.12), "min_goal_distance": 0.06,
             "success_radius": 0.03},
    "lift": {"cube_lo": (0.17, -0.08), "cube_hi": (0.26, 0.08), "cube_half_size": 0.015,
             "cube_mass": 0.03, "lift_height": 0.06},
}
"""Where reach, push and lift put targets and objects for so5's 0.4 m of reach (the tasks'
defaults are laid out for arm7's 0.85 m), with a smaller puck and cube for its gripper."""
for _task in SO5_LAYOUT.values():
    _task["safety"] = {"workspace_lo": (0.05, -0.4, -0.01), "workspace_hi": (0.45, 0.4, 0.45)}


def so5() -> RobotSpec:
    """5-DoF arm with a parallel gripper: an SO-101's joint names, ranges, link lengths and
    servos (published figures), primitives only (``assets/so5.xml``).

    With five joints it places the gripper anywhere in reach, points it in the vertical
    plane through the base (wrist_flex) and rolls it about its own axis (wrist_roll); the
    gripper's heading about the vertical follows the position (shoulder_pan), so end-effector
    actions with rotation steer two of the three axes (docs/extending.md).
    """
    tau = (1.9,) * 5
    return RobotSpec(
        name="so5",
        mjcf=ASSETS / "so5.xml",
        root_body="base",
        joint_names=SO5_JOINTS,
        actuator_names=SO5_JOINTS,
        ee_site="ee",
        home=HOME_SO5,
        q_min=(-1.91986, -1.74533, -1.69, -1.65806, -2.74385),
        q_max=(1.91986, 1.74533, 1.69, 1.65806, 2.84121),
        qd_max=(4.7,) * 5,
        tau_max=tau,
        # kp / kd = 15 /s as the other arms; near critical damping with the gearboxes'
        # reflected inertia (0.01 kg m^2) and the links'
        kp=(15.0, 15.0, 15.0, 10.0, 5.0),
        kd=(1.0, 1.0, 1.0, 2.0 / 3.0, 1.0 / 3.0),
        mirror=(-1.0, 1.0, 1.0, 1.0, -1.0),
        gripper=GripperSpec(actuator="gripper", joints=("finger_left", "finger_right"),
                            pads=("finger_left", "finger_right"), open_ctrl=0.03,
                            closed_ctrl=0.0),
        task_layout=SO5_LAYOUT,
    )


HOME_SO5 = (0.0, 0.33, -0.145, 1.386, 0.0)
"""The gripper pointing straight down, 5 cm above the table at x 0.2 m, the wrist 0.27 rad
inside its range (pointing down higher up takes the wrist to its limit: at 8 cm, 0.06 rad)."""


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
