"""Actors and a learner on Ray: many machines collect, one learns.

    robot-rl train --task reach --ray auto --env-runners 4       # local Ray, or a cluster

The learner (a ``Runner``: the SAC runner with its replay, evaluation, checkpoints and
TensorBoard, or a subclass such as the fine-tuning runner) trains in its one loop on a
``PoolCollector`` (``collector.py``): ``Rollout`` batches (``rollout.py``) from env-runner
actors (``env_runner.py``: a CPU ``BatchedEnv`` and an acting copy of the policy on their own
cores), its acting weights published through Ray's object store (``weights.py``).
``driver.py`` starts or joins Ray and places the learner and a ``Fleet`` of actors. Only
``driver.py`` and ``ray_pool.py`` import Ray: the env-runner and the collector are plain
classes, testable and usable without it. Fine-tuning on the robot (HIL-SERL) brings its own
fleet, the robot actor: ``robot_rl.finetune.robot``.
"""
