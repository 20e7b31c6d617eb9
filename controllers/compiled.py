"""Shared pieces of the compiled control path (``osc_compiled``, ``shield_compiled``,
``joint_targets_compiled``, ``targets_compiled``): which inputs take it, how they are handed
over, the guard points' vertical speeds both shield kernels need, and the small linear
algebra of the kernels, as numba loops (numba's own ``np.dot`` and ``np.linalg`` need
scipy's BLAS; these matrices are 7x7 and smaller).
"""

from __future__ import annotations

from typing import Any, TypeGuard

import numba
import numpy as np


def is_f64(x: Any) -> TypeGuard[np.ndarray]:
    """``x`` is a float64 numpy array: the compiled path's input (torch tensors and float32
    take the array reference)."""
    return isinstance(x, np.ndarray) and x.dtype == np.float64


def arg(x: np.ndarray, dtype: type = np.float64) -> np.ndarray:
    """``x`` as the compiled functions' argument type: C-contiguous and writeable ``dtype`` (a
    read-only or strided array is another numba signature, compiled at its first call: in a
    control loop, a stall of seconds), copied only when it is not one already."""
    if x.flags.carray and x.dtype == dtype:  # carray: C-contiguous, aligned, writeable
        return x
    return np.array(x, dtype=dtype, order="C")


@numba.njit(nogil=True, cache=True)
def matvec(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """a (m, k) @ x (k,), summed in order over k."""
    m, k = a.shape
    out = np.zeros(m)
    for i in range(m):
        acc = 0.0
        for j in range(k):
            acc += a[i, j] * x[j]
        out[i] = acc
    return out


@numba.njit(nogil=True, cache=True)
def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a (m, k) @ b (k, p), summed in order over k (either may be a transposed view)."""
    m, k = a.shape
    p = b.shape[1]
    out = np.zeros((m, p))
    for i in range(m):
        for c in range(p):
            acc = 0.0
            for j in range(k):
                acc += a[i, j] * b[j, c]
            out[i, c] = acc
    return out


@numba.njit(nogil=True, cache=True)
def clip_vec(x: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> bool:
    """Clip x in place to [lo, hi] (max, then min, as ``xp.clip``); whether any entry moved."""
    hit = False
    for i in range(x.shape[0]):
        y = min(max(x[i], lo[i]), hi[i])
        if y != x[i]:
            hit = True
        x[i] = y
    return hit


@numba.njit(nogil=True, cache=True)
def guard_dot(jac: np.ndarray, v: np.ndarray, link: np.ndarray, rx: np.ndarray,
              ry: np.ndarray, out: np.ndarray, run: np.ndarray) -> None:
    """out (K,) = each guard point's vertical speed for joint rates v (n,) (the shield's
    ``_Guard.dot``: the Jacobian's rows z, wx, wy summed over the joints up to each point's
    link); ``run`` (3, n) is scratch space."""
    n = v.shape[0]
    acc0 = acc1 = acc2 = 0.0
    for j in range(n):
        acc0 += jac[2, j] * v[j]
        acc1 += jac[3, j] * v[j]
        acc2 += jac[4, j] * v[j]
        run[0, j], run[1, j], run[2, j] = acc0, acc1, acc2
    for k in range(link.shape[0]):
        lk = link[k]
        out[k] = run[0, lk] + ry[k] * run[1, lk] - rx[k] * run[2, lk]


@numba.njit(nogil=True, cache=True, inline="always")
def _pivot(m: np.ndarray, c: int) -> int:
    """The row from c down with the largest |m[row, c]| (the first of equals)."""
    p = c
    for r in range(c + 1, m.shape[0]):
        if abs(m[r, c]) > abs(m[p, c]):
            p = r
    return p


@numba.njit(nogil=True, cache=True)
def solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x with a x = b for a small square a (Gaussian elimination, partial pivoting)."""
    n = a.shape[0]
    m = a.copy()
    x = b.copy()
    for c in range(n):
        p = _pivot(m, c)
        if p != c:
            for j in range(n):
                m[c, j], m[p, j] = m[p, j], m[c, j]
            x[c], x[p] = x[p], x[c]
        for r in range(c + 1, n):
            f = m[r, c] / m[c, c]
            for j in range(c, n):
                m[r, j] -= f * m[c, j]
            x[r] -= f * x[c]
    for c in range(n - 1, -1, -1):
        acc = x[c]
        for j in range(c + 1, n):
            acc -= m[c, j] * x[j]
        x[c] = acc / m[c, c]
    return x


@numba.njit(nogil=True, cache=True)
def inverse(a: np.ndarray) -> np.ndarray:
    """a^-1 for a small square a (Gauss-Jordan, partial pivoting)."""
    n = a.shape[0]
    m = a.copy()
    out = np.eye(n)
    for c in range(n):
        p = _pivot(m, c)
        if p != c:
            for j in range(n):
                m[c, j], m[p, j] = m[p, j], m[c, j]
                out[c, j], out[p, j] = out[p, j], out[c, j]
        f = 1.0 / m[c, c]
        for j in range(n):
            m[c, j] *= f
            out[c, j] *= f
        for r in range(n):
            if r != c:
                g = m[r, c]
                if g != 0.0:
                    for j in range(n):
                        m[r, j] -= g * m[c, j]
                        out[r, j] -= g * out[c, j]
    return out
