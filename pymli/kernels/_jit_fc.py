"""numba-compiled small fully connected layers: the product and the output stage of
:func:`pymli.kernels._jit_numba.finish_sa8` / ``finish_fx`` in one call (the one-shape form of
:meth:`pymli.kernels.fully_connected.PreparedFc.single` for layers of a few thousand multiply-adds, whose
time is the per-call cost of the calls around them), loaded through :func:`pymli.kernels._jit.compiled`
(only when numba is installed: an optional dependency).

Like :mod:`pymli.kernels._jit_numba`: ``nopython``, ``nogil``, ``cache=True``, no ``fastmath``. Each sum
``x @ w`` is exact in int64 (int8 times int8 over at most a few thousand inputs) and goes through the very
output stage of ``finish_sa8`` / ``finish_fx`` (``_sa8_out`` / ``_fx_out``, which take the int64 sum), so
the outputs are those of the integer product and that stage (tests/kernels/test_fc_small_jit.py).
"""

from __future__ import annotations

import numba
import numpy as np
from numba import types

from ._jit_numba import _fx_out, _I64_MAX, _I64_MIN, _sa8_out

__all__ = ["fc_fx_small", "fc_sa8_small", "small_entry", "warm_up"]

_JIT = {"nogil": True, "cache": True, "fastmath": False, "boundscheck": False}


@numba.njit(**_JIT)
def _row_sums(x, w, i, acc):  # pragma: no cover - compiled
    """``acc[:] = x[i] @ w`` in int64 (exact: int8 products over a few thousand inputs)."""
    k, m = w.shape
    acc[:] = 0
    for j in range(k):
        v = np.int64(x[i, j])
        for c in range(m):
            acc[c] += v * w[j, c]


@numba.njit(**_JIT)
def fc_sa8_small(x, w, chan, par, out):  # pragma: no cover - compiled
    """``out[i, c] = finish_sa8(x @ w)[i, c]``.

    Args:
        x: (N, K) int8 inputs. w: (K, M) int8 weights. chan, par: the constants of ``finish_sa8``.
        out: (N, M) int8, written.
    """
    n = x.shape[0]
    m = w.shape[1]
    up, zp, lo, hi = par[0] != 0, par[2], par[3], par[4]
    pre_lo, pre_hi = (-32768, 32767) if par[1] != 0 else (_I64_MIN, _I64_MAX)
    acc = np.empty(m, np.int64)
    for i in range(n):
        _row_sums(x, w, i, acc)
        for c in range(m):
            out[i, c] = _sa8_out(acc[c], chan, c, up, pre_lo, pre_hi, zp, lo, hi)


@numba.njit(**_JIT)
def fc_fx_small(x, w, bias, par, out):  # pragma: no cover - compiled
    """``out[i, c] = finish_fx(x @ w)[i, c]``.

    Args:
        x: (N, K) int8 inputs. w: (K, M) int8 weights. bias, par: the constants of ``finish_fx``.
        out: (N, M) int8 / int16, written.
    """
    n = x.shape[0]
    m = w.shape[1]
    wrap32, sat_lo, sat_hi, rnd_lim, s, half = par[0] != 0, par[1], par[2], par[3], par[4], par[5]
    wsh = 32 if wrap32 else 0
    up, cont_lo, cont_hi, lo, hi = par[6] != 0, par[7], par[8], par[9], par[10]
    acc = np.empty(m, np.int64)
    for i in range(n):
        _row_sums(x, w, i, acc)
        for c in range(m):
            out[i, c] = _fx_out(acc[c], bias[c], wsh, sat_lo, sat_hi, rnd_lim, s, half, up, cont_lo, cont_hi,
                                lo, hi)


def small_entry(sa8: bool, out_dtype: np.dtype) -> object:
    """The native entry of :func:`fc_sa8_small` (``sa8``) or :func:`fc_fx_small` compiled for any input
    array: int8 of two dimensions in any layout (numba reads its strides), read-only (only read) and of
    any alignment; the weights, constants and output C-contiguous and writeable (the caller's own
    arrays). Calling it skips numba's type dispatch: its native wrapper unboxes any array of the item size.

    Args:
        sa8: the s8asym stage (else MLI_FX). out_dtype: the output's dtype (int8; FX also int16).

    Returns:
        the entry, or the dispatcher itself when this numba keeps no entry (another version's internals).
    """
    fn = fc_sa8_small if sa8 else fc_fx_small
    i64 = types.Array(types.int64, 2 if sa8 else 1, "C")
    sig = (types.Array(types.int8, 2, "A", readonly=True, aligned=False), types.Array(types.int8, 2, "C"), i64,
           types.Array(types.int64, 1, "C"), types.Array(numba.from_dtype(np.dtype(out_dtype)), 2, "C"))
    fn.compile(sig)
    try:
        return fn.overloads[sig].entry_point
    except (KeyError, AttributeError):
        return fn


def warm_up() -> None:
    """Compile (or load from numba's cache) the entries :mod:`pymli.kernels.fully_connected` takes."""
    small_entry(True, np.dtype(np.int8))
    for dt in (np.int8, np.int16):
        small_entry(False, np.dtype(dt))
