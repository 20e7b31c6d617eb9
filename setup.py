"""Shim for ``colcon build`` (ament_python): the project is configured in pyproject.toml.

colcon runs this file; it adds what a ROS 2 workspace needs besides the Python package:
the ament index marker, package.xml, the launch files and their parameter files under
share/robot_rl, and the node executables under lib/robot_rl (see setup.cfg), where
``ros2 run`` and launch_ros look for them.
"""

from glob import glob

from setuptools import setup

setup(data_files=[
    ("share/ament_index/resource_index/packages", ["resource/robot_rl"]),
    ("share/robot_rl", ["package.xml"]),
    ("share/robot_rl/launch", glob("launch/*.launch.py")),
    ("share/robot_rl/config", glob("launch/config/*.yaml")),
])
