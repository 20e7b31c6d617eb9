"""Run a policy against a real arm's ros2_control controller.

    ros2 launch robot_rl deploy.launch.py artifact:=/path/to/artifact \
        params_file:=/path/to/my_arm.yaml

The arm's driver and controllers (joint_state_broadcaster, a forward_command_controller)
come from the arm's own bringup. The policy node holds until ``~/start`` is called:
    ros2 service call /policy_node/start std_srvs/srv/Trigger
"""

from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from launch import LaunchDescription


def generate_launch_description() -> LaunchDescription:
    default_params = PathJoinSubstitution([FindPackageShare("robot_rl"), "config", "arm7.yaml"])
    return LaunchDescription([
        DeclareLaunchArgument("artifact", description="exported policy artifact folder"),
        DeclareLaunchArgument("params_file", default_value=default_params,
                              description="parameters YAML of the arm"),
        Node(package="robot_rl", executable="robot-rl-policy-node", name="policy_node",
             output="screen",
             parameters=[LaunchConfiguration("params_file"),
                         {"artifact": LaunchConfiguration("artifact")}]),
    ])
