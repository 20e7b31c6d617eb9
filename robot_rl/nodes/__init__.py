"""The ROS 2 nodes, one home (real rclpy; the ``ros`` extra). Importing this package does
not import rclpy; each node module does, with a one-line error where it is missing.

    policy_node.py      a deployed policy at control rate: ``robot-rl-policy-node``
    sim_robot_node.py   the simulated arm behind ros2_control topics: ``robot-rl-sim-robot-node``
    teleop_node.py      teleoperation recorded into a dataset: ``robot-rl-teleop-node``
    sysid_node.py       excitation recorded for system identification: ``robot-rl-sysid-node``
    finetune_node.py    the policy node of HIL fine-tuning, in the robot actor's process

What they share (topics, conversions, parameters, spinning, the launcher) is
``robot_rl.hardware.ros``; ``launch/`` starts them with ``ros2 launch``.
"""
