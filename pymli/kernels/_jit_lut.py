"""numba-compiled table lookups, loaded through :func:`pymli.kernels._jit.compiled` (only when numba is
installed: an optional dependency).

Like :mod:`pymli.kernels._jit_numba`: ``nopython``, ``nogil``, ``cache=True``, no ``fastmath``; no
arithmetic but the index. :func:`gather_pairs` is ``np.take(table, (x.view(np.uint8).astype(np.uint16)
<< 8) | y.view(np.uint8))`` in one pass (the prepared sa8 ADD of :mod:`pymli.tflite.tflm_model` looks
its two operands up in the 65536-entry table of the kernel's own results: four NumPy calls, ~4-8 us on a
few hundred values, where this loop takes ~1 us). :func:`softmax_row_sum` and :func:`softmax_row_apply` are
the two passes of TFLM's int8 softmax over one wide row (:func:`pymli.tflm.activations.softmax_int8`):
its maximum and sum of Q12 exponentials, then its table of 256 outputs and the gather, in int64 (every
value below 2**62, see there).
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["gather_pairs", "softmax_row_apply", "softmax_row_sum", "warm_up"]

_JIT = {"nogil": True, "cache": True, "fastmath": False, "boundscheck": False}


@numba.njit(**_JIT)
def gather_pairs(table, x, y, out):  # pragma: no cover - compiled
    """``out[i] = table[(x[i] mod 256) * 256 + (y[i] mod 256)]``: the table entry of each pair of 8-bit
    values (their two's complement bytes, ``x`` the high one).

    Args:
        table: (65536,) entries; x, y: (N,) int8 or uint8; out: (N,) of the table's dtype (written).
    """
    for i in range(x.shape[0]):
        out[i] = table[((np.int64(x[i]) & 255) << 8) | (np.int64(y[i]) & 255)]


@numba.njit(**_JIT)
def softmax_row_sum(x, e12):  # pragma: no cover - compiled
    """The maximum of int8 row ``x`` (non-empty) and ``sum(e12[max - x[i]])`` (int64, unwrapped).

    Args:
        x: (N,) int8, N >= 1; e12: (256,) int64 Q12 exponentials over ``-diff``.

    Returns:
        (maximum, sum).
    """
    mx = np.int64(x[0])
    for i in range(x.shape[0]):
        mx = max(mx, np.int64(x[i]))
    total = np.int64(0)
    for i in range(x.shape[0]):
        total += e12[mx - np.int64(x[i])]
    return mx, total


@numba.njit(**_JIT)
def softmax_row_apply(x, mx, e, scale, k, lo, hi, out):  # pragma: no cover - compiled
    """``out[i] = min((((scale * e[d] + 2**30) >> 31) + 2**(k-1) + lo * 2**k) >> k, hi)`` with
    ``d = mx - x[i]``: the row's table of its 256 outputs, then the gather.

    Args:
        x: (N,) int8; mx: its maximum; e: (256,) int64 Q0.31 exponentials (0 below ``diff_min``);
        scale: Q0.31 reciprocal (< 2**31); k: exponent (1..62); lo, hi: output limits; out: (N,) (written).
    """
    table = np.empty(256, np.int64)
    add = (np.int64(1) << (k - 1)) + (np.int64(lo) << k)
    for d in range(256):
        table[d] = min((((scale * e[d] + (np.int64(1) << 30)) >> 31) + add) >> k, hi)
    for i in range(x.shape[0]):
        out[i] = table[mx - np.int64(x[i])]


def warm_up() -> None:
    """Compile (or load from numba's cache) the argument types :mod:`pymli.tflite.tflm_model` and
    :mod:`pymli.tflm.activations` pass, as :func:`pymli.kernels._jit.warm_up` asks of each
    compiled-kernel module: int8 pairs into an int8 table; an int8 row with read-only int64
    exponential tables into int8 and int16 outputs."""
    x = np.zeros(2, np.int8)
    gather_pairs(np.zeros(1 << 16, np.int8), x, x, np.empty(2, np.int8))
    e = np.zeros(256, np.int64)
    e.flags.writeable = False
    mx, _ = softmax_row_sum(x, e)
    for od in (np.int8, np.int16):
        softmax_row_apply(x, mx, e, 1 << 30, 8, int(np.iinfo(od).min), int(np.iinfo(od).max), np.empty(2, od))
