"""numba-compiled table lookups, loaded through :func:`pymli.kernels._jit.compiled` (only when numba is
installed: an optional dependency).

Like :mod:`pymli.kernels._jit_numba`: ``nopython``, ``nogil``, ``cache=True``, no ``fastmath``; no
arithmetic but the index. :func:`gather_pairs` is ``np.take(table, (x.view(np.uint8).astype(np.uint16)
<< 8) | y.view(np.uint8))`` in one pass (the prepared sa8 ADD of :mod:`pymli.tflite.tflm_model` looks
its two operands up in the 65536-entry table of the kernel's own results: four NumPy calls, ~4-8 us on a
few hundred values, where this loop takes ~1 us).
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["gather_pairs"]

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
