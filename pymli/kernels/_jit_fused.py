"""numba-compiled tiny layers: :class:`pymli.kernels.conv_prepared.FusedLayer`'s products and output
stage as one compiled call, loaded through :func:`pymli.kernels._jit.compiled` (only when numba is
installed: an optional dependency).

Like :mod:`pymli.kernels._jit_numba`: ``nopython``, ``nogil``, ``cache=True`` and no ``fastmath``. The
functions take FusedLayer's constant matrices and compute the same float64 operations as its NumPy
form, element by element: every product and partial sum there is an exact float64 (FusedLayer's
docstring says why, for any summation order, a fused multiply-add included), so the sums here are
the same numbers, and the roundings (``floor``, ``rint``: half to even), clamps (``min(max(v, lo), hi)``,
NumPy's ``clip``) and the final cast of integral values in the container's range are the same
operations. ``tests/kernels/test_tiny_paths.py`` compares both forms.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["UNTYPED", "fused_fx", "fused_sa8", "warm_up"]

UNTYPED = (TypeError, numba.core.errors.NumbaError)
"""What a call raises for argument types the functions do not take (numba's typing errors)."""

_JIT = {"nogil": True, "cache": True, "fastmath": False, "boundscheck": False}


@numba.njit(inline="always", **_JIT)
def _first(x, w1):  # pragma: no cover - compiled
    """``[x, 1] @ w1``: the last row of ``w1`` (times the one) plus ``x[i] * w1[i]`` row by row."""
    n = x.shape[0]
    c1 = w1.shape[1]
    y = np.empty(c1)
    for j in range(c1):
        y[j] = w1[n, j]
    for i in range(n):
        xi = np.float64(x[i])
        for j in range(c1):
            y[j] += xi * w1[i, j]
    return y


@numba.njit(**_JIT)
def fused_sa8(x, w1, w2, out, k):  # pragma: no cover - compiled
    """FusedLayer's sa8 form on the flat input ``x`` into the flat ``out`` (see ``FusedLayer._build``).

    Args:
        x: (n,) container integers; w1: (n + 1, C1) and w2: (C1, C2) float64 constants; out: (C2,)
            integers. k: float64 ``[rnd1, up, clip16, lo, hi, lz, hz, zf]`` (one array: fewer arguments
            for the dispatcher to type): round after the first product; ROUND_UP (else convergent);
            saturate the first rounding to 16 bits; the ROUND_UP clamp; the convergent clamp (around
            zero) and the output zero point added after it.
    """
    rnd1, up, clip16 = k[0] != 0.0, k[1] != 0.0, k[2] != 0.0
    lo, hi, lz, hz, zf = k[3], k[4], k[5], k[6], k[7]
    y = _first(x, w1)
    c1 = y.shape[0]
    if rnd1:
        for j in range(c1):
            y[j] = np.floor(y[j]) if up else np.rint(y[j])
    if clip16:  # the ones columns stay 1
        for j in range(c1):
            y[j] = min(max(y[j], -32768.0), 32767.0)
    c2 = w2.shape[1]
    z = np.zeros(c2)
    for i in range(c1):
        yi = y[i]
        for j in range(c2):
            z[j] += yi * w2[i, j]
    for j in range(c2):
        if up:
            out[j] = np.floor(min(max(z[j], lo), hi))
        else:
            out[j] = min(max(np.rint(z[j]), lz), hz) + zf


@numba.njit(**_JIT)
def fused_fx(x, w1, out, k):  # pragma: no cover - compiled
    """FusedLayer's MLI_FX form on the flat input ``x`` into the flat ``out`` (see ``FusedLayer._build_fx``):
    the product, the clamp to ``[lo, hi]`` (integers), then ``floor`` (``up``) or ``rint``; k: float64
    ``[up, lo, hi]``."""
    up, lo, hi = k[0] != 0.0, k[1], k[2]
    y = _first(x, w1)
    for j in range(y.shape[0]):
        v = min(max(y[j], lo), hi)
        out[j] = np.floor(v) if up else np.rint(v)


def warm_up() -> None:
    """Compile (or load from numba's cache) the argument types the capi calls pass: int8 / int16
    inputs into outputs of the same type."""
    for dt in (np.int8, np.int16):
        x, w1, w2, out = np.zeros(2, dt), np.zeros((3, 2)), np.zeros((2, 2)), np.zeros(2, dt)
        fused_sa8(x, w1, w2, out, np.zeros(8))
        fused_fx(x, w1, out, np.zeros(3))
