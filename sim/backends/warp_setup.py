"""MuJoCo Warp set-up: importing Warp with its kernel cache in a known folder, choosing the
device, sizing contact and constraint buffers from the scene, refusing unsupported features.

Kept apart from the backend so the pieces that need no simulation (sizing, device names,
feature checks) are plain functions with their own tests.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import mujoco

from robot_rl.errors import ConfigError

if TYPE_CHECKING:  # imported at run time by import_warp only, with its cache set first
    import warp

CACHE_ENV = "ROBOT_RL_WARP_CACHE"
"""Environment variable naming Warp's kernel cache folder."""
DEFAULT_CACHE = Path.home() / ".cache" / "robot_rl" / "warp"

_G = mujoco.mjtGeom
# The most contacts MuJoCo Warp's narrowphase makes for one geom pair, by geom types (the
# multi-point convex paths make up to 4 or 8). Pairs not listed take the largest, 8.
_PAIR_CONTACTS = {
    frozenset({_G.mjGEOM_SPHERE}): 1,
    frozenset({_G.mjGEOM_SPHERE, _G.mjGEOM_PLANE}): 1,
    frozenset({_G.mjGEOM_SPHERE, _G.mjGEOM_CAPSULE}): 1,
    frozenset({_G.mjGEOM_SPHERE, _G.mjGEOM_BOX}): 1,
    frozenset({_G.mjGEOM_SPHERE, _G.mjGEOM_CYLINDER}): 1,
    frozenset({_G.mjGEOM_SPHERE, _G.mjGEOM_ELLIPSOID}): 1,
    frozenset({_G.mjGEOM_CAPSULE}): 2,
    frozenset({_G.mjGEOM_CAPSULE, _G.mjGEOM_PLANE}): 2,
    frozenset({_G.mjGEOM_CAPSULE, _G.mjGEOM_BOX}): 2,
    frozenset({_G.mjGEOM_PLANE, _G.mjGEOM_BOX}): 4,
    frozenset({_G.mjGEOM_PLANE, _G.mjGEOM_CYLINDER}): 4,
    frozenset({_G.mjGEOM_CAPSULE, _G.mjGEOM_CYLINDER}): 4,
    frozenset({_G.mjGEOM_CYLINDER}): 4,
    frozenset({_G.mjGEOM_CYLINDER, _G.mjGEOM_BOX}): 4,
}
_MAX_PAIR_CONTACTS = 8
_EQ_ROWS = {mujoco.mjtEq.mjEQ_CONNECT: 3, mujoco.mjtEq.mjEQ_WELD: 6, mujoco.mjtEq.mjEQ_JOINT: 1,
            mujoco.mjtEq.mjEQ_TENDON: 1}


_initialized = False


def import_warp() -> tuple[ModuleType, ModuleType]:
    """``(warp, mujoco_warp)``, initialized once with the kernel cache in a known folder:
    ``$ROBOT_RL_WARP_CACHE``, else ``~/.cache/robot_rl/warp``. Compiled kernels are reused
    across runs, so only the first run on a machine pays the compile time."""
    try:
        import warp as wp
    except ImportError as err:
        raise ConfigError("backend 'warp' needs warp-lang and mujoco-warp: "
                          "pip install 'robot_rl[gpu]'") from err
    global _initialized
    if not _initialized:  # the cache folder must be set before Warp initializes
        cache = Path(os.environ.get(CACHE_ENV) or DEFAULT_CACHE)
        cache.mkdir(parents=True, exist_ok=True)
        wp.config.kernel_cache_dir = str(cache)
        wp.config.log_level = wp.LOG_WARNING
        wp.init()
        _initialized = True
    try:
        import mujoco_warp as mjw
    except ImportError as err:
        raise ConfigError("backend 'warp' needs mujoco-warp: pip install 'robot_rl[gpu]'") from err
    return wp, mjw


def warp_device(wp: ModuleType, device: str) -> warp.Device:
    """The Warp device for a torch device name (``cpu``, ``cuda``, ``cuda:1``), with a clear
    error when there is no such device."""
    name = "cuda:0" if device == "cuda" else device
    available = [str(d) for d in wp.get_devices()]
    if name not in available:
        hint = "" if name == "cpu" else " (no CUDA GPU here? device='cpu' runs Warp on the CPU)"
        raise ConfigError(f"Warp has no device {device!r}{hint}; available: {available}")
    return wp.get_device(name)


def to_mjw_model(mjw: ModuleType, model: mujoco.MjModel, what: str) -> Any:
    """``mjw.put_model`` (a ``mujoco_warp.Model``; mujoco_warp has no type information) with
    MuJoCo Warp's refusals turned into a ConfigError naming the unsupported features of
    ``what`` (a task and robot)."""
    try:
        return mjw.put_model(model)
    except (NotImplementedError, ValueError) as err:
        version = getattr(mjw, "__version__", "")
        raise ConfigError(f"MuJoCo Warp {version} cannot simulate {what}, which uses a feature "
                          f"it lacks: {err} (backend='cpu' simulates it)") from err


@dataclasses.dataclass(frozen=True)
class Capacity:
    """Per-world contact and constraint-row room of a scene on MuJoCo Warp."""

    nconmax: int
    """Contacts per world (the buffer, shared by all worlds, holds nconmax * num_envs)."""
    njmax: int
    """Constraint rows per world (a hard per-world limit)."""
    pairs: int
    """Geom pairs that can collide."""


def collision_pairs(model: mujoco.MjModel) -> list[tuple[int, int]]:
    """Geom pairs MuJoCo's filters let collide: the contype/conaffinity test, not on one
    welded body, not parent and child (unless the filter is disabled), not excluded, plus
    explicit pairs."""
    m = model
    excluded = {int(s) for s in m.exclude_signature[:m.nexclude]}
    filter_parent = not m.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_FILTERPARENT
    pairs = []
    for i in range(m.ngeom):
        for j in range(i + 1, m.ngeom):
            if not (m.geom_contype[i] & m.geom_conaffinity[j]
                    or m.geom_contype[j] & m.geom_conaffinity[i]):
                continue
            wi, wj = int(m.body_weldid[m.geom_bodyid[i]]), int(m.body_weldid[m.geom_bodyid[j]])
            if wi == wj:
                continue
            lo, hi = sorted((int(m.geom_bodyid[i]), int(m.geom_bodyid[j])))
            if (lo << 16) + hi in excluded:
                continue
            if filter_parent and wi and wj and (
                    int(m.body_weldid[m.body_parentid[wi]]) == wj
                    or int(m.body_weldid[m.body_parentid[wj]]) == wi):
                continue
            pairs.append((i, j))
    pairs += [(int(a), int(b)) for a, b in zip(m.pair_geom1, m.pair_geom2, strict=True)]
    return pairs


def scene_capacity(model: mujoco.MjModel) -> Capacity:
    """Contact and constraint room from the scene: every collidable geom pair at its most
    contacts, each contact with the rows its condim and friction cone need, plus one row
    per limited joint or tendon, the equality constraints' rows, and friction-loss rows.

    This bounds what a world can need for primitive geoms; meshes, height fields and SDFs
    are counted at 8 contacts a pair, which a pile-up can exceed (the backend then stops
    with an error naming the option to raise).
    """
    m = model
    elliptic = m.opt.cone == mujoco.mjtCone.mjCONE_ELLIPTIC
    contacts = rows = 0
    pairs = collision_pairs(m)
    for i, j in pairs:
        kinds = frozenset({_G(int(m.geom_type[i])), _G(int(m.geom_type[j]))})
        n = _PAIR_CONTACTS.get(kinds, _MAX_PAIR_CONTACTS)
        condim = max(int(m.geom_condim[i]), int(m.geom_condim[j]))
        per_contact = 1 if condim == 1 else (condim if elliptic else 2 * (condim - 1))
        contacts += n
        rows += n * per_contact
    rows += int(m.jnt_limited.sum()) + int(m.tendon_limited.sum())
    rows += sum(_EQ_ROWS.get(mujoco.mjtEq(int(t)), 6) for t in m.eq_type)
    rows += int((m.dof_frictionloss > 0).sum()) + int((m.tendon_frictionloss > 0).sum())
    return Capacity(nconmax=max(contacts, 1), njmax=max(rows, 1), pairs=len(pairs))


def capacity_or_override(model: mujoco.MjModel, nconmax: int | None,
                         njmax: int | None) -> Capacity:
    """The scene's capacity with the user's overrides (positive integers) in place."""
    cap = scene_capacity(model)
    for name, value in (("nconmax", nconmax), ("njmax", njmax)):
        if value is not None and (not isinstance(value, int) or value < 1):
            raise ConfigError(f"{name} must be a positive integer, got {value!r}")
    return Capacity(nconmax=nconmax or cap.nconmax, njmax=njmax or cap.njmax, pairs=cap.pairs)
