"""Domain randomization: per-env physical parameters, sampled at every reset.

Scales are drawn uniformly and independently per element (per link, per geom, per joint, per
actuator) and multiply the nominal model values. Observation noise and action delay are
applied by the env. All ranges live in ``DRConfig``, part of the task config; presets:

    off      nominal physics, no noise, no delay
    default  +-10% masses and gains, +-20% friction and damping, 1 step of delay at most
    strong   +-30% masses, x0.5-1.5 friction, x0.5-2 damping, up to 3 steps of delay
"""

from __future__ import annotations

import dataclasses

import torch

from robot_rl.sim.backends.base import Backend
from robot_rl.sim.configs import DRConfig, Range

SETCONST_FIELDS = frozenset({"body_mass", "body_inertia", "dof_armature"})
"""Model fields MuJoCo derives constants from (``mj_setConst`` after writing them)."""


@dataclasses.dataclass(frozen=True)
class _Group:
    """One randomized model field: which elements, which columns, which range.

    Groups with the same ``draw`` share one sample per element (a link's mass and inertia;
    an actuator's gain and bias).
    """

    field: str
    rows: torch.Tensor  # (R,) element indices along the field's first model axis
    cols: torch.Tensor | None  # (C,) columns of a 2-D field, or None for a 1-D field
    scale: Range
    draw: str


class DomainRandomizer:
    """Writes sampled parameters into the backend's per-env model fields at reset."""

    def __init__(self, cfg: DRConfig, backend: Backend, *, robot_bodies: list[int],
                 robot_dofs: list[int], robot_actuators: list[int]):
        self.backend = backend
        geoms = list(range(backend.model.ngeom))
        candidates = [
            ("body_mass", robot_bodies, None, cfg.link_mass, "mass"),
            ("body_inertia", robot_bodies, (0, 1, 2), cfg.link_mass, "mass"),
            ("geom_friction", geoms, (0,), cfg.friction, "friction"),
            ("dof_damping", robot_dofs, None, cfg.joint_damping, "damping"),
            ("dof_armature", robot_dofs, None, cfg.armature, "armature"),
            ("actuator_gainprm", robot_actuators, (0,), cfg.actuator_gain, "gain"),
            ("actuator_biasprm", robot_actuators, (1, 2), cfg.actuator_gain, "gain"),
        ]
        dev = backend.device

        def index(values: list[int] | tuple[int, ...] | None) -> torch.Tensor | None:
            return None if values is None else torch.tensor(values, dtype=torch.long, device=dev)

        # Only randomized fields are made per-env (saves memory and set_const calls).
        self.groups = [
            _Group(f, index(rows), index(cols), scale, draw)  # type: ignore[arg-type]
            for f, rows, cols, scale, draw in candidates
            if scale != (1.0, 1.0) and rows
        ]
        self._nominal = {g.field: self._read(g, torch.zeros(1, dtype=torch.long, device=dev))[0]
                         for g in self.groups}
        self._commit = any(g.field in SETCONST_FIELDS for g in self.groups)

    def _index(self, g: _Group, env_ids: torch.Tensor) -> tuple[torch.Tensor, ...]:
        if g.cols is None:
            return env_ids[:, None], g.rows[None, :]
        return env_ids[:, None, None], g.rows[None, :, None], g.cols[None, None, :]

    def _read(self, g: _Group, env_ids: torch.Tensor) -> torch.Tensor:
        return self.backend.model_field(g.field)[self._index(g, env_ids)].clone()

    def apply(self, env_ids: torch.Tensor, gen: torch.Generator) -> None:
        """Sample and write the parameters of ``env_ids`` (a LongTensor of env indices)."""
        draws: dict[str, torch.Tensor] = {}
        for g in self.groups:
            nominal = self._nominal[g.field]  # (R,) or (R, C)
            if g.draw not in draws:
                draws[g.draw] = torch.rand((len(env_ids), nominal.shape[0]), generator=gen,
                                           device=nominal.device, dtype=nominal.dtype)
            lo, hi = g.scale
            scale = lo + (hi - lo) * draws[g.draw]  # (n, R)
            values = nominal * (scale if g.cols is None else scale[..., None])
            self.backend.model_field(g.field)[self._index(g, env_ids)] = values
        if self._commit:
            self.backend.commit_model(env_ids)
