"""Record demonstrations on a real arm with a SpaceMouse or a gamepad.

    ros2 launch robot_rl record.launch.py device:=spacemouse out:=/data/reach_real \
        params_file:=/path/to/my_arm.yaml

The arm's driver and controllers come from its own bringup, as for deploy.launch.py. Episode
controls are the device's buttons. A keyboard needs a terminal, which launch does not give
its nodes: run ``ros2 run robot_rl robot-rl-teleop-node --ros-args --params-file ...`` instead.
"""

from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from launch import LaunchDescription


def generate_launch_description() -> LaunchDescription:
    default_params = PathJoinSubstitution([FindPackageShare("robot_rl"), "config", "arm7.yaml"])
    return LaunchDescription([
        DeclareLaunchArgument("device", default_value="spacemouse",
                              description="spacemouse or gamepad"),
        DeclareLaunchArgument("out", description="dataset folder"),
        DeclareLaunchArgument("task", default_value="reach",
                              description="the dataset's task"),
        DeclareLaunchArgument("params_file", default_value=default_params,
                              description="parameters YAML of the arm"),
        Node(package="robot_rl", executable="robot-rl-teleop-node", name="teleop_node",
             output="screen",
             parameters=[LaunchConfiguration("params_file"),
                         {"device": LaunchConfiguration("device"),
                          "out": LaunchConfiguration("out"),
                          "task": LaunchConfiguration("task")}]),
    ])
