"""Slow pure-Python models of pal/ref/mli_math.h, written from the C semantics, one value at a time.

Used as the oracle of the vectorised helpers in pymli.arith.rounding and pymli.arith.convert.
"""

from __future__ import annotations

UP, CONV = "up", "convergent"


def lo_hi(bits: int) -> tuple[int, int]:
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def to_signed(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def limit(sign: int, bits: int) -> int:
    lo, hi = lo_hi(bits)
    return lo if sign < 0 else hi


def add(a: int, b: int, bits: int) -> int:
    lo, hi = lo_hi(bits)
    if b > 0 and a > hi - b:
        return hi
    if b < 0 and a < lo - b:
        return lo
    return a + b


def sub(a: int, b: int, bits: int) -> int:
    lo, hi = lo_hi(bits)
    if b < 0 and a > hi + b:
        return hi
    if b > 0 and a < lo + b:
        return lo
    return a - b


def asr_pos(x: int, n: int, bits: int) -> int:
    if n > bits - 1:
        return -1 if x < 0 else 0
    return x >> n


def asl(x: int, n: int, bits: int) -> int:
    if n < 0:
        return asr_pos(x, -n, bits)
    if n > bits - 1:
        return limit(x, bits) if x != 0 else 0
    top = x >> (bits - 1 - n)
    if top in (0, -1):
        return to_signed(x << n, bits)
    return limit(top, bits)


def asr(x: int, n: int, bits: int) -> int:
    if n > bits - 1:
        return -1 if x < 0 else 0
    if n < 0:
        return asl(x, -n, bits)
    return x >> n


def asr_rnd(x: int, n: int, bits: int, mode: str) -> int:
    if n < 0:
        return asl(x, -n, bits)
    if n == 0:
        return x
    if n > bits - 1:
        return 0
    half = (1 << n) >> 1
    if mode == UP:
        return asr(add(x, half, bits), n, bits)
    r = asr(x, n, bits)
    if (x & half) and ((r & 1) or (x & (half - 1))):
        r = add(r, 1, bits)
    return r


def sat_fx(x: int, nbits: int, bits: int) -> int:
    return asr(asl(x, nbits, bits), nbits, bits)


def norm(x: int, bits: int) -> int:
    if x == 0:
        return bits - 1
    hi = -1 if x < 0 else 0
    r = 0
    while (x >> r) != hi:
        r += 1
    return bits - 1 - r


def trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return -q if (a < 0) != (b < 0) else q


def requant_params(in_scale: int, in_frac: int, out_scale: int, out_frac: int, mode: str) -> tuple[int, int]:
    """define_requant_params (scale, shift) for one index."""
    pre = norm(in_scale, 32) - norm(to_signed(out_scale, 16), 16)
    ratio = to_signed(trunc_div(to_signed(in_scale << pre, 32), out_scale), 32)
    norm_shift = 16 - norm(ratio, 32)
    scale = asr_rnd(ratio, norm_shift, 32, mode)
    scale = max(-32768, min(32767, scale))
    return scale, to_signed(pre + in_frac - out_frac - norm_shift, 16)


def calc_convert(x: int, in_zp: int, scale: int, shift: int, out_zp: int, wide: bool, out_bits: int,
                 mode: str) -> int:
    """calc_convert of mli_hlp_convert_tensor_ref.h for one element."""
    if not wide:
        d = sub(x, in_zp, 16)
        acc = asr_rnd(d * scale, min(shift, 31), 32, mode)
        v = add(acc, out_zp, 32)
    else:
        d = sub(x, in_zp, 32)
        dn = norm(d, 32)
        d = asl(d, dn, 32)
        sn = norm(scale, 32)
        s32 = asl(scale, sn, 32)
        hi = (d * s32) >> 32
        acc = asr_rnd(hi, min(shift, 63) + sn + dn - 32, 32, mode)
        v = add(acc, out_zp, 32)
    lo, hi_ = lo_hi(out_bits)
    return max(lo, min(hi_, v))
