"""The physics backend interface shared by the CPU (MuJoCo threads) and GPU (MuJoCo Warp) paths.

A backend owns ``num_envs`` simulations of one compiled model and exposes their state as live
torch tensors, batch first. The tensors are views: ``step``/``reset``/``forward`` update them in
place, and writes to state tensors (``qpos``, ``qvel``, ``ctrl``, ``mocap_pos``) are the
simulations' state at the next call. Task code reads and writes only these tensors, so it runs
unchanged on every backend.

Shapes (E = num_envs):
    qpos (E, nq), qvel (E, nv), ctrl (E, nu), mocap_pos (E, nmocap, 3), sensordata (E, nsensordata),
    time (E,)
"""

from __future__ import annotations

import abc

import mujoco
import torch

# MuJoCo warnings that mean the integration blew up (MuJoCo then resets that simulation):
# BADQPOS, BADQVEL, BADQACC, which are consecutive, so a slice of the counters is a live view.
UNSTABLE_WARNINGS = slice(int(mujoco.mjtWarning.mjWARN_BADQPOS),
                          int(mujoco.mjtWarning.mjWARN_BADQACC) + 1)
assert UNSTABLE_WARNINGS.stop - UNSTABLE_WARNINGS.start == 3


class Backend(abc.ABC):
    """Batched physics of ``num_envs`` simulations of one model."""

    model: mujoco.MjModel
    """The nominal model (per-env parameters live in ``model_field`` tensors)."""
    num_envs: int
    device: torch.device
    dtype: torch.dtype
    """Floating dtype of the state tensors (float64 on CPU, float32 on Warp)."""

    qpos: torch.Tensor
    qvel: torch.Tensor
    ctrl: torch.Tensor
    mocap_pos: torch.Tensor
    sensordata: torch.Tensor
    time: torch.Tensor

    @abc.abstractmethod
    def step(self, nstep: int, current_sensors: bool = True) -> None:
        """Advance every simulation by ``nstep`` physics steps with ``ctrl`` held.

        With ``current_sensors``, position- and velocity-dependent sensors are recomputed at
        the new state; otherwise they keep the values of the last substep's mj_step, which
        describe the state before that substep.
        """

    @abc.abstractmethod
    def diverged(self, max_qvel: float) -> torch.Tensor | None:
        """Simulations that diverged since their last reset: MuJoCo flagged them unstable
        (bad qpos/qvel/qacc) or a joint speed is non-finite or above ``max_qvel``.

        Returns None when none did (the common case, checked cheaply), else an (E,) bool mask.
        """

    @abc.abstractmethod
    def reset(self, env_ids: torch.Tensor) -> None:
        """Reset simulations to the model defaults (qpos0, zero velocity, cleared warnings).

        Callers then write the reset state and call ``forward(env_ids)``.
        """

    @abc.abstractmethod
    def forward(self, env_ids: torch.Tensor) -> None:
        """Recompute derived quantities (sensors) of ``env_ids`` from their state."""

    @abc.abstractmethod
    def model_field(self, name: str) -> torch.Tensor:
        """Live (E, ...) per-env values of an MjModel field (``body_mass``, ``dof_damping`` ...).

        Writes take effect at the next step; call ``commit_model`` after writing fields that
        MuJoCo's derived constants depend on (masses, inertias, armature).
        """

    @abc.abstractmethod
    def commit_model(self, env_ids: torch.Tensor) -> None:
        """Recompute derived model constants of ``env_ids`` after model-field writes."""

    @abc.abstractmethod
    def jacobian(self, body_id: int, point: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Translational and rotational Jacobians (E, 3, nv) of world points (E, 3) on a body,
        at the current state (position stage computed by the last step/forward)."""

    @abc.abstractmethod
    def body_poses(self, body_ids: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        """World positions (E, L, 3) and orientations (E, L, 3, 3) of bodies, at the current
        state (position stage)."""

    @abc.abstractmethod
    def drift_force(self, dofs: list[int]) -> torch.Tensor:
        """(E, k) generalized forces on ``dofs`` besides the actuators' commands: passive
        forces minus Coriolis/centrifugal terms, with the actuator-side gravity compensation
        counted in (qfrc_passive - qfrc_bias + qfrc_gravcomp), at the current state."""

    @abc.abstractmethod
    def gravity_compensation(self, dofs: list[int]) -> torch.Tensor:
        """(E, k) the gravity compensation the actuators of ``dofs`` add (qfrc_gravcomp on
        joints whose compensation is actuator-side, else 0), at the current state."""

    @abc.abstractmethod
    def mass_matrix(self, dofs: list[int]) -> torch.Tensor:
        """(E, k, k) joint-space mass matrix restricted to ``dofs``, at the current state."""

    @abc.abstractmethod
    def write_data(self, env: int, data: mujoco.MjData) -> None:
        """Copy one simulation's state into ``data`` (an MjData of ``model``), for rendering."""
