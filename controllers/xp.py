"""Array-namespace helpers: the controller and shield math runs on numpy or torch unchanged.

Training calls it with batched torch tensors (E, ...); the deploy loop calls it with numpy
arrays of one sample (1, ...), where each operation costs about a microsecond instead of the
several microseconds of a torch dispatch. The math is written once, against the functions that
numpy (>= 2) and torch share by name (``where``, ``sqrt``, ``isfinite``, ``stack``,
``concatenate``, ``linalg.solve``, ``linalg.cross``), operators, and the helpers below.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
import torch

Array = Any
"""A numpy array or a torch tensor; the functions here keep the kind they are given."""


def namespace(x: Array) -> ModuleType:
    """``torch`` for tensors, ``numpy`` for anything else."""
    return torch if isinstance(x, torch.Tensor) else np


def to_numpy(x: Array | None) -> Array | None:
    """A CPU tensor as a zero-copy numpy view; numpy arrays and None pass through."""
    return x.numpy() if isinstance(x, torch.Tensor) else x


def amax(x: Array, axis: int) -> Array:
    """Maximum over one axis (torch's ``max`` returns indices too; ``amax`` does not)."""
    return x.amax(axis) if isinstance(x, torch.Tensor) else x.max(axis)


def clip(x: Array, lo: Array | float | None = None, hi: Array | float | None = None) -> Array:
    """Elementwise clip to [lo, hi] (either may be None); bounds broadcast against ``x``.

    numpy's ``clip`` goes through a Python wrapper that costs microseconds per call; the
    ufuncs do not.
    """
    if isinstance(x, torch.Tensor):
        return x.clamp(lo, hi)
    if lo is not None:
        x = np.maximum(x, lo)
    if hi is not None:
        x = np.minimum(x, hi)
    return x


def norm(x: Array, axis: int = -1, keepdims: bool = False) -> Array:
    """Euclidean norm over one axis."""
    sq = (x * x).sum(axis, keepdims=keepdims) if isinstance(x, np.ndarray) else \
        (x * x).sum(axis, keepdim=keepdims)
    return namespace(x).sqrt(sq)


def amin(x: Array, axis: int) -> Array:
    """Minimum over one axis."""
    return x.amin(axis) if isinstance(x, torch.Tensor) else x.min(axis)


def row_index(x: Array) -> Array:
    """(E,) 0 .. E-1 for the rows of ``x`` (E, ...), to pick one entry per row."""
    if isinstance(x, torch.Tensor):
        return torch.arange(x.shape[0], device=x.device)
    return np.arange(x.shape[0])


def cumsum(x: Array, axis: int) -> Array:
    """Running sum along one axis."""
    return x.cumsum(axis) if isinstance(x, torch.Tensor) else np.cumsum(x, axis)


def index_like(x: Array, idx: np.ndarray) -> Array:
    """Integer indices ``idx`` as an index array of ``x``'s kind (and device)."""
    if isinstance(x, torch.Tensor):
        return torch.as_tensor(idx, dtype=torch.long, device=x.device)
    return idx


def flatnonzero(mask: Array) -> Array:
    """Indices (k,) of the true entries of a 1-d mask."""
    if isinstance(mask, torch.Tensor):
        return mask.nonzero().squeeze(1)
    return np.flatnonzero(mask)


def clamp_norm(v: Array, max_norm: float) -> Array:
    """Rows of ``v`` (..., k) scaled down to a Euclidean norm of at most ``max_norm``."""
    n = norm(v, keepdims=True)
    return v * (max_norm / clip(n, lo=max_norm))


def eye_like(x: Array, n: int) -> Array:
    """(n, n) identity with the dtype (and device) of ``x``."""
    if isinstance(x, torch.Tensor):
        return torch.eye(n, dtype=x.dtype, device=x.device)
    return np.eye(n, dtype=x.dtype)


def like(x: Array, value: Any) -> Array:
    """``value`` (array-like) as an array of the same kind, dtype and device as ``x``."""
    if isinstance(x, torch.Tensor):
        return torch.as_tensor(np.asarray(value), dtype=x.dtype, device=x.device)
    return np.asarray(value, dtype=x.dtype)


def cast(x: Array, ref: Array) -> Array:
    """``x`` (same kind) in the dtype of ``ref``; no copy when it already is."""
    return x.to(ref.dtype) if isinstance(x, torch.Tensor) else x.astype(ref.dtype, copy=False)


def mT(x: Array) -> Array:
    """Transpose of the last two axes (batched matrices)."""
    return x.swapaxes(-1, -2)


def matvec(a: Array, v: Array) -> Array:
    """(..., m, n) @ (..., n) -> (..., m)."""
    return (a @ v[..., None])[..., 0]


def solve(a: Array, b: Array) -> Array:
    """Batched linear solve of (..., n, n) systems for (..., n, k) right-hand sides."""
    return namespace(a).linalg.solve(a, b)


def shrink_to_caps(dq: Array, caps: Array) -> Array:
    """Scale each row of ``dq`` (E, n) down, keeping its direction, so |dq_j| <= caps_j."""
    peak = clip(amax(abs(dq) / caps, -1)[..., None], lo=1.0)
    return dq / peak


class Constants:
    """Named numpy constants, converted once per array kind, dtype and device and cached:
    ``consts(x)["kp"]`` is ``kp`` as an array like ``x``."""

    def __init__(self, **arrays: Any):
        self._np = {k: np.asarray(v, dtype=np.float64) for k, v in arrays.items()}
        self._cache: dict[tuple, dict[str, Array]] = {}

    def __call__(self, x: Array) -> dict[str, Array]:
        key = (type(x), x.dtype, getattr(x, "device", None))
        if key not in self._cache:
            self._cache[key] = {k: like(x, v) for k, v in self._np.items()}
        return self._cache[key]

    def numpy(self, name: str) -> np.ndarray:
        """The float64 numpy value of one constant."""
        return self._np[name]
