"""Recording orchestration: demonstrations and robot runs written into datasets.

It sits above both ``robot_rl.data`` (the dataset format) and ``robot_rl.hardware`` (robots,
teleoperation devices, the deploy runtime), and joins them:

    record.py          ``robot-rl record``: teleoperation, experts or a policy in simulation
    robot_recorder.py  recording on a robot through the deploy runtime (HIL interventions)
    (the same as a ROS 2 node: ``robot_rl.nodes.teleop_node``, ``robot-rl-teleop-node``)
    arm_import.py      a real arm's joint states and commands as episodes of a task
    rosbag_import.py   rosbag2 / MCAP recordings of an arm into datasets
    lerobot_import.py  LeRobot datasets of an arm into datasets
    sim_replay.py      a dataset's actions replayed in simulation
"""
