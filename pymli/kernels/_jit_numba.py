"""numba-compiled loop nests behind :mod:`pymli.kernels._jit` (imported only by it, and only when numba
is installed: numba is an optional dependency, see that module).

Every function is ``nopython``, ``nogil`` (the blocks of one call may run on the threads of
:mod:`pymli.kernels._parallel`), ``cache=True`` (compiled once per machine and argument types, kept in
``__pycache__``) and without ``fastmath``: all arithmetic is on integers, in int64 (wrapping exactly
like NumPy's int64, which no step here reaches) or in the int32 accumulator the caller proves exact,
except the 3x3 MLI_FX sums of :func:`depthwise_fx3_rows`: integer-valued float64 products and sums
that the caller proves below 2**53 (every step exact, so contracting a multiply and an add into one
FMA, its only fast-math flag, rounds nothing either).
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["depthwise_fx3_rows", "depthwise_fx_rows", "depthwise_sa8_rows", "finish_fx", "finish_sa8"]

_JIT = {"nogil": True, "cache": True, "fastmath": False, "boundscheck": False}
_JIT_FMA = {**_JIT, "fastmath": {"contract"}}
_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1


@numba.njit(**_JIT)
def _rnd(x: np.int64, n: np.int64, half: np.int64, up: bool) -> np.int64:  # pragma: no cover - compiled
    """``arith.requant._rnd``: rounding shift right with ``half = 2**(n-1)`` (0 for ``n == 0``), without
    branches on the values (so that the loops over channels vectorise).

    ROUND_UP: ``(x + half) >> n``. ROUND_CONVERGENT (``n > 0``): with ``q = x >> n`` (floor) and
    ``rem = x - q * 2**n``, ``(x + half - 1 + (q & 1)) >> n`` is ``q + 1`` exactly when ``rem > half``,
    or ``rem == half`` and ``q`` is odd (``rem + half - 1 + (q & 1) < 2**(n+1)``): round half to even.
    ``n == 0``: ``x``."""
    if up:
        return (x + half) >> n
    odd = np.int64(n > 0)
    return (x + half - odd + ((x >> n) & odd)) >> n


@numba.njit(**_JIT)
def _fx_out(v, b, wsh, sat_lo, sat_hi, rnd_lim, s, half, up, cont_lo, cont_hi, lo, hi):  # pragma: no cover
    """The MLI_FX output stage of one int64 sum ``v`` with the aligned bias ``b`` (the ``par`` scalars of
    :func:`depthwise_fx_rows`; ``wsh``: 32 to wrap the sum to int32, else 0)."""
    v = (v << wsh) >> wsh
    v = min(min(max(v + b, sat_lo), sat_hi), rnd_lim)
    v = min(max(_rnd(v, s, half, up), cont_lo), cont_hi)
    return min(max(v, lo), hi)


@numba.njit(**_JIT)
def _sa8_out(v, chan, ch, up, pre_lo, pre_hi, zp, lo, hi):  # pragma: no cover - compiled
    """The s8asym output stage of one int64 sum ``v`` of channel ``ch`` (see :func:`depthwise_sa8_rows`;
    ``pre_lo, pre_hi``: the INT16 clip of the pre-shift, the int64 range with FULL_ACCU, whose
    pre-shift constants are no-ops)."""
    v = (v << 32) >> 32
    v = min(max(v + chan[0, ch], -2147483648), 2147483647)
    v = min(max(_rnd(min(v, chan[1, ch]), chan[2, ch], chan[3, ch], up), pre_lo), pre_hi)
    v = min(max(_rnd(v * chan[4, ch], chan[5, ch], chan[6, ch], up), -32768), 32767) + zp
    return min(max(v, lo), hi)


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
    wsh = 32 if wrap32 else 0
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
                    out[r, ox, ch] = _fx_out(np.int64(acc[ox, ch]), bias[ch], wsh, sat_lo, sat_hi, rnd_lim, s, half,
                                             up, cont_lo, cont_hi, lo, hi)


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
    up, zp, lo, hi = par[0] != 0, par[2], par[3], par[4]
    pre_lo, pre_hi = (-32768, 32767) if par[1] != 0 else (_I64_MIN, _I64_MAX)
    c = x.shape[3]
    for r in range(out.shape[0]):
        _row_sums(x, w, x_off, acc, (row0 + r) // ho, (row0 + r) % ho, geo, False)
        for ox in range(acc.shape[0]):
            for ch in range(c):
                out[r, ox, ch] = _sa8_out(np.int64(acc[ox, ch]), chan, ch, up, pre_lo, pre_hi, zp, lo, hi)


@numba.njit(**_JIT)
def _fx40_out(v, s, add, odd, lo, hi):  # pragma: no cover - compiled
    """The output stage of :func:`depthwise_fx3_rows` of one biased sum ``v``."""
    return min(max((v + add + ((v >> s) & odd)) >> s, lo), hi)


@numba.njit(**_JIT_FMA)
def depthwise_fx3_rows(x, wf, acc, out, row0, ho, geo, bias, par):  # pragma: no cover - compiled
    """:func:`depthwise_fx_rows` of a 3x3 kernel and a 40-bit accumulator with the sums in float64:
    integer-valued, exact while ``9 * max|x| * max|w| < 2**53`` (the caller checks it: 9 * 2**30 for
    fx16), so that the products vectorise over the channels (int64 products do not) and each output is
    finished in the channel loop.

    Output stage of a sum ``v`` (int64, no wrap, no saturation: see :func:`depthwise_fx_rows`'s
    ``simple`` case) with ``par`` = (s, add, odd, lo, hi): ``v += bias[c]``; ``v = (v + add + ((v >> s)
    & odd)) >> s``, i.e. ``(v + half) >> s`` for ROUND_UP (``add = half``, ``odd = 0``) and round half
    to even for ROUND_CONVERGENT (``add = half - 1``, ``odd = 1``: a tie rounds up exactly when the
    truncated quotient is odd; ``s = 0``: ``add = odd = 0``); ``out = clip(v, lo, hi)`` (the container
    and ReLU clips in one: a composition of clips is a clip).

    The pixels whose nine taps all fall on input pixels take one loop over the channels with the nine
    products written out, two adjacent pixels at a time when the stride and dilation along the width
    are 1 (they share two of their three input columns and the weights); the others add their valid
    taps in ``acc``.

    Args:
        x: (N, H, W, C) int8 / int16 input; wf: (3, 3, C) float64 weights (integer values).
        acc: (C,) float64 scratch.
        out, row0, ho, geo, bias: as :func:`depthwise_fx_rows`; par: int64 scalars above.
    """
    s, add, odd, lo, hi = par[0], par[1], par[2], par[3], par[4]
    _, h, wdt, c = x.shape
    wo = out.shape[1]
    stride_h, stride_w, dil_h, dil_w, pad_t, pad_l = geo[0], geo[1], geo[2], geo[3], geo[4], geo[5]
    pairs = stride_w == 1 and dil_w == 1
    for r in range(out.shape[0]):
        n, oy = (row0 + r) // ho, (row0 + r) % ho
        y0 = oy * stride_h - pad_t
        y1, y2 = y0 + dil_h, y0 + 2 * dil_h
        # interior outputs: ox * stride_w - pad_l >= 0 and ox * stride_w - pad_l + 2 * dil_w < W
        oxa = oxb = 0
        if y0 >= 0 and y2 < h:
            oxa = (pad_l + stride_w - 1) // stride_w
            oxb = max(oxa, min(wo, (wdt - 1 - 2 * dil_w + pad_l) // stride_w + 1))
        ox = 0
        while ox < wo:
            a0 = ox * stride_w - pad_l
            a1, a2 = a0 + dil_w, a0 + 2 * dil_w
            if pairs and oxa <= ox and ox + 2 <= oxb:
                for ch in range(c):
                    x0, x1 = np.float64(x[n, y0, a0, ch]), np.float64(x[n, y0, a0 + 1, ch])
                    x2, x3 = np.float64(x[n, y0, a0 + 2, ch]), np.float64(x[n, y0, a0 + 3, ch])
                    w0, w1, w2 = wf[0, 0, ch], wf[0, 1, ch], wf[0, 2, ch]
                    v0 = x0 * w0 + x1 * w1 + x2 * w2
                    v1 = x1 * w0 + x2 * w1 + x3 * w2
                    x0, x1 = np.float64(x[n, y1, a0, ch]), np.float64(x[n, y1, a0 + 1, ch])
                    x2, x3 = np.float64(x[n, y1, a0 + 2, ch]), np.float64(x[n, y1, a0 + 3, ch])
                    w0, w1, w2 = wf[1, 0, ch], wf[1, 1, ch], wf[1, 2, ch]
                    v0 += x0 * w0 + x1 * w1 + x2 * w2
                    v1 += x1 * w0 + x2 * w1 + x3 * w2
                    x0, x1 = np.float64(x[n, y2, a0, ch]), np.float64(x[n, y2, a0 + 1, ch])
                    x2, x3 = np.float64(x[n, y2, a0 + 2, ch]), np.float64(x[n, y2, a0 + 3, ch])
                    w0, w1, w2 = wf[2, 0, ch], wf[2, 1, ch], wf[2, 2, ch]
                    v0 += x0 * w0 + x1 * w1 + x2 * w2
                    v1 += x1 * w0 + x2 * w1 + x3 * w2
                    b = bias[ch]
                    out[r, ox, ch] = _fx40_out(np.int64(v0) + b, s, add, odd, lo, hi)
                    out[r, ox + 1, ch] = _fx40_out(np.int64(v1) + b, s, add, odd, lo, hi)
                ox += 2
                continue
            if oxa <= ox < oxb:
                for ch in range(c):
                    v = np.float64(x[n, y0, a0, ch]) * wf[0, 0, ch] + np.float64(x[n, y0, a1, ch]) * wf[0, 1, ch] \
                        + np.float64(x[n, y0, a2, ch]) * wf[0, 2, ch]
                    v += np.float64(x[n, y1, a0, ch]) * wf[1, 0, ch] + np.float64(x[n, y1, a1, ch]) * wf[1, 1, ch] \
                        + np.float64(x[n, y1, a2, ch]) * wf[1, 2, ch]
                    v += np.float64(x[n, y2, a0, ch]) * wf[2, 0, ch] + np.float64(x[n, y2, a1, ch]) * wf[2, 1, ch] \
                        + np.float64(x[n, y2, a2, ch]) * wf[2, 2, ch]
                    out[r, ox, ch] = _fx40_out(np.int64(v) + bias[ch], s, add, odd, lo, hi)
                ox += 1
                continue
            acc[:] = 0.0
            for ky in range(3):
                iy = y0 + ky * dil_h
                if iy < 0 or iy >= h:
                    continue
                for kx in range(3):
                    ix = a0 + kx * dil_w
                    if ix < 0 or ix >= wdt:
                        continue
                    for ch in range(c):
                        acc[ch] += np.float64(x[n, iy, ix, ch]) * wf[ky, kx, ch]
            for ch in range(c):
                out[r, ox, ch] = _fx40_out(np.int64(acc[ch]) + bias[ch], s, add, odd, lo, hi)
            ox += 1


@numba.njit(**_JIT)
def finish_sa8(acc, chan, par, out):  # pragma: no cover - compiled
    """The s8asym output stage of :func:`depthwise_sa8_rows` on given sums: ``out[i, c]`` from
    ``acc[i, c]`` (integers, or integer-valued floats below 2**63), constants as there.

    Args:
        acc: (M, C) exact sums; chan: (7, C) int64; par: int64 scalars; out: (M, C) int8 (written).
    """
    up, zp, lo, hi = par[0] != 0, par[2], par[3], par[4]
    pre_lo, pre_hi = (-32768, 32767) if par[1] != 0 else (_I64_MIN, _I64_MAX)
    for i in range(acc.shape[0]):
        for ch in range(acc.shape[1]):
            out[i, ch] = _sa8_out(np.int64(acc[i, ch]), chan, ch, up, pre_lo, pre_hi, zp, lo, hi)


@numba.njit(**_JIT)
def finish_fx(acc, bias, par, out):  # pragma: no cover - compiled
    """The MLI_FX output stage of :func:`depthwise_fx_rows` on given sums: ``out[i, c]`` from
    ``acc[i, c]`` (integers, or integer-valued floats below 2**63), constants as there.

    Args:
        acc: (M, C) exact sums; bias: (C,) int64; par: int64 scalars; out: (M, C) int8 / int16 (written).
    """
    wrap32, sat_lo, sat_hi, rnd_lim, s, half = par[0] != 0, par[1], par[2], par[3], par[4], par[5]
    wsh = 32 if wrap32 else 0
    up, cont_lo, cont_hi, lo, hi = par[6] != 0, par[7], par[8], par[9], par[10]
    for i in range(acc.shape[0]):
        for ch in range(acc.shape[1]):
            out[i, ch] = _fx_out(np.int64(acc[i, ch]), bias[ch], wsh, sat_lo, sat_hi, rnd_lim, s, half, up,
                                 cont_lo, cont_hi, lo, hi)
