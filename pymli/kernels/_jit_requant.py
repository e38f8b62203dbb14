"""numba-compiled output stage of TFLM's integer kernels (:func:`pymli.tflm.quant_util.requantize_clamp`: the
prepared ADD / SUB and MEAN / SUM steps), loaded through :func:`pymli.kernels._jit.compiled` (only when numba
is installed: an optional dependency).

Like :mod:`pymli.kernels._jit_svdf`: ``nopython``, ``nogil``, ``cache=True``, no ``fastmath``. One call
replaces about ten NumPy calls on the (small) arrays of these steps: each int64 sum wrapped to int32 (C's
int32 accumulator; the identity on values already in that range), ``MultiplyByQuantizedMultiplier``
(:func:`pymli.kernels._jit_lstm.mbqm32`), the output zero point, the clamp and the narrowing store. The NumPy
stage computes the same values (tests/tflite/test_prepared_small_ops.py).
"""

from __future__ import annotations

import numba
import numpy as np

from ._jit_lstm import mbqm32, wrap32

__all__ = ["requantize_clamp", "warm_up"]

_JIT = {"nogil": True, "cache": True, "fastmath": False, "boundscheck": False}


@numba.njit(**_JIT)
def requantize_clamp(acc, out, m, s, zp, lo, hi):  # pragma: no cover - compiled
    """``out[i] = clamp(MultiplyByQuantizedMultiplier(wrap32(acc[i]), m, s) + zp, lo, hi)``.

    Args:
        acc: 1-D int64 sums. out: 1-D output (int8 / int16 / int32) of the same length, written.
        m: multiplier in ``[0, 2**31)``. s: shift (at least -31). zp: output zero point.
        lo, hi: the activation range (within ``out``'s type).
    """
    for i in range(acc.shape[0]):
        v = mbqm32(wrap32(acc[i]), m, s) + zp
        out[i] = lo if v < lo else (hi if v > hi else v)


def warm_up() -> None:
    """Compile (or load from numba's cache) the output types :mod:`pymli.tflm.quant_util` passes: int8, int16,
    int32."""
    for dt in (np.int8, np.int16, np.int32):
        requantize_clamp(np.zeros(1, np.int64), np.zeros(1, dt), 1 << 30, 0, 0, -128, 127)
