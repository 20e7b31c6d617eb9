"""CPU backend: MuJoCo's ``mujoco.batch.Batch`` steps all simulations on a C thread pool.

Each simulation is one row of an (E, nstate) float64 array (MuJoCo's integration state);
the torch tensors here are zero-copy views of those rows and of the batch's output arrays, so
a step is one call into C with no per-env Python work. Results are bit-identical at any
thread count. Per-env model parameters (domain randomization) are MuJoCo's expanded model
fields, also viewed zero-copy.
"""

from __future__ import annotations

import os
import warnings

import mujoco
import numpy as np
import torch
from mujoco.batch import Batch

from robot_rl.errors import ConfigError
from robot_rl.sim.backends import arm_compiled
from robot_rl.sim.backends.arm_compiled import ArmIndex
from robot_rl.sim.backends.base import UNSTABLE_WARNINGS, Backend
from robot_rl.sim.backends.kinematics import ViewKinematics

_STAGE_VEL = mujoco.mjtStage.mjSTAGE_VEL.value
_STAGE_NONE = mujoco.mjtStage.mjSTAGE_NONE.value


def _view(array: np.ndarray) -> torch.Tensor:
    """Zero-copy torch view of a numpy array, also of the batch's read-only outputs."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "the given NumPy array is not writable"
        return torch.from_numpy(array)


class CpuBackend(ViewKinematics, Backend):
    """``num_envs`` simulations stepped by ``nthread`` C threads (default: all cores)."""

    def __init__(self, model: mujoco.MjModel, num_envs: int, nthread: int | None = None):
        if nthread is None:
            nthread = min(num_envs, os.cpu_count() or 1)
        if nthread < 1:
            raise ConfigError(f"nthread must be >= 1, got {nthread}")
        self.model = model
        self.num_envs = num_envs
        self.nthread = nthread
        self.device = torch.device("cpu")
        self.dtype = torch.float64
        # persistent: one MjData per env, so a step continues from the last one's stages
        # (current sensors at no extra cost) and no state rows are loaded and saved per call.
        self._batch = Batch(model, num_envs, nthread=nthread, persistent=True)
        self._batch.reset()
        b = self._batch
        self.qpos = _view(b.bind("qpos"))
        self.qvel = _view(b.bind("qvel"))
        self.ctrl = _view(b.bind("ctrl"))
        self.mocap_pos = _view(b.bind("mocap_pos"))
        self.time = _view(b.bind("time"))
        self.sensordata = _view(b.bind("sensordata"))
        self._warnings = b.warning[:, UNSTABLE_WARNINGS, 1]  # (E, 3) live counts (numpy)
        self._qvel_np = b.bind("qvel")
        self._fields: dict[str, torch.Tensor] = {}
        # Position-stage outputs for Jacobians and mass matrices, without another kinematics
        # pass: cdof (E, nv, 6) motion axes and subtree_com (E, nbody, 3), M (E, nM) sparse.
        self._cdof = _view(b.bind("cdof"))
        self._subtree_com = _view(b.bind("subtree_com"))
        self._mass = _view(b.bind("M"))
        self._bias = _view(b.bind("qfrc_bias"))
        self._passive = _view(b.bind("qfrc_passive"))
        self._gravcomp = _view(b.bind("qfrc_gravcomp"))
        self._xpos, self._xmat = _view(b.bind("xpos")), _view(b.bind("xmat"))
        bind = b.bind
        self._arrays = (bind("qpos"), bind("qvel"), bind("sensordata"), bind("cdof"),
                        bind("subtree_com"), bind("xpos"), bind("xmat"), bind("M"),
                        bind("qfrc_bias"), bind("qfrc_passive"), bind("qfrc_gravcomp"))
        """The numpy arrays ``arm_arrays`` reads (the same memory as the views above)."""
        self._init_kinematics()
        self._batch.forward()

    def arm_arrays(self, arm: ArmIndex, mass: bool) -> tuple[np.ndarray, ...]:
        """The arrays of an ``ArmState`` of the arm ``arm`` in one compiled call
        (``arm_compiled.arm_arrays``; mass matrix and drift forces if ``mass``)."""
        return arm_compiled.arm_arrays(*self._arrays, arm.jq, arm.dofs, arm.chain, arm.root,
                                       arm.pos_adr, arm.quat_adr, arm.bodies, arm.grav_mask,
                                       arm.mass_idx, mass)

    def step(self, nstep: int, current_sensors: bool = True) -> None:
        self._batch.step(nstep=nstep, stage=_STAGE_VEL if current_sensors else _STAGE_NONE)

    def diverged(self, max_qvel: float) -> torch.Tensor | None:
        # numpy reductions here: a few microseconds, against ~10 for the torch equivalents.
        speed = np.abs(self._qvel_np).max(initial=0.0)  # NaN propagates
        if not self._warnings.any() and speed <= max_qvel:
            return None
        bad = self._warnings.any(axis=1) | ~(np.abs(self._qvel_np) <= max_qvel).all(axis=1)
        return torch.from_numpy(bad)

    def reset(self, env_ids: torch.Tensor) -> None:
        self._batch.reset(_ids(env_ids), stage=_STAGE_NONE)

    def forward(self, env_ids: torch.Tensor) -> None:
        self._batch.forward(_ids(env_ids), stage=_STAGE_VEL)

    def model_field(self, name: str) -> torch.Tensor:
        if name not in self._fields:
            self._fields[name] = _view(self._batch.expand(name))
        return self._fields[name]

    def commit_model(self, env_ids: torch.Tensor) -> None:
        self._batch.set_const(_ids(env_ids))

    def write_data(self, env: int, data: mujoco.MjData) -> None:
        self._batch.get_data(env, data)


def _ids(env_ids: torch.Tensor) -> np.ndarray:
    """Sorted unique int32 ids, as the batch wants them."""
    return np.ascontiguousarray(env_ids.detach().cpu().numpy(), dtype=np.int32)
