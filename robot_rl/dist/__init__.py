"""Actors and a learner on Ray: many machines collect, one learns.

    robot-rl train --task reach --ray auto --env-runners 4       # local Ray, or a cluster

The learner (``learner.py``: the SAC runner with its replay, evaluation, checkpoints and
TensorBoard, or the fine-tuning runner with its demonstrations) receives ``Rollout`` batches
from env-runner actors (``env_runner.py``: a CPU ``BatchedEnv`` and an acting copy of the
policy on their own cores) and publishes its acting weights through Ray's object store
(``weights.py``); ``cluster.py`` starts or joins Ray and places the actors. Only
``cluster.py`` and ``ray_pool.py`` import Ray: the env-runner and the learner are plain
classes, testable and usable without it.
"""
