"""Slow scalar oracles of the ReLU-family arithmetic, on plain Python ints one element at a time.

Built on the shared model of mli_math.h (tests/oracles/c_math.py); no NumPy, nothing from pymli.arith.
"""

from __future__ import annotations

from .c_math import asl, asr_rnd, cdiv, norm, norm_cast, sat


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
