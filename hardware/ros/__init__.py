"""What the ROS 2 nodes (``robot_rl.nodes``) share around the deploy runtime: topic
conversions, images, parameters, spinning, ``RosRobot``, the launcher (real rclpy; the
``ros`` extra).

    robot-rl-policy-node --ros-args --params-file launch/config/arm7.yaml -p artifact:=DIR
    robot-rl-sim-robot-node --ros-args --params-file launch/config/arm7.yaml

Topics follow ros2_control: ``/joint_states`` (sensor_msgs/JointState, BEST_EFFORT,
KEEP_LAST 1) in; std_msgs/Float64MultiArray on ``/<controller>/commands`` (a
forward_command_controller) or trajectory_msgs/JointTrajectory out. Importing this package
does not import rclpy; the node modules do, with a clear error when it is missing.
"""

from __future__ import annotations

from robot_rl.errors import ConfigError


def require_rclpy() -> None:
    """Raise a one-line error naming the extra when rclpy is not installed."""
    try:
        import rclpy  # noqa: F401
    except ImportError as e:
        raise ConfigError(f"the ROS 2 nodes need rclpy ({e}); install the extra: "
                          f"pip install 'robot-rl[ros]'") from None
