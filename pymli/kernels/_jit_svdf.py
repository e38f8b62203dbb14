"""numba-compiled step of TFLM's integer SVDF (the prepared step of :func:`pymli.tflm.svdf.prepare_svdf_int8`),
loaded through :func:`pymli.kernels._jit.compiled` (only when numba is installed: an optional dependency).

Like :mod:`pymli.kernels._jit_lstm`: ``nopython``, ``nogil``, ``cache=True``, no ``fastmath``. One call does
the whole step: the feature products with their zero point correction, ``MultiplyByQuantizedMultiplier``, the
clamp to the state's type and the narrowing store of ``+ state_zp``, the state's shift towards the past, the
time products with their zero point correction, the sum over ``rank``, the bias, the requantisation, the
output zero point and the int8 clamp. Every sum is exact in int64 (``|x - zp| <= 255`` times int8 weights
over the inputs, ``|state - zp| < 2**16`` times int16 weights over the memory) and wraps once to int32, as
the C code's int32 sums wrap (modulo ``2**32``). The NumPy step computes the same values
(tests/tflm/test_svdf_jit.py).
"""

from __future__ import annotations

import numba
import numpy as np
from numba import types

from ._jit_lstm import mbqm32, wrap32  # TFLM's fixed-point steps, shared by the compiled TFLM loops

__all__ = ["svdf_step", "step_entry", "warm_up"]

_JIT = {"nogil": True, "cache": True, "fastmath": False, "boundscheck": False}


@numba.njit(**_JIT)
def svdf_step(x, state, w, c, out, new):  # pragma: no cover - compiled
    """One SVDF step (the constants in two flat arrays, the results written into arrays of the caller's:
    fewer arrays for the native call to unbox and box, ~0.4 us of a step of a few thousand MACs; the
    weights in an array of their own, which LLVM vectorises the products over).

    Args:
        x: (B, n_input) int8 input.
        state: (B, n_filter * n_memory) int8 / int16 state before the step, row-major [filter][memory].
        w: int64, the feature weights (n_filter, n_input) then the time weights (n_filter, n_memory),
            row-major.
        c: int64: scale 1 multiplier and shift, scale 2 multiplier and shift, state zero point, output zero
            point, the state type's minimum and maximum, n_filter, n_memory, n_unit (= n_filter / rank), then
            ``input_zp * sum(w_feature)`` (n_filter), ``state_zp * sum(w_time)`` (n_filter; less the bias where
            rank is 1), the bias added to each unit's sum (n_unit; zeros when there is none or it is in the
            previous part).
        out: (B, n_unit) int8, written.
        new: the state after the step, ``state``'s shape and type, written (another array than ``state``).
    """
    nb, n_in = x.shape
    m1, s1, m2, s2, szp, ozp, lo, hi = c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]
    nf, nm, nu = c[8], c[9], c[10]
    rank = nf // nu
    mask = hi - lo  # 2**bits - 1
    fz, tz, bz = 11, 11 + nf, 11 + 2 * nf  # offsets in c
    wt0 = nf * n_in  # offset of the time weights in w
    n = nf * nm
    for b in range(nb):
        for j in range(n - 1):  # the shift towards the past (each filter's newest column written below)
            new[b, j] = state[b, j + 1]
        for f in range(nf):
            d = -c[fz + f]
            o = f * n_in
            for i in range(n_in):
                d += np.int64(x[b, i]) * w[o + i]
            v = mbqm32(wrap32(d), m1, s1)  # wrapped before the left shift: no int64 overflow
            v = lo if v < lo else (hi if v > hi else v)
            new[b, f * nm + nm - 1] = ((v + szp - lo) & mask) + lo  # the C narrowing store of v + state_zp
        for u in range(nu):
            acc = c[bz + u]
            for r in range(rank):
                f = u * rank + r
                t = -c[tz + f]
                base = f * nm
                for m in range(nm):
                    t += np.int64(new[b, base + m]) * w[wt0 + base + m]
                acc += t
            o = mbqm32(wrap32(acc), m2, s2) + ozp
            out[b, u] = -128 if o < -128 else (127 if o > 127 else o)


def step_entry(state_dtype: np.dtype) -> object:
    """The native entry of :func:`svdf_step` compiled for any input and state array: int8 input and
    ``state_dtype`` state of two dimensions in any layout (numba reads their strides), read-only (the
    step only reads them) and of any alignment; the constants and both results C-contiguous and
    writeable (the caller's fresh arrays). Calling it skips numba's type dispatch and the caller's
    checks of the arrays' flags: its native wrapper unboxes any array of the item size.

    Args:
        state_dtype: int8 or int16.

    Returns:
        the entry, or the dispatcher itself when this numba keeps no entry (another version's internals).
    """
    sd = numba.from_dtype(np.dtype(state_dtype))
    sig = (types.Array(types.int8, 2, "A", readonly=True, aligned=False),
           types.Array(sd, 2, "A", readonly=True, aligned=False),
           types.Array(types.int64, 1, "C"), types.Array(types.int64, 1, "C"),
           types.Array(types.int8, 2, "C"), types.Array(sd, 2, "C"))
    svdf_step.compile(sig)
    try:
        return svdf_step.overloads[sig].entry_point
    except (KeyError, AttributeError):
        return svdf_step


def warm_up() -> None:
    """Compile (or load from numba's cache) the steps :mod:`pymli.tflm.svdf` calls (:func:`step_entry`):
    int8 and int16 state."""
    for sd in (np.int8, np.int16):
        step_entry(np.dtype(sd))
