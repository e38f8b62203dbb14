"""numba-compiled loop nests behind :mod:`pymli.kernels._jit` (imported only by it, and only when numba
is installed: numba is an optional dependency, see that module).

Every function is ``nopython``, ``nogil`` (the blocks of one call may run on the threads of
:mod:`pymli.kernels._parallel`), ``cache=True`` (compiled once per machine and argument types, kept in
``__pycache__``) and without ``fastmath``: all arithmetic is on integers, in int64 (wrapping exactly
like NumPy's int64, which no step here reaches) or in the int32 accumulator the caller proves exact.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["depthwise_fx_rows", "depthwise_sa8_rows"]

_JIT = {"nogil": True, "cache": True, "fastmath": False, "boundscheck": False}
_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1


@numba.njit(inline="always", **_JIT)
def _rnd(x: np.int64, n: np.int64, half: np.int64, up: bool) -> np.int64:  # pragma: no cover - compiled
    """``arith.requant._rnd``: rounding shift right with ``half = 2**(n-1)`` (0 for ``n == 0``)."""
    if up:
        return (x + half) >> n
    r = x >> n
    bump = ((x & half) != 0) & (((r & 1) != 0) | ((x & (half - 1)) != 0))
    return r + np.int64(bump)


@numba.njit(inline="always", **_JIT)
def _row_sums(x, w, x_off, acc, n, oy, geo, pair):  # pragma: no cover - compiled
    """``acc[ox, c] = sum_valid((x - x_off) * w)`` of output row ``oy`` of sample ``n``: only the taps
    that fall on input pixels. Each product is formed in int32 (the caller proves
    ``max|x - x_off| * max|w| < 2**31``) and added in ``acc``'s dtype (int32 only when the caller
    proves every partial sum below 2**31).

    ``pair`` (int64 sums of int16 / int8 operands without offset, i.e. MLI_FX): two horizontally
    adjacent taps are added in int32 first, as negated products: a product lies in
    ``[-(2**30 - 2**15), 2**30]``, so the sum of two negated products lies in ``[-2**31, 2**31 - 2**16]``
    (exact in int32; the sum of two products itself may be 2**31), and the int64 sums take one
    subtraction per pair (measured ~12 % faster on fx16 56x56x64 3x3)."""
    _, h, wdt, c = x.shape
    kh, kw, _ = w.shape
    wo = acc.shape[0]
    stride_h, stride_w, dil_h, dil_w, pad_t, pad_l = geo[0], geo[1], geo[2], geo[3], geo[4], geo[5]
    off = np.int32(x_off)
    acc[:, :] = 0
    iy0 = oy * stride_h - pad_t
    for ky in range(kh):
        iy = iy0 + ky * dil_h
        if iy < 0 or iy >= h:
            continue
        for kx in range(kw):
            ix0 = kx * dil_w - pad_l
            # the outputs whose tap (ky, kx) reads a real pixel: 0 <= ox * stride_w + ix0 < W
            ox0 = max(0, (stride_w - 1 - ix0) // stride_w)
            ox1 = min(wo, (wdt - 1 - ix0) // stride_w + 1)
            if pair and kx % 2 == 1:
                continue  # taken with kx - 1
            if pair and kx + 1 < kw:
                jx0 = ix0 + dil_w
                px0 = max(0, (stride_w - 1 - jx0) // stride_w)
                px1 = min(wo, (wdt - 1 - jx0) // stride_w + 1)
                lo = max(ox0, px0)
                hi = max(lo, min(ox1, px1))
                # both taps: the negated products' sum lies in [-2**31, 2**31 - 2**16]: exact in int32
                for ox in range(lo, hi):
                    ix = ox * stride_w + ix0
                    for ch in range(c):
                        t = np.int32(-(np.int32(x[n, iy, ix, ch]) * np.int32(w[ky, kx, ch]))) \
                            - np.int32(np.int32(x[n, iy, ix + dil_w, ch]) * np.int32(w[ky, kx + 1, ch]))
                        acc[ox, ch] -= np.int32(t)
                for ox in range(px0, px1):
                    if lo <= ox < hi:
                        continue
                    ix = ox * stride_w + jx0
                    for ch in range(c):
                        acc[ox, ch] += np.int32((np.int32(x[n, iy, ix, ch]) - off) * np.int32(w[ky, kx + 1, ch]))
                for ox in range(ox0, ox1):
                    if lo <= ox < hi:
                        continue
                    ix = ox * stride_w + ix0
                    for ch in range(c):
                        acc[ox, ch] += np.int32((np.int32(x[n, iy, ix, ch]) - off) * np.int32(w[ky, kx, ch]))
                continue
            for ox in range(ox0, ox1):
                ix = ox * stride_w + ix0
                for ch in range(c):
                    acc[ox, ch] += np.int32((np.int32(x[n, iy, ix, ch]) - off) * np.int32(w[ky, kx, ch]))


@numba.njit(**_JIT)
def depthwise_fx_rows(x, w, acc, out, row0, ho, geo, bias, par):  # pragma: no cover - compiled
    """Depthwise sums and the MLI_FX output stage of the output rows ``row0 .. row0 + len(out) - 1``
    (rows of all samples, numbered ``sample * ho + oy``).

    Per sum (int64): wrap to int32 when ``par[0]`` (32-bit accumulator); ``v = clip(v + bias[c],
    par[1], par[2])`` (the saturating add: the int32 range, or the int64 range for the 40-bit
    accumulator, whose add cannot overflow); ``v = min(v, par[3])`` (ROUND_UP's saturating rounding
    add in 32 bits, else the int64 maximum); rounding shift right by ``par[4]`` (``par[5]``: half an
    LSB; ``par[6]``: 1 for ROUND_UP, 0 for ROUND_CONVERGENT); clip to the output container
    ``[par[7], par[8]]`` then to the ReLU bounds ``[par[9], par[10]]``.

    Args:
        x: (N, H, W, C) int8 / int16 input; w: (Kh, Kw, C) weights.
        acc: (Wo, C) accumulator scratch (int32 or int64: see :func:`_row_sums`).
        out: (rows, Wo, C) output rows (written).
        row0: first output row; ho: output rows per sample.
        geo: int64 (stride_h, stride_w, dil_h, dil_w, pad_t, pad_l).
        bias: (C,) int64 bias aligned to the accumulator; par: int64 scalars above.
    """
    wrap32, sat_lo, sat_hi, rnd_lim, s, half = par[0] != 0, par[1], par[2], par[3], par[4], par[5]
    up, cont_lo, cont_hi, lo, hi = par[6] != 0, par[7], par[8], par[9], par[10]
    c = x.shape[3]
    # 40-bit accumulator (no wrap, no saturation) with the ReLU clamp inside the container: one clip
    simple = not wrap32 and sat_lo == _I64_MIN and sat_hi == _I64_MAX and rnd_lim == _I64_MAX \
        and cont_lo <= lo <= hi <= cont_hi
    for r in range(out.shape[0]):
        _row_sums(x, w, 0, acc, (row0 + r) // ho, (row0 + r) % ho, geo, acc.itemsize == 8)
        if simple and up:
            for ox in range(acc.shape[0]):
                for ch in range(c):
                    out[r, ox, ch] = min(max((np.int64(acc[ox, ch]) + bias[ch] + half) >> s, lo), hi)
        elif simple:
            for ox in range(acc.shape[0]):
                for ch in range(c):
                    out[r, ox, ch] = min(max(_rnd(np.int64(acc[ox, ch]) + bias[ch], s, half, False), lo), hi)
        else:
            for ox in range(acc.shape[0]):
                for ch in range(c):
                    v = np.int64(acc[ox, ch])
                    if wrap32:
                        v = (v << 32) >> 32
                    v = min(min(max(v + bias[ch], sat_lo), sat_hi), rnd_lim)
                    v = min(max(_rnd(v, s, half, up), cont_lo), cont_hi)
                    out[r, ox, ch] = min(max(v, lo), hi)


@numba.njit(**_JIT)
def depthwise_sa8_rows(x, w, x_off, acc, out, row0, ho, geo, chan, par):  # pragma: no cover - compiled
    """Depthwise sums of ``x - x_off`` and the s8asym output stage of the output rows ``row0 ..
    row0 + len(out) - 1`` (rows of all samples, numbered ``sample * ho + oy``).

    Per sum (int64), with the per-channel constants ``chan[:, c]`` = (bias, pre_lim, pre, pre_half,
    mul, sh, half): wrap to int32; ``v = clip(v + bias, INT32)`` (the saturating add); without
    FULL_ACCU (``par[1]``) ``v = clip(rnd(min(v, pre_lim), pre), INT16)`` (the pre-shift, ROUND_UP's
    saturating rounding add as a clamp); ``r = clip(rnd(v * mul, sh), INT16) + par[2]`` (zero point);
    ``out = clip(r, par[3], par[4])``; ``par[0]``: 1 for ROUND_UP, 0 for ROUND_CONVERGENT.

    Args:
        x: (N, H, W, C) int8 / int16 input; w: (Kh, Kw, C) weights; x_off: the input offset.
        acc: (Wo, C) accumulator scratch (int32 or int64: see :func:`_row_sums`).
        out: (rows, Wo, C) output rows (written).
        row0: first output row; ho: output rows per sample.
        geo: int64 (stride_h, stride_w, dil_h, dil_w, pad_t, pad_l).
        chan: (7, C) int64 per-channel constants; par: int64 scalars above.
    """
    up, pre_on, zp, lo, hi = par[0] != 0, par[1] != 0, par[2], par[3], par[4]
    c = x.shape[3]
    for r in range(out.shape[0]):
        _row_sums(x, w, x_off, acc, (row0 + r) // ho, (row0 + r) % ho, geo, False)
        for ox in range(acc.shape[0]):
            for ch in range(c):
                v = np.int64(acc[ox, ch])
                v = (v << 32) >> 32
                v = min(max(v + chan[0, ch], -2147483648), 2147483647)
                if pre_on:
                    v = min(max(_rnd(min(v, chan[1, ch]), chan[2, ch], chan[3, ch], up), -32768), 32767)
                v = min(max(_rnd(v * chan[4, ch], chan[5, ch], chan[6, ch], up), -32768), 32767) + zp
                out[r, ox, ch] = min(max(v, lo), hi)
