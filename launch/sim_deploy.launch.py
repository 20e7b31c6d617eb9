"""Run a policy on the simulated arm: sim_robot_node + policy_node, no hardware.

    ros2 launch robot_rl sim_deploy.launch.py artifact:=/path/to/artifact

Without ``launch`` installed, ``robot-rl deploy ARTIFACT --robot sim --ros`` starts the same
two nodes with the same parameters.
"""

from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from launch import LaunchDescription


def generate_launch_description() -> LaunchDescription:
    default_params = PathJoinSubstitution([FindPackageShare("robot_rl"), "config", "arm7.yaml"])
    params = LaunchConfiguration("params_file")
    return LaunchDescription([
        DeclareLaunchArgument("artifact", description="exported policy artifact folder"),
        DeclareLaunchArgument("params_file", default_value=default_params,
                              description="parameters YAML of the arm"),
        Node(package="robot_rl", executable="robot-rl-sim-robot-node", name="sim_robot_node",
             output="screen", parameters=[params]),
        Node(package="robot_rl", executable="robot-rl-policy-node", name="policy_node",
             output="screen",
             parameters=[params, {"artifact": LaunchConfiguration("artifact"),
                                  "autostart": True}]),
    ])
