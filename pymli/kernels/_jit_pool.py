"""numba-compiled small pooling steps: the one-shape form of :meth:`pymli.kernels.pooling.PreparedPool.single`
(a model's pooling layer of a few thousand elements, whose time is the per-call cost of the NumPy calls of
:func:`~pymli.kernels.pooling.maxpool_hwc` / :func:`~pymli.kernels.pooling.avepool_hwc`), loaded through
:func:`pymli.kernels._jit.compiled` (only when numba is installed: an optional dependency).

Like :mod:`pymli.kernels._jit_fc`: ``nopython``, ``nogil``, ``cache=True``, no ``fastmath``. Each window
covers the same valid (non-padded) input elements as in the NumPy kernels: max pooling starts from the
type's minimum (the padded value, which never beats a valid element); average pooling sums the valid
elements in int64 (exact) and looks the output up in a table of the integer output stage
(:func:`pymli.arith.pool.avepool_output`) over every possible sum of the window's element count, built by
the caller: the outputs are those of the NumPy kernels (tests/kernels/test_pool_prepared.py).
"""

from __future__ import annotations

import numba
import numpy as np
from numba import types

__all__ = ["max_entry", "ave_entry", "warm_up"]

_JIT = {"nogil": True, "cache": True, "fastmath": False, "boundscheck": False}


@numba.njit(**_JIT)
def _span(i, stride, pad, k, n):  # pragma: no cover - compiled
    """The valid input positions ``[first, end)`` of window ``i`` along one axis (``n`` positions)."""
    first = i * stride - pad
    return max(first, 0), min(first + k, n)


@numba.njit(**_JIT)
def max_hwc(x, geo, out):  # pragma: no cover - compiled
    """``out[n, i, j, c]`` = the maximum of window (i, j) of ``x[n, ..., c]``.

    Args:
        x: (N, H, W, C) int8 / int16 input (any layout).
        geo: int64 (kernel_h, kernel_w, stride_h, stride_w, pad_top, pad_left, fill): fill is the padded
            positions' value (the type's minimum).
        out: (N, out_h, out_w, C) of ``x``'s dtype, written.
    """
    nb, h, w, ch = x.shape
    oh, ow = out.shape[1], out.shape[2]
    kh, kw, sh, sw, pt, pl, fill = geo[0], geo[1], geo[2], geo[3], geo[4], geo[5], geo[6]
    for b in range(nb):
        for i in range(oh):
            r0, r1 = _span(i, sh, pt, kh, h)
            for j in range(ow):
                q0, q1 = _span(j, sw, pl, kw, w)
                for c in range(ch):
                    out[b, i, j, c] = fill
                for r in range(r0, r1):
                    for q in range(q0, q1):
                        for c in range(ch):
                            v = x[b, r, q, c]
                            if v > out[b, i, j, c]:
                                out[b, i, j, c] = v


@numba.njit(**_JIT)
def ave_hwc(x, geo, base, lut, out):  # pragma: no cover - compiled
    """``out[n, i, j, c] = lut[base[i, j] + sum of window (i, j) of x[n, ..., c]]``.

    Args:
        x: (N, H, W, C) int8 / int16 input (any layout).
        geo: int64 (kernel_h, kernel_w, stride_h, stride_w, pad_top, pad_left).
        base: (out_h, out_w) int64: where window (i, j)'s table starts, minus its smallest possible sum.
        lut: the output of every possible sum, per window element count (the output's dtype).
        out: (N, out_h, out_w, C), written.
    """
    nb, h, w, ch = x.shape
    oh, ow = out.shape[1], out.shape[2]
    kh, kw, sh, sw, pt, pl = geo[0], geo[1], geo[2], geo[3], geo[4], geo[5]
    acc = np.empty(ch, np.int64)
    for b in range(nb):
        for i in range(oh):
            r0, r1 = _span(i, sh, pt, kh, h)
            for j in range(ow):
                q0, q1 = _span(j, sw, pl, kw, w)
                for c in range(ch):
                    acc[c] = 0
                for r in range(r0, r1):
                    for q in range(q0, q1):
                        for c in range(ch):
                            acc[c] += x[b, r, q, c]
                k = base[i, j]
                for c in range(ch):
                    out[b, i, j, c] = lut[k + acc[c]]


def _x_type(dtype: np.dtype) -> types.Array:
    """Any 4-D array of ``dtype`` (layout, alignment, read-only: numba reads its strides)."""
    return types.Array(numba.from_dtype(np.dtype(dtype)), 4, "A", readonly=True, aligned=False)


def _entry(fn: object, sig: tuple) -> object:
    """The native entry of ``fn`` compiled for ``sig`` (skips numba's type dispatch: only for arguments of
    exactly these types), or the dispatcher itself when this numba keeps no entry."""
    fn.compile(sig)  # type: ignore[attr-defined]
    try:
        return fn.overloads[sig].entry_point  # type: ignore[attr-defined]
    except (KeyError, AttributeError):
        return fn


def max_entry(dtype: np.dtype) -> object:
    """:func:`max_hwc` for inputs of ``dtype`` (int8 / int16; any 4-D layout), C-contiguous int64 ``geo``
    and output of ``dtype``.

    Returns:
        the entry (see :func:`_entry`).
    """
    i64 = types.Array(types.int64, 1, "C")
    out = types.Array(numba.from_dtype(np.dtype(dtype)), 4, "C")
    return _entry(max_hwc, (_x_type(dtype), i64, out))


def ave_entry(dtype: np.dtype, out_dtype: np.dtype) -> object:
    """:func:`ave_hwc` for inputs of ``dtype`` (int8 / int16; any 4-D layout), C-contiguous int64 ``geo``,
    and ``base``, and table and output of ``out_dtype``.

    Returns:
        the entry (see :func:`_entry`).
    """
    o = numba.from_dtype(np.dtype(out_dtype))
    sig = (_x_type(dtype), types.Array(types.int64, 1, "C"), types.Array(types.int64, 2, "C"),
           types.Array(o, 1, "C"), types.Array(o, 4, "C"))
    return _entry(ave_hwc, sig)


def warm_up() -> None:
    """Compile (or load from numba's cache) the entries :mod:`pymli.kernels.pooling` takes."""
    for dt in (np.dtype(np.int8), np.dtype(np.int16)):
        max_entry(dt)
        ave_entry(dt, dt)
