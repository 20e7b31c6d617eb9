"""Record a system-identification excitation on a real arm (``robot-rl sysid fit`` fits it).

    ros2 launch robot_rl sysid.launch.py out:=/data/arm_sysid params_file:=/path/to/my_arm.yaml
    ros2 service call /sysid_node/start std_srvs/srv/Trigger      # the arm moves home, then plays

The arm's driver and controllers come from its own bringup, as for deploy.launch.py. The node
waits for ``~/start`` (unless ``autostart`` is set in the parameters file), plays the
excitation through the safety shield, appends the episode to ``out`` and exits; ``~/stop``
holds the arm and saves nothing.
"""

from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from launch import LaunchDescription


def generate_launch_description() -> LaunchDescription:
    default_params = PathJoinSubstitution([FindPackageShare("robot_rl"), "config", "arm7.yaml"])
    return LaunchDescription([
        DeclareLaunchArgument("out", description="dataset folder"),
        DeclareLaunchArgument("params_file", default_value=default_params,
                              description="parameters YAML of the arm"),
        Node(package="robot_rl", executable="robot-rl-sysid-node", name="sysid_node",
             output="screen",
             parameters=[LaunchConfiguration("params_file"),
                         {"out": LaunchConfiguration("out")}]),
    ])
