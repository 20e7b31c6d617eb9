"""Mirror images of demonstrations, for a task and an arm symmetric about the base's x-z plane.

    signs = dataset_mirror_signs(ds)               # what changes sign under y -> -y
    frames = with_mirror_images(frames, signs)     # every episode twice: as recorded, mirrored

Where a task's scene, reset distribution, rewards and success are symmetric under y -> -y
(``TaskDef.mirror``) and so is its arm (``RobotSpec.mirror``), the mirror image of a
recorded episode is an episode of the same task: the observation and the action with the
signs of ``robot_rl.sim.mirror``. Doubling a few demonstrations this way is the symmetry
augmentation rsl_rl's PPO offers its legged tasks (``symmetry_cfg``'s data augmentation),
here for behaviour cloning (``robot-rl bc --mirror``); the off-policy learners mirror their
replayed transitions at random as they are sampled (``--mirror``,
``robot_rl.replay.mirror_half``).
"""

from __future__ import annotations

import numpy as np

from robot_rl.data.format import DatasetSpec
from robot_rl.data.reader import Dataset
from robot_rl.errors import ConfigError
from robot_rl.sim.mirror import MirrorSigns, term_mirror_signs

EPISODE_OFFSET = 1_000_000
"""A mirrored episode's index: the recorded one's plus this."""


def mirror_signs(spec: DatasetSpec) -> MirrorSigns:
    """The signs of a dataset of one of our tasks, from its task's and its arm's symmetry
    (the observation terms by name, ``term.i``); a clear error where either has none."""
    terms: dict[str, int] = {}
    for name in spec.obs_names:
        term = name.rsplit(".", 1)[0]
        terms[term] = terms.get(term, 0) + 1
    return term_mirror_signs(spec.task, spec.robot_type, spec.action_space, terms.items())


def dataset_mirror_signs(ds: Dataset) -> MirrorSigns:
    """``mirror_signs`` of a dataset; a clear error for one of no task of ours."""
    if ds.spec is None:
        raise ConfigError(f"--mirror: {ds.root} is a dataset of no task of ours, whose mirror "
                          f"image would be known")
    return mirror_signs(ds.spec)


def mirrored(frames: dict[str, np.ndarray], signs: MirrorSigns) -> dict[str, np.ndarray]:
    """The frames' mirror images: ``observation.state`` and ``action`` with their signs
    flipped, episode indices offset by ``EPISODE_OFFSET``; other features (the joint
    readings of the arm, camera frames) are left out, as nothing learns from them here."""
    return {"observation.state": frames["observation.state"] * signs.obs,
            "action": frames["action"] * signs.action,
            "episode_index": frames["episode_index"] + EPISODE_OFFSET}


def with_mirror_images(frames: dict[str, np.ndarray], signs: MirrorSigns
                       ) -> dict[str, np.ndarray]:
    """The frames, then their mirror images: every episode twice (the features of
    ``mirrored``)."""
    mirror = mirrored(frames, signs)
    return {k: np.concatenate([frames[k], v]) for k, v in mirror.items()}
