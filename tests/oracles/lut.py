"""A slow scalar oracle of MLI's reference LUT code, on plain Python ints (one element at a time).

Written directly from the C semantics (32-bit ``int`` temporaries, int16 stores that wrap) on top of
the shared model of mli_math.h (tests/oracles/c_math.py), without using :mod:`pymli.arith`, so the
vectorised code is checked against an independent model.
"""

from __future__ import annotations

from .c_math import add_sat, asl, asr, asr_rnd, norm, sat, wrap


def interp_one(x: int, table: list[int], lut_in: int, offset: int, in_frac: int, mode: str) -> int:
    shift = in_frac - lut_in
    pre = min(max(shift - 15, 0), 15)
    shift = min(shift, 15)
    xs = asr(x, pre)
    idx = min(max(add_sat(asr(xs, shift), offset), 0), len(table) - 2)
    frac = xs & ((1 << shift) - 1)
    lo = table[idx]
    diff = wrap(lo - table[idx + 1], 16)
    corr = sat(asr_rnd(diff * frac, shift, 32, mode), 16)
    return wrap(lo - corr, 16)


def nearest_one(x: int, table: list[int], lut_in: int, offset: int, in_frac: int) -> int:
    shift = min(in_frac - lut_in, 15)
    idx = min(max(add_sat(asl(x, -shift), offset), 0), len(table) - 1)
    return table[idx]


def lookup_one(x, table, lut_in, offset, in_frac, mode):
    if min(in_frac - lut_in, 15) > 0:
        return interp_one(x, table, lut_in, offset, in_frac, mode)
    return nearest_one(x, table, lut_in, offset, in_frac)


def act_fx_one(x, table, lut_in, offset, in_frac, out_bits, mode):
    r = lookup_one(x, table, lut_in, offset, in_frac, mode)
    if out_bits == 16:
        return r
    return sat(asr_rnd(r, 8, 16, mode), 8)


def sa8_in(x, zp, scale, shift, frac, mode):
    return asr_rnd(wrap(x - zp, 16) * scale, shift - frac, 32, mode)


def to_sa8(v, zp, shift, mode):
    return sat(wrap(asr_rnd(v, shift, 32, mode) + zp, 32), 8)


def act_sa8_one(x, table, lut_in, lut_out, offset, zp, scale, shift, out_zp, out_shift, mode):
    frac = 15 - (7 - lut_in)
    v = sa8_in(x, zp, scale, shift, frac, mode)
    r = lookup_one(v, table, lut_in, offset, frac, mode)
    return to_sa8(r, out_zp, lut_out - out_shift, mode)


def _recip(total: int, bits: int, mode: str) -> tuple[int, int]:
    total = wrap(total, 32)
    e = norm(total, 32)
    mnt = sat(asr_rnd(total, 16 - e, 32, mode), bits)
    q = (1 << 29) // abs(mnt) * (1 if mnt > 0 else -1)
    return e, wrap(min(q, 32767), bits)


def softmax_fx_slice(xs: list[int], table, lut_in, lut_out, offset, in_frac, bits, mode):
    m = max(xs)
    es = [act_fx_one(sat(x - m, 32), table, lut_in, offset, in_frac, bits, mode) for x in xs]
    e, rec = _recip(sum(es), bits, mode)
    sh = min(2 * lut_out + 15 - e - (bits - 1), 2 * bits - 1)
    return [sat(asr_rnd(rec * v, sh, 32, mode), bits) for v in es]


def softmax_sa8_slice(xs: list[int], table, lut_in, lut_out, offset, scale, shift, mode):
    m = max(xs)
    frac = 15 - (7 - lut_in)
    es = [interp_one(sa8_in(x, m, scale, shift, frac, mode), table, lut_in, offset, frac, mode) for x in xs]
    e, rec = _recip(sum(es), 16, mode)
    sh = min(2 * lut_out + 15 - e - 8, 31)
    return [to_sa8(rec * v, -128, sh, mode) for v in es]


def l2_slice(xs: list[int], table, lut_in, lut_out, offset, bits, out_shift, zp, mode):
    if zp is not None:
        xs = [sat(x - zp, 16) for x in xs]
    total = sum(x * x for x in xs)
    ns = 48 - norm(total, 64)
    if ns & 1:
        ns += 1
    cast = sat(asr_rnd(total, ns, 64, mode), 16)
    inv = interp_one(cast, table, lut_in, offset, 8, mode)
    sh = lut_out + ((ns + 8) >> 1) - out_shift
    return [sat(asr_rnd(inv * x, sh, 32, mode), bits) for x in xs]
