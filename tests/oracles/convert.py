"""Slow pure-Python models of MLI's conversion helpers (define_requant_params, calc_convert).

Built on the shared scalar model of pal/ref/mli_math.h (tests/oracles/c_math.py, which test_rounding uses
directly), it is the oracle of the vectorised helpers in pymli.arith.convert.
"""

from __future__ import annotations

from .c_math import CONV, UP, add_sat, asl, asr_rnd, cdiv, lim, norm, sat, sub_sat, wrap  # noqa: F401


def requant_params(in_scale: int, in_frac: int, out_scale: int, out_frac: int, mode: str) -> tuple[int, int]:
    """define_requant_params (scale, shift) for one index."""
    pre = norm(in_scale, 32) - norm(wrap(out_scale, 16), 16)
    ratio = wrap(cdiv(wrap(in_scale << pre, 32), out_scale), 32)
    norm_shift = 16 - norm(ratio, 32)
    scale = sat(asr_rnd(ratio, norm_shift, 32, mode), 16)
    return scale, wrap(pre + in_frac - out_frac - norm_shift, 16)


def calc_convert(x: int, in_zp: int, scale: int, shift: int, out_zp: int, wide: bool, out_bits: int,
                 mode: str) -> int:
    """calc_convert of mli_hlp_convert_tensor_ref.h for one element."""
    if not wide:
        d = sub_sat(x, in_zp, 16)
        acc = asr_rnd(d * scale, min(shift, 31), 32, mode)
        v = add_sat(acc, out_zp, 32)
    else:
        d = sub_sat(x, in_zp, 32)
        dn = norm(d, 32)
        d = asl(d, dn, 32)
        sn = norm(scale, 32)
        s32 = asl(scale, sn, 32)
        hi = (d * s32) >> 32
        acc = asr_rnd(hi, min(shift, 63) + sn + dn - 32, 32, mode)
        v = add_sat(acc, out_zp, 32)
    return sat(v, out_bits)
