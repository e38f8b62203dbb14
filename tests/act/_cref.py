"""Slow scalar oracles: plain-Python integer transcriptions of the MLI reference arithmetic.

One element at a time, no NumPy: the vectorised code in pymli is compared against these.
"""

from __future__ import annotations


def lim(bits: int) -> tuple[int, int]:
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def sat(x: int, bits: int) -> int:
    lo, hi = lim(bits)
    return min(max(x, lo), hi)


def wrap(x: int, bits: int) -> int:
    m = 1 << bits
    x &= m - 1
    return x - m if x >= m >> 1 else x


def asl(x: int, n: int, bits: int) -> int:
    if n < 0:
        return x >> -n if -n <= bits - 1 else (-1 if x < 0 else 0)
    if n > bits - 1:
        return 0 if x == 0 else (lim(bits)[0] if x < 0 else lim(bits)[1])
    return sat(x << n, bits)


def asr_rnd(x: int, n: int, bits: int, up: bool) -> int:
    if n < 0:
        return asl(x, -n, bits)
    if n == 0:
        return x
    if n > bits - 1:
        return 0
    if up:
        return sat(x + (1 << (n - 1)), bits) >> n
    r = x >> n
    half = 1 << (n - 1)
    if (x & half) and ((r & 1) or (x & (half - 1))):
        r = sat(r + 1, bits)
    return r


def norm(x: int, bits: int) -> int:
    if x == 0:
        return bits - 1
    hi = -1 if x < 0 else 0
    r = 0
    while (x >> r) != hi:
        r += 1
    return bits - 1 - r


def norm_cast(x: int, in_bits: int, out_bits: int, up: bool) -> tuple[int, int]:
    ns = (in_bits - out_bits) - norm(x, in_bits)
    return sat(asr_rnd(x, ns, in_bits, up), out_bits), ns


def cdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def leaky_fx(x: int, slope: int, shift: int, bits: int, normalise: bool, up: bool) -> int:
    if normalise:
        slope, ns = norm_cast(slope, bits, bits, up)
        shift -= ns
    pos = max(0, x)
    neg = sat(asr_rnd(min(0, x) * slope, min(shift, 31), 32, up), bits)
    return sat(pos + neg, bits)


def sa8_params(in_scale: int, in_sfb: int, out_scale: int, out_sfb: int, out_zp: int,
               alpha_q: int, slope_zp: int, slope_scale: int, slope_sfb: int, up: bool):
    pre = norm(in_scale, 32) - norm(out_scale, 16)
    scale, ns = norm_cast(cdiv(in_scale << pre, out_scale), 32, 16, up)
    shift = pre + in_sfb - out_sfb - ns
    scale = asl(scale, max(-shift, 0), 16)
    shift = max(shift, 0)
    alpha_val = sat((alpha_q - slope_zp) * slope_scale, 32)
    alpha, ns1 = norm_cast(alpha_val, 32, 16, up)
    a_shift = shift + slope_sfb - ns1
    a_scale, ns2 = norm_cast(scale * alpha, 32, 16, up)
    a_shift -= ns2
    return (scale, shift, out_zp), (a_scale, a_shift, out_zp)


def leaky_sa8(x: int, in_zp: int, ident, alpha, up: bool) -> int:
    scale, shift, off = ident if x >= in_zp else alpha
    sub = sat(x - in_zp, 16)
    r = asr_rnd(scale * sub, shift, 32, up)
    return sat(sat(r + off, 32), 8)
