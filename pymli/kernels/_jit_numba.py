"""numba-compiled loop nests behind :mod:`pymli.kernels._jit` (imported only by it, and only when numba
is installed: numba is an optional dependency, see that module).

Every function is ``nopython``, ``nogil`` (the blocks of one call may run on the threads of
:mod:`pymli.kernels._parallel`), ``cache=True`` (compiled once per machine and argument types, kept in
``__pycache__``) and without ``fastmath``: all arithmetic is on integers, in int64 (wrapping exactly
like NumPy's int64, which no step here reaches) or in the int32 accumulator the caller proves exact,
except the sums of the 3x3 loop nests: float64 products and sums of :func:`depthwise_fx3_rows` that are
integers times a power of two, below 2**53 times it, and float32 integer products and sums of
:func:`depthwise_sa8_3_rows` below 2**24 (the caller proves the bounds), so every step is exact in
any order, and contracting a multiply and an add into one FMA, their only fast-math flag, rounds
nothing either. Floats because they vectorise over the channels: 8 / 16 lanes of AVX-512 fused
multiply-adds, where int64 products do not vectorise well and int32 sums of fx16 products (up to
9 * 2**30) would overflow.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["depthwise_fx3_pairs", "depthwise_fx3_rows", "depthwise_fx_rows", "depthwise_sa8_3_flat",
           "depthwise_sa8_3_rows", "depthwise_sa8_rows", "finish_fx", "finish_sa8"]

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
def _fx40_round(v, up, lo, hi):  # pragma: no cover - compiled
    """The output stage of :func:`depthwise_fx3_rows` of one scaled sum ``v``: ``floor`` for ROUND_UP
    (the rounding half is in the scaled bias), round half to even (``rint``: the IEEE default rounding
    mode, which NumPy does not change) for ROUND_CONVERGENT, then the clip to ``[lo, hi]`` (integers:
    rounding and clipping commute)."""
    r = np.floor(v) if up else np.rint(v)
    return min(max(r, lo), hi)


@numba.njit(**_JIT_FMA)
def _ring_slot(x, off, n, iy, ring, tags):  # pragma: no cover - compiled
    """The ring row holding input row ``iy`` of sample ``n`` minus ``off`` in the ring's float dtype
    (converted into slot ``iy % slots`` unless there already; the zero row, the last, for rows outside
    the input): see :func:`_new_ring`."""
    h, wdt, c = x.shape[1], x.shape[2], x.shape[3]
    nr = tags.shape[0] - 1  # tags[nr]: the right padding columns
    if iy < 0 or iy >= h:
        return nr
    slot = iy % nr
    if tags[slot] != n * h + iy:
        tags[slot] = n * h + iy
        pl = ring.shape[1] - wdt - tags[nr]  # the left padding columns
        for ix in range(wdt):
            for ch in range(c):
                ring[slot, pl + ix, ch] = np.int64(x[n, iy, ix, ch]) - off
    return slot


@numba.njit(**_JIT_FMA)
def _new_ring(x, wo, geo, block, like):  # pragma: no cover - compiled
    """The ring of input rows of the 3x3 loop nests (:func:`depthwise_fx3_rows`, :func:`depthwise_sa8_3_rows`):
    float rows (``like``'s dtype) padded with zero columns on both sides so that every output pixel
    reads three real columns, in slots ``row % slots`` (six for blocks of four output rows, else
    ``2 * dil_h + 1``: the rows one output row or block reads fall on distinct slots), and a last,
    zero row standing for the padding rows. Returns (ring, tags): ``tags[slot]`` the ``n * H + row``
    held (-1: none), ``tags[-1]`` the right padding's width."""
    wdt, c = x.shape[2], x.shape[3]
    sw, dh, dw, pl = geo[1], geo[2], geo[3], geo[5]
    nr = 6 if block else 2 * dh + 1
    wp = max(pl + wdt, (wo - 1) * sw + 2 * dw + 1)
    ring = np.empty((nr + 1, wp, c), dtype=like.dtype)
    ring[nr] = 0.0
    for slot in range(nr):
        ring[slot, :pl] = 0.0
        ring[slot, pl + wdt:] = 0.0
    tags = np.full(nr + 1, -1, dtype=np.int64)
    tags[nr] = wp - pl - wdt
    return ring, tags


@numba.njit(inline="always", **_JIT_FMA)
def _rows4(q0, q1, q2, q3, q4, q5, wf, bf, out, r, ox, j0, j1, j2, up, lo, hi):  # pragma: no cover
    """Output pixel ``ox`` of the four output rows ``r .. r + 3`` of :func:`depthwise_fx3_rows` from the
    ring rows ``q0 .. q5`` (their columns ``j0, j1, j2``)."""
    for ch in range(out.shape[2]):
        w00, w01, w02 = wf[0, 0, ch], wf[0, 1, ch], wf[0, 2, ch]
        w10, w11, w12 = wf[1, 0, ch], wf[1, 1, ch], wf[1, 2, ch]
        w20, w21, w22 = wf[2, 0, ch], wf[2, 1, ch], wf[2, 2, ch]
        b = bf[ch]
        x0, x1, x2 = q0[j0, ch], q0[j1, ch], q0[j2, ch]
        a0 = b + x0 * w00 + x1 * w01 + x2 * w02
        x0, x1, x2 = q1[j0, ch], q1[j1, ch], q1[j2, ch]
        a0 = a0 + x0 * w10 + x1 * w11 + x2 * w12
        a1 = b + x0 * w00 + x1 * w01 + x2 * w02
        x0, x1, x2 = q2[j0, ch], q2[j1, ch], q2[j2, ch]
        a0 = a0 + x0 * w20 + x1 * w21 + x2 * w22
        a1 = a1 + x0 * w10 + x1 * w11 + x2 * w12
        a2 = b + x0 * w00 + x1 * w01 + x2 * w02
        x0, x1, x2 = q3[j0, ch], q3[j1, ch], q3[j2, ch]
        a1 = a1 + x0 * w20 + x1 * w21 + x2 * w22
        a2 = a2 + x0 * w10 + x1 * w11 + x2 * w12
        a3 = b + x0 * w00 + x1 * w01 + x2 * w02
        x0, x1, x2 = q4[j0, ch], q4[j1, ch], q4[j2, ch]
        a2 = a2 + x0 * w20 + x1 * w21 + x2 * w22
        a3 = a3 + x0 * w10 + x1 * w11 + x2 * w12
        x0, x1, x2 = q5[j0, ch], q5[j1, ch], q5[j2, ch]
        a3 = a3 + x0 * w20 + x1 * w21 + x2 * w22
        out[r, ox, ch] = _fx40_round(a0, up, lo, hi)
        out[r + 1, ox, ch] = _fx40_round(a1, up, lo, hi)
        out[r + 2, ox, ch] = _fx40_round(a2, up, lo, hi)
        out[r + 3, ox, ch] = _fx40_round(a3, up, lo, hi)


@numba.njit(**_JIT_FMA)
def depthwise_fx3_rows(x, wf, bf, out, row0, ho, geo, par):  # pragma: no cover - compiled
    """:func:`depthwise_fx_rows` of a 3x3 kernel and a 40-bit accumulator (no wrap, no saturation: its
    ``simple`` case) with the sums in float64, so that the products vectorise over the channels (int64
    products do not), and the output stage in floating point too.

    The weights and the bias come scaled by ``2**-s`` (``s``: the output shift): ``wf = w * 2**-s``,
    ``bf = (bias + half) * 2**-s`` for ROUND_UP (``half = 2**(s-1)``, 0 for ``s == 0``), ``bias * 2**-s``
    for ROUND_CONVERGENT. The caller checks ``9 * max|x| * max|w| + max|bias| + half < 2**53``: every
    product and partial sum is then an integer multiple of ``2**-s`` below ``2**(53-s)``, exact in
    float64 (scaling by a power of two rounds nothing without underflow, and ``s <= 62``), in any
    order and with fused multiply-adds (the ``contract`` flag: the only fast-math flag; a fused
    multiply-add rounds once, here nothing). A sum ``v`` is thus exactly ``(acc + bias [+ half]) /
    2**s``, and :func:`_fx40_round` gives ``(acc + bias + half) >> s`` (ROUND_UP) or the shift with
    round half to even (ROUND_CONVERGENT), clipped to the container and ReLU bounds.

    The input rows are converted to float64 once each, into a ring of rows padded with zero columns
    on both sides (slot ``row % slots``: six slots, or ``2 * dil_h + 1``, so that the rows one
    output row or block reads fall on distinct slots) and a zero row standing for the padding rows:
    every output pixel takes the same nine products. With stride and dilation 1 along the height, four
    output rows of a sample at a time share one loop over the channels per pixel (:func:`_rows4`):
    their six input rows' three columns and the weights are loaded once (measured 56x56x64 fx16:
    ~115 us, ring included, against ~190 us a row at a time with four pixels per loop; blocks of
    five rows or more, or of two pixels and more, were not vectorised by LLVM and ran ~2x slower).

    Args:
        x: (N, H, W, C) int8 / int16 input; wf: (3, 3, C) scaled float64 weights; bf: (C,) scaled bias.
        out: (rows, Wo, C) output rows (written); row0: first output row (rows of all samples,
            numbered ``sample * ho + oy``); ho: output rows per sample.
        geo: int64 (stride_h, stride_w, dil_h, dil_w, pad_t, pad_l).
        par: float64 (up, lo, hi): 1.0 for ROUND_UP, the output clip bounds.
    """
    c = x.shape[3]
    rows, wo = out.shape[0], out.shape[1]
    sh, sw, dh, dw, pt = geo[0], geo[1], geo[2], geo[3], geo[4]
    up, lo, hi = par[0] != 0.0, par[1], par[2]
    block = sh == 1 and dh == 1
    ring, tags = _new_ring(x, wo, geo, block, wf)
    r = 0
    while r < rows:
        n, oy = (row0 + r) // ho, (row0 + r) % ho
        if block and r + 4 <= rows and oy + 4 <= ho:
            y = oy - pt
            q0, q1 = ring[_ring_slot(x, 0, n, y, ring, tags)], ring[_ring_slot(x, 0, n, y + 1, ring, tags)]
            q2, q3 = ring[_ring_slot(x, 0, n, y + 2, ring, tags)], ring[_ring_slot(x, 0, n, y + 3, ring, tags)]
            q4, q5 = ring[_ring_slot(x, 0, n, y + 4, ring, tags)], ring[_ring_slot(x, 0, n, y + 5, ring, tags)]
            if sw == 1 and dw == 1:  # (unit steps: the columns' offsets known, measured ~1.5x faster)
                for ox in range(wo):
                    _rows4(q0, q1, q2, q3, q4, q5, wf, bf, out, r, ox, ox, ox + 1, ox + 2, up, lo, hi)
            else:
                for ox in range(wo):
                    _rows4(q0, q1, q2, q3, q4, q5, wf, bf, out, r, ox, ox * sw, ox * sw + dw, ox * sw + 2 * dw, up, lo,
                           hi)
            r += 4
            continue
        y = oy * sh - pt
        q0 = ring[_ring_slot(x, 0, n, y, ring, tags)]
        q1 = ring[_ring_slot(x, 0, n, y + dh, ring, tags)]
        q2 = ring[_ring_slot(x, 0, n, y + 2 * dh, ring, tags)]
        for ox in range(wo):
            j0 = ox * sw
            j1, j2 = j0 + dw, j0 + 2 * dw
            for ch in range(c):
                v = bf[ch] + q0[j0, ch] * wf[0, 0, ch] + q0[j1, ch] * wf[0, 1, ch] + q0[j2, ch] * wf[0, 2, ch]
                v = v + q1[j0, ch] * wf[1, 0, ch] + q1[j1, ch] * wf[1, 1, ch] + q1[j2, ch] * wf[1, 2, ch]
                v = v + q2[j0, ch] * wf[2, 0, ch] + q2[j1, ch] * wf[2, 1, ch] + q2[j2, ch] * wf[2, 2, ch]
                out[r, ox, ch] = _fx40_round(v, up, lo, hi)
        r += 1


@numba.njit(inline="always", **_JIT_FMA)
def _sums4(q0, q1, q2, q3, q4, q5, wf, acc, ox, j0, j1, j2):  # pragma: no cover - compiled
    """The sums of output pixel ``ox`` of four output rows into ``acc[0..3, ox]`` (see :func:`_rows4`)."""
    for ch in range(acc.shape[2]):
        w00, w01, w02 = wf[0, 0, ch], wf[0, 1, ch], wf[0, 2, ch]
        w10, w11, w12 = wf[1, 0, ch], wf[1, 1, ch], wf[1, 2, ch]
        w20, w21, w22 = wf[2, 0, ch], wf[2, 1, ch], wf[2, 2, ch]
        x0, x1, x2 = q0[j0, ch], q0[j1, ch], q0[j2, ch]
        a0 = x0 * w00 + x1 * w01 + x2 * w02
        x0, x1, x2 = q1[j0, ch], q1[j1, ch], q1[j2, ch]
        a0 = a0 + x0 * w10 + x1 * w11 + x2 * w12
        a1 = x0 * w00 + x1 * w01 + x2 * w02
        x0, x1, x2 = q2[j0, ch], q2[j1, ch], q2[j2, ch]
        a0 = a0 + x0 * w20 + x1 * w21 + x2 * w22
        a1 = a1 + x0 * w10 + x1 * w11 + x2 * w12
        a2 = x0 * w00 + x1 * w01 + x2 * w02
        x0, x1, x2 = q3[j0, ch], q3[j1, ch], q3[j2, ch]
        a1 = a1 + x0 * w20 + x1 * w21 + x2 * w22
        a2 = a2 + x0 * w10 + x1 * w11 + x2 * w12
        a3 = x0 * w00 + x1 * w01 + x2 * w02
        x0, x1, x2 = q4[j0, ch], q4[j1, ch], q4[j2, ch]
        a2 = a2 + x0 * w20 + x1 * w21 + x2 * w22
        a3 = a3 + x0 * w10 + x1 * w11 + x2 * w12
        x0, x1, x2 = q5[j0, ch], q5[j1, ch], q5[j2, ch]
        a3 = a3 + x0 * w20 + x1 * w21 + x2 * w22
        acc[0, ox, ch] = a0
        acc[1, ox, ch] = a1
        acc[2, ox, ch] = a2
        acc[3, ox, ch] = a3


@numba.njit(**_JIT_FMA)
def depthwise_sa8_3_rows(x, x_off, wf, out, row0, ho, geo, chan, par):  # pragma: no cover - compiled
    """:func:`depthwise_sa8_rows` of a 3x3 kernel with the sums of ``x - x_off`` in float32 (16 lanes):
    integer-valued and exact while ``9 * max|x - x_off| * max|w| < 2**24`` (the caller checks it:
    every product and partial sum is then an integer float32 holds; in any order, fused multiply-adds
    included: the ``contract`` flag rounds nothing), on the ring of input rows of :func:`_new_ring`,
    four output rows at a time as :func:`depthwise_fx3_rows`; then the s8asym output stage of
    :func:`_sa8_out` on the integer sums, a block of rows at a time.

    Args:
        x: (N, H, W, C) int8 / int16 input; x_off: the input offset; wf: (3, 3, C) float32 weights.
        out, row0, ho, geo, chan, par: as :func:`depthwise_sa8_rows`.
    """
    c = x.shape[3]
    rows, wo = out.shape[0], out.shape[1]
    sh, sw, dh, dw, pt = geo[0], geo[1], geo[2], geo[3], geo[4]
    up, zp, lo, hi = par[0] != 0, par[2], par[3], par[4]
    pre_lo, pre_hi = (-32768, 32767) if par[1] != 0 else (_I64_MIN, _I64_MAX)
    block = sh == 1 and dh == 1
    ring, tags = _new_ring(x, wo, geo, block, wf)
    acc = np.empty((4, wo, c), dtype=wf.dtype)
    r = 0
    while r < rows:
        n, oy = (row0 + r) // ho, (row0 + r) % ho
        if block and r + 4 <= rows and oy + 4 <= ho:
            y = oy - pt
            q0, q1 = ring[_ring_slot(x, x_off, n, y, ring, tags)], ring[_ring_slot(x, x_off, n, y + 1, ring, tags)]
            q2, q3 = ring[_ring_slot(x, x_off, n, y + 2, ring, tags)], ring[_ring_slot(x, x_off, n, y + 3, ring, tags)]
            q4, q5 = ring[_ring_slot(x, x_off, n, y + 4, ring, tags)], ring[_ring_slot(x, x_off, n, y + 5, ring, tags)]
            if sw == 1 and dw == 1:  # (unit steps: see depthwise_fx3_rows)
                for ox in range(wo):
                    _sums4(q0, q1, q2, q3, q4, q5, wf, acc, ox, ox, ox + 1, ox + 2)
            else:
                for ox in range(wo):
                    _sums4(q0, q1, q2, q3, q4, q5, wf, acc, ox, ox * sw, ox * sw + dw, ox * sw + 2 * dw)
            k = 4
        else:
            y = oy * sh - pt
            q0 = ring[_ring_slot(x, x_off, n, y, ring, tags)]
            q1 = ring[_ring_slot(x, x_off, n, y + dh, ring, tags)]
            q2 = ring[_ring_slot(x, x_off, n, y + 2 * dh, ring, tags)]
            for ox in range(wo):
                j0 = ox * sw
                j1, j2 = j0 + dw, j0 + 2 * dw
                for ch in range(c):
                    v = q0[j0, ch] * wf[0, 0, ch] + q0[j1, ch] * wf[0, 1, ch] + q0[j2, ch] * wf[0, 2, ch]
                    v = v + q1[j0, ch] * wf[1, 0, ch] + q1[j1, ch] * wf[1, 1, ch] + q1[j2, ch] * wf[1, 2, ch]
                    v = v + q2[j0, ch] * wf[2, 0, ch] + q2[j1, ch] * wf[2, 1, ch] + q2[j2, ch] * wf[2, 2, ch]
                    acc[0, ox, ch] = v
            k = 1
        for i in range(k):
            for ox in range(wo):
                for ch in range(c):
                    out[r + i, ox, ch] = _sa8_out(np.int64(acc[i, ox, ch]), chan, ch, up, pre_lo, pre_hi, zp, lo, hi)
        r += k


@numba.njit(**_JIT_FMA)
def depthwise_sa8_3_flat(x, x_off, wt, gather, out, row0, ho, geo, chan, par):  # pragma: no cover - compiled
    """:func:`depthwise_sa8_3_rows` for tiny maps: loops over a few channels run mostly in scalar
    remainders, so the loop here runs over a whole output row, ``j = ox * C + c`` (``Wo * C`` lanes;
    the per-channel operands tiled along the row once by the caller), the nine products and the output
    stage of each ``j`` in one pass.

    The input minus ``x_off`` is first converted into a float32 copy padded with zeros (rows and
    columns: every tap reads inside it, as the ring of :func:`_new_ring`), each padded row split by
    column phase: padded column ``m * stride_w + p`` at ``[p, m * C + c]`` (with a stride or a channel
    multiplier, a padded row is gathered from the converted input row by the caller's table ``gather``).
    Output row ``oy``'s tap ``(ky, kx)`` then reads padded row ``oy * stride_h + ky * dil_h``, phase ``kx * dil_w % stride_w``,
    contiguously from ``(kx * dil_w // stride_w) * C``. Sums in float32: integer-valued and exact as in
    :func:`depthwise_sa8_3_rows` (the caller checks the bound). An input of ``C / m`` channels stands
    for its channels each repeated ``m`` times (a channel multiplier: output channel ``c`` reads input
    channel ``c // m``), repeated in that conversion.

    Args:
        x: (N, H, W, C / m) C-contiguous int8 / int16 input (``m``: ``C`` over its channels); x_off: the
            input offset.
        wt: (9, Wo * C) float32 weights tiled along the row (``wt[3 * ky + kx, ox * C + c] = w[ky, kx, c]``).
        gather: (stride_w * ceil(Wp / stride_w) * C,) uint32: for each place ``p * ceil(Wp / stride_w) * C
            + m * C + c`` of a padded row of ``Wp`` columns (``Wp = max(pad_l + W, (Wo - 1) * stride_w + 2
            * dil_w + 1)``) the index ``ix * C / m + c // m`` of input column ``ix = m * stride_w + p -
            pad_l`` in the input row, or ``W * C / m`` (a zero) outside the input (unused for stride 1
            without a multiplier).
        out: (rows, Wo, C) C-contiguous output rows (written); row0, ho, geo, par: as
            :func:`depthwise_sa8_rows`.
        chan: (7, Wo * C) int64 per-channel constants of :func:`depthwise_sa8_rows` tiled along the row.
    """
    nb, h, wdt, cin = x.shape
    wo, c = out.shape[1], out.shape[2]
    mult = c // cin
    sh, sw, dh, dw, pt, pl = geo[0], geo[1], geo[2], geo[3], geo[4], geo[5]
    up, zp, lo, hi = par[0] != 0, par[2], par[3], par[4]
    pre_lo, pre_hi = (-32768, 32767) if par[1] != 0 else (_I64_MIN, _I64_MAX)
    length = wo * c
    width = max(pl + wdt, (wo - 1) * sw + 2 * dw + 1)  # padded columns: every tap's column inside
    height = max(pt + h, (ho - 1) * sh + 2 * dh + 1)
    n0, n1 = row0 // ho, (row0 + out.shape[0] - 1) // ho
    xp = np.zeros((n1 + 1 - n0, height, sw, (width + sw - 1) // sw * c), dtype=wt.dtype)
    off = wt.dtype.type(x_off)
    xr = x.reshape(nb, h, wdt * cin)  # C-contiguous (the caller's): a view
    tmp = np.zeros(wdt * cin + 1, dtype=wt.dtype)  # an input row converted, and a zero for the padding
    for n in range(n0, n1 + 1):
        for iy in range(h):
            src = xr[n, iy]
            if sw == 1 and mult == 1:
                dst = xp[n - n0, pt + iy, 0, pl * c:]
                for j in range(wdt * c):
                    dst[j] = wt.dtype.type(src[j]) - off
            else:
                for j in range(wdt * cin):
                    tmp[j] = wt.dtype.type(src[j]) - off
                dst = xp[n - n0, pt + iy].reshape(gather.size)
                for j in range(gather.size):
                    dst[j] = tmp[gather[j]]
    p0, p1, p2 = 0, dw % sw, 2 * dw % sw
    k1, k2 = dw // sw * c, 2 * dw // sw * c
    w0, w1, w2, w3, w4, w5, w6, w7, w8 = wt[0], wt[1], wt[2], wt[3], wt[4], wt[5], wt[6], wt[7], wt[8]
    flat = out.reshape(out.shape[0], length)  # C-contiguous (the caller's): a view
    for r in range(out.shape[0]):
        n, oy = (row0 + r) // ho, (row0 + r) % ho
        q0, q1, q2 = xp[n - n0, oy * sh], xp[n - n0, oy * sh + dh], xp[n - n0, oy * sh + 2 * dh]
        # slices: indices the compiler knows non-negative (no wrap-around: the loop vectorises)
        a0, a1, a2 = q0[p0, :length], q0[p1, k1:k1 + length], q0[p2, k2:k2 + length]
        b0, b1, b2 = q1[p0, :length], q1[p1, k1:k1 + length], q1[p2, k2:k2 + length]
        d0, d1, d2 = q2[p0, :length], q2[p1, k1:k1 + length], q2[p2, k2:k2 + length]
        o = flat[r]
        for j in range(length):
            v = a0[j] * w0[j] + a1[j] * w1[j] + a2[j] * w2[j]
            v = v + b0[j] * w3[j] + b1[j] * w4[j] + b2[j] * w5[j]
            v = v + d0[j] * w6[j] + d1[j] * w7[j] + d2[j] * w8[j]
            o[j] = _sa8_out(np.int64(v), chan, j, up, pre_lo, pre_hi, zp, lo, hi)


@numba.njit(**_JIT)
def _fx40_out(v, s, add, odd, lo, hi):  # pragma: no cover - compiled
    """The output stage of :func:`depthwise_fx3_pairs` of one biased sum ``v``."""
    return min(max((v + add + ((v >> s) & odd)) >> s, lo), hi)


@numba.njit(**_JIT_FMA)
def depthwise_fx3_pairs(x, wf, acc, out, row0, ho, geo, bias, par):  # pragma: no cover - compiled
    """:func:`depthwise_fx_rows` of a 3x3 kernel and a 40-bit accumulator with the sums in float64 read
    from the input directly (the calls :func:`depthwise_fx3_rows` does not take: see ``_jit._ring_pays``):
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
