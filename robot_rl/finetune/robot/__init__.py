"""Fine-tuning on the robot (HIL-SERL): ``robot-rl finetune-robot``.

    configs.py      RobotFinetuneConfig, RobotSetup, OnlineLoopConfig (no torch)
    learner.py      RobotFinetuneRunner: SAC from a sim-trained policy, learning from the
                    robot's committed episodes
    actor.py        RobotActor: the deploy runtime and the online loop on the robot's machine
    loop.py         OnlineRobotLoop: home, episode, intervention, commit (per runtime tick)
    live_policy.py  LivePolicy: the policy the runtime runs while the learner swaps weights
    corrector.py    GoalCorrector: a scripted person who takes over when the policy strays
    pool.py         the robot actor on Ray (RobotPool, ROBOT: the learner's fleet)

It runs on ``robot_rl.cluster``'s driver and collector, with the robot actor for fleet.
"""
