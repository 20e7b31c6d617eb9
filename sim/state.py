"""SimState: the batched view of the simulation that task functions read and write.

Task terms are pure functions ``(state, cfg) -> Tensor[E]``; they read joint state, sensors
and task buffers from here. Tensors are live views of the backend's state (no copies on the
step path), batch first, in the backend's dtype (float64 on CPU, float32 on Warp).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import mujoco
import numpy as np
import torch

from robot_rl.controllers.arm_model import home_data
from robot_rl.controllers.arm_state import ArmState
from robot_rl.controllers.ik import quat_to_mat
from robot_rl.robots import RobotSpec
from robot_rl.sim.backends.arm_compiled import ArmIndex, arm_index
from robot_rl.sim.backends.base import Backend
from robot_rl.sim.backends.kinematics import dense_index

if TYPE_CHECKING:  # the task config imports this module
    from robot_rl.sim.tasks.safety_costs import SafetyCostConfig


@dataclasses.dataclass(frozen=True)
class Limits:
    """Robot limits and safety thresholds as tensors, precomputed once per env.

    Bounds are stored as centre and half-width so a violation test is ``|x - mid| > half``.
    """

    home: torch.Tensor  # (n,)
    q_min: torch.Tensor  # (n,)
    q_max: torch.Tensor  # (n,)
    qd_max: torch.Tensor  # (n,)
    q_soft_mid: torch.Tensor  # (n,) centre of the joint range
    q_soft_half: torch.Tensor  # (n,) half range minus the safety margin
    qd_soft: torch.Tensor  # (n,) velocity threshold of the velocity cost
    ws_mid: torch.Tensor  # (3,) workspace box centre
    ws_half: torch.Tensor  # (3,) workspace box half extents
    table_force_sq: float  # squared contact-force threshold [N^2]
    ee_home_rot: torch.Tensor  # (3, 3) end-effector orientation at the home pose
    ee_home_pos: torch.Tensor  # (3,) end-effector position at the home pose


def limits_of(robot: RobotSpec, safety: SafetyCostConfig, model: mujoco.MjModel,
              device: torch.device, dtype: torch.dtype) -> Limits:
    """The ``Limits`` of ``robot`` in ``model`` under the task's safety thresholds."""
    def t(x: object) -> torch.Tensor:
        return torch.as_tensor(np.asarray(x, dtype=np.float64), dtype=dtype, device=device)

    q_min, q_max = np.asarray(robot.q_min), np.asarray(robot.q_max)
    ws_lo, ws_hi = np.asarray(safety.workspace_lo), np.asarray(safety.workspace_hi)
    data = home_data(model, robot)
    return Limits(
        home=t(robot.home), q_min=t(q_min), q_max=t(q_max), qd_max=t(robot.qd_max),
        q_soft_mid=t((q_min + q_max) / 2),
        q_soft_half=t((q_max - q_min) / 2 - safety.joint_limit_margin),
        qd_soft=t(np.asarray(robot.qd_max) * safety.velocity_fraction),
        ws_mid=t((ws_lo + ws_hi) / 2), ws_half=t((ws_hi - ws_lo) / 2),
        table_force_sq=safety.table_force_limit ** 2,
        ee_home_rot=t(data.site(robot.ee_site).xmat.reshape(3, 3)),
        ee_home_pos=t(data.site(robot.ee_site).xpos),
    )


def slice_or_index(ids: list[int], device: torch.device | str = "cpu") -> slice | torch.Tensor:
    """A slice when the indices are contiguous (a view), else an index tensor (a gather)."""
    if ids and ids == list(range(ids[0], ids[0] + len(ids))):
        return slice(ids[0], ids[0] + len(ids))
    return torch.tensor(ids, dtype=torch.long, device=device)


@runtime_checkable
class _ArmArrays(Protocol):
    """A backend that computes an arm's state in one compiled call (the CPU backend)."""

    def chain_mask(self, body_id: int) -> torch.Tensor: ...

    def arm_arrays(self, arm: ArmIndex, mass: bool) -> tuple[np.ndarray, ...]: ...


class SimState:
    """Live batched views of one env's simulations (E = num_envs)."""

    def __init__(self, backend: Backend, robot: RobotSpec, limits: Limits, act_dim: int,
                 control_dt: float):
        model = backend.model
        self.control_dt = control_dt
        """Seconds per control step."""
        self.backend = backend
        self.model = model
        self.robot = robot
        self.limits = limits
        self.num_envs = backend.num_envs
        self.device = backend.device
        self.dtype = backend.dtype
        E = self.num_envs
        joints = [model.joint(j) for j in robot.joint_names]
        self._jq = slice_or_index([int(j.qposadr[0]) for j in joints], self.device)
        self.joint_dofs = [int(j.dofadr[0]) for j in joints]
        """Degree-of-freedom index of each arm joint (columns of qvel and Jacobians)."""
        self._jv = slice_or_index(self.joint_dofs, self.device)
        self._gq: slice | torch.Tensor | None = None
        if robot.gripper is not None:
            self._gq = slice_or_index(
                [int(model.joint(j).qposadr[0]) for j in robot.gripper.joints], self.device)
        self.sensors: dict[str, torch.Tensor] = {}
        for i in range(model.nsensor):
            s = model.sensor(i)
            adr, dim = int(s.adr[0]), int(s.dim[0])
            self.sensors[s.name] = backend.sensordata[:, adr:adr + dim]
        self.buffers: dict[str, torch.Tensor] = {}
        """Task-owned per-env tensors (targets, goals), (E, k) each."""
        self.action = torch.zeros(E, act_dim, device=self.device)
        """(E, A) action applied at the last step (after the NaN guard and the delay)."""
        self.prev_action = torch.zeros(E, act_dim, device=self.device)
        """(E, A) action applied at the step before."""
        self.episode_step = torch.zeros(E, dtype=torch.long, device=self.device)
        self.shield_active = torch.zeros(E, dtype=torch.bool, device=self.device)
        """(E,) whether a shield layer reshaped the last control step's motion (one of
        ``MOTION_LAYERS``: workspace, joint limits and speeds, torque, floor; the ``shield``
        reward term; on a robot, the observation mirror is told)."""
        self._ee_body = int(model.site(robot.ee_site).bodyid[0])
        self._arm_bodies = [int(j.bodyid[0]) for j in joints]
        self._arm_index: ArmIndex | None = None
        """The arm in the backend's numpy arrays (a backend with ``arm_arrays``: the CPU)."""
        self._arm_backend: _ArmArrays | None = None
        """The backend, where it has ``arm_arrays`` and the arm its end-effector sensors."""
        if isinstance(backend, _ArmArrays) and "ee_pos" in self.sensors \
                and "ee_quat" in self.sensors:
            self._arm_backend = backend
            self._arm_index = arm_index(
                model, [int(j.qposadr[0]) for j in joints], self.joint_dofs, self._ee_body,
                backend.chain_mask(self._ee_body).cpu().numpy(), self._arm_bodies,
                dense_index(model, self.joint_dofs).numpy())

    # -- joint state -----------------------------------------------------------------------

    @property
    def qpos(self) -> torch.Tensor:
        """(E, nq) full generalized positions."""
        return self.backend.qpos

    @property
    def qvel(self) -> torch.Tensor:
        """(E, nv) full generalized velocities."""
        return self.backend.qvel

    @property
    def ctrl(self) -> torch.Tensor:
        """(E, nu) actuator controls."""
        return self.backend.ctrl

    @property
    def joint_pos(self) -> torch.Tensor:
        """(E, n) arm joint positions."""
        return self.backend.qpos[:, self._jq]

    @property
    def joint_vel(self) -> torch.Tensor:
        """(E, n) arm joint velocities."""
        return self.backend.qvel[:, self._jv]

    @property
    def gripper_pos(self) -> torch.Tensor:
        """(E, k) finger joint positions."""
        if self._gq is None:
            raise AttributeError(f"robot {self.robot.name!r} has no gripper")
        return self.backend.qpos[:, self._gq]

    # -- lookups for resets ----------------------------------------------------------------

    def qpos_slice(self, joint: str) -> slice:
        """Columns of ``qpos`` that hold one joint (7 for a free joint, 1 for a hinge)."""
        j = self.model.joint(joint)
        width = {mujoco.mjtJoint.mjJNT_FREE: 7, mujoco.mjtJoint.mjJNT_BALL: 4}.get(
            mujoco.mjtJoint(int(j.type[0])), 1)
        return slice(int(j.qposadr[0]), int(j.qposadr[0]) + width)

    def qvel_slice(self, joint: str) -> slice:
        """Columns of ``qvel`` that hold one joint (6 for a free joint, 1 for a hinge)."""
        j = self.model.joint(joint)
        width = {mujoco.mjtJoint.mjJNT_FREE: 6, mujoco.mjtJoint.mjJNT_BALL: 3}.get(
            mujoco.mjtJoint(int(j.type[0])), 1)
        return slice(int(j.dofadr[0]), int(j.dofadr[0]) + width)

    def mocap_index(self, body: str) -> int:
        """Row of ``backend.mocap_pos`` of a mocap body (task markers)."""
        return int(self.model.body(body).mocapid[0])

    def set_joint_pos(self, env_ids: torch.Tensor, q: torch.Tensor) -> None:
        """Write arm joint positions (n_ids, n) of some envs."""
        qpos = self.backend.qpos
        if isinstance(self._jq, slice):
            qpos[env_ids, self._jq] = q.to(qpos.dtype)
        else:
            qpos[env_ids[:, None], self._jq[None, :]] = q.to(qpos.dtype)

    # -- kinematics ------------------------------------------------------------------------

    def ee_jacobian(self) -> torch.Tensor:
        """(E, 6, n) Jacobian of the end-effector site (linear rows, then angular) over the
        arm joints, at the current state."""
        jacp, jacr = self.backend.jacobian(self._ee_body, self.sensors["ee_pos"])
        jac = torch.cat([jacp, jacr], dim=1)[:, :, self.joint_dofs]
        return jac.to(device=self.device, dtype=self.dtype)

    def arm_state(self, mass: bool = False, numpy: bool = False) -> ArmState:
        """The arm's state for controllers and the shield (with the mass matrix and the drift
        forces if asked: torque controllers need them); ``numpy``: as numpy arrays (on the
        CPU backend from one compiled call, ``backends.arm_compiled``)."""
        if numpy and self._arm_index is not None and self._arm_backend is not None:
            q, qd, ee_pos, ee_rot, jac, gravity, link_pos, link_rot, m, drift = \
                self._arm_backend.arm_arrays(self._arm_index, mass)
            return ArmState(q=q, qd=qd, ee_pos=ee_pos, ee_rot=ee_rot, jac=jac,
                            mass=m if mass else None, drift=drift if mass else None,
                            gravity=gravity, link_pos=link_pos, link_rot=link_rot)
        state = self._arm_state_views(mass)
        return state.numpy() if numpy else state

    def _arm_state_views(self, mass: bool) -> ArmState:
        """``arm_state`` from the backend's views, as torch operations (either backend)."""
        link_pos, link_rot = self.backend.body_poses(self._arm_bodies)
        return ArmState(
            q=self.joint_pos, qd=self.joint_vel, ee_pos=self.sensors["ee_pos"],
            ee_rot=quat_to_mat(self.sensors["ee_quat"]), jac=self.ee_jacobian(),
            mass=self.backend.mass_matrix(self.joint_dofs) if mass else None,
            drift=self.backend.drift_force(self.joint_dofs) if mass else None,
            gravity=self.backend.gravity_compensation(self.joint_dofs),
            link_pos=link_pos.to(self.dtype), link_rot=link_rot.to(self.dtype))
