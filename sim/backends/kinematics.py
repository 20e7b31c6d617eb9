"""Jacobians, mass matrices and drift forces from a backend's live position-stage arrays.

Both backends expose the same MuJoCo outputs as batched torch views (``cdof``,
``subtree_com``, the CSR mass matrix ``M``, ``qfrc_bias``/``qfrc_passive``/``qfrc_gravcomp``),
so the arithmetic on them is written once here, in torch, and runs on CPU or GPU tensors.
"""

from __future__ import annotations

import mujoco
import torch

from robot_rl.errors import ConfigError


class ViewKinematics:
    """Mixin: ``jacobian``, ``drift_force`` and ``mass_matrix`` from live views.

    Subclasses set, batch first (E = num_envs): ``_cdof`` (E, nv, 6) motion axes (angular,
    then linear), ``_subtree_com`` (E, nbody, 3), ``_mass`` (E, nC) the mass matrix in
    MuJoCo's CSR layout, ``_bias``/``_passive``/``_gravcomp`` (E, nv), ``_xpos`` (E, nbody,
    3) and ``_xmat`` (E, nbody, 9 or 3, 3) body poses, and ``model``,
    ``dtype``, ``device``.
    """

    model: mujoco.MjModel
    dtype: torch.dtype
    device: torch.device
    _cdof: torch.Tensor
    _subtree_com: torch.Tensor
    _mass: torch.Tensor
    _bias: torch.Tensor
    _passive: torch.Tensor
    _gravcomp: torch.Tensor
    _xpos: torch.Tensor
    _xmat: torch.Tensor

    def _init_kinematics(self) -> None:
        self._chains: dict[int, torch.Tensor] = {}
        self._mass_index: dict[tuple[int, ...], torch.Tensor] = {}
        self._gravcomp_mask: dict[tuple[int, ...], torch.Tensor] = {}
        self._body_index: dict[tuple[int, ...], torch.Tensor] = {}

    def jacobian(self, body_id: int, point: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        # mj_jac from the step's outputs: for each dof on the body's chain, the angular part
        # of cdof, and its linear part moved from the subtree's centre of mass to the point.
        chain = self.chain_mask(body_id)  # (nv,) 1 on the chain, else 0
        root = int(self.model.body_rootid[body_id])
        ang, lin = self._cdof[:, :, :3], self._cdof[:, :, 3:]
        arm = (point.to(self.dtype) - self._subtree_com[:, root])[:, None, :]  # (E, 1, 3)
        jacp = (lin + torch.linalg.cross(ang, arm.expand_as(ang), dim=2)) * chain[:, None]
        return jacp.transpose(1, 2), (ang * chain[:, None]).transpose(1, 2)

    def body_poses(self, body_ids: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        key = tuple(body_ids)
        if key not in self._body_index:
            self._body_index[key] = torch.tensor(body_ids, dtype=torch.long, device=self.device)
        idx = self._body_index[key]
        # index_select, not x[:, idx]: on the CPU that advanced index of the (E, nbody, 9)
        # view runs as a parallel loop whose OpenMP workers then spin on the core MuJoCo's
        # threads step on (1.5 ms per step at 64 envs)
        pos = self._xpos.index_select(1, idx)
        rot = self._xmat.index_select(1, idx).reshape(pos.shape[0], len(body_ids), 3, 3)
        return pos, rot

    def chain_mask(self, body_id: int) -> torch.Tensor:
        """(nv,) 1 for the dofs that move body ``body_id`` (its ancestors'), else 0."""
        if body_id not in self._chains:
            m = self.model
            ancestors = {body_id}
            b = body_id
            while b > 0:
                b = int(m.body_parentid[b])
                ancestors.add(b)
            mask = [float(int(m.dof_bodyid[j]) in ancestors) for j in range(m.nv)]
            self._chains[body_id] = torch.tensor(mask, dtype=self.dtype, device=self.device)
        return self._chains[body_id]

    def drift_force(self, dofs: list[int]) -> torch.Tensor:
        return self._passive[:, dofs] - self._bias[:, dofs] + self.gravity_compensation(dofs)

    def gravity_compensation(self, dofs: list[int]) -> torch.Tensor:
        key = tuple(dofs)
        if key not in self._gravcomp_mask:  # 1 where gravity compensation is actuator-side
            comp = self.model.jnt_actgravcomp[self.model.dof_jntid[dofs]]
            self._gravcomp_mask[key] = torch.as_tensor(comp, dtype=self.dtype, device=self.device)
        return self._gravcomp[:, dofs] * self._gravcomp_mask[key]

    def mass_matrix(self, dofs: list[int]) -> torch.Tensor:
        key = tuple(dofs)
        if key not in self._mass_index:
            self._mass_index[key] = dense_index(self.model, dofs).to(self.device)
        idx = self._mass_index[key]  # (k, k); index_select as in body_poses
        return self._mass.index_select(1, idx.reshape(-1)).reshape(-1, *idx.shape)


def dense_index(model: mujoco.MjModel, dofs: list[int]) -> torch.Tensor:
    """(k, k) positions in MjData.M (lower triangle, CSR) of the mass matrix over ``dofs``."""
    where: dict[tuple[int, int], int] = {}
    for i in range(model.nv):
        start = int(model.M_rowadr[i])
        for k in range(int(model.M_rownnz[i])):
            where[(i, int(model.M_colind[start + k]))] = start + k
    idx = [[where.get((max(a, b), min(a, b)), -1) for b in dofs] for a in dofs]
    if any(-1 in row for row in idx):
        raise ConfigError("mass_matrix: the dofs must lie on one kinematic chain")
    return torch.tensor(idx, dtype=torch.long)
