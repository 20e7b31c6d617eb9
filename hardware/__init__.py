"""Robot interfaces for deployment (simulated arm, ROS 2 arm), cameras and teleoperation.

This package shares observation, controller and safety code with ``robot_rl.sim``; it
lands with the deploy, ROS 2 and teleoperation capabilities.
"""
