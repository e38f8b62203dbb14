"""Rounding, saturation and shifts of MLI 1.0's emulated ARC DSP arithmetic (int64 NumPy).

Every rounding shift follows the rounding mode of the platform in force (``DSP_CTRL.RM``):
convergent for MLI 1.0's default build, half up for the ``up`` build. Rounding itself is done by
:func:`pymli.arith.requant.shift_round`; this module only adds the 1.x shapes of it (negative
shifts are saturating left shifts, as the FXAPI ``asr`` intrinsics do).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ..arith.requant import shift_round

__all__ = ["sat", "rnd", "rnd_sat", "asr_sat", "norm_a40", "I64"]

I64 = np.int64


def sat(x: npt.ArrayLike, bits: int) -> np.ndarray:
    """Saturate to the signed ``bits``-bit range (``fx_sat_q15`` / ``fxs_sat``)."""
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return np.clip(np.asarray(x, dtype=I64), lo, hi)


def rnd(x: npt.ArrayLike, s: int) -> np.ndarray:
    """``x / 2^s`` rounded per the platform for ``s > 0``; ``x * 2^-s`` (exact, unsaturated) for ``s <= 0``.

    The caller keeps ``|x| * 2^-s`` below 2^62 (true for every 1.x accumulator after clipping).
    """
    x = np.asarray(x, dtype=I64)
    s = int(s)
    if s > 62:
        return np.zeros_like(x)
    if s > 0:
        return shift_round(x, s)
    return x << I64(-s)


def rnd_sat(x: npt.ArrayLike, s: int, bits: int) -> np.ndarray:
    """``fxs_asr_rnd_w(x, s, bits)``: rounding shift right by ``s`` (saturating left for ``s < 0``), saturated.

    This is the read-out of an accumulator into a ``bits``-bit container (``fx_q15_cast_asl_rnd_a40``,
    ``fx_asr_rnd_q15``, ``fx_v2q15_cast_nf_asl_rnd_v2a40``, ...).
    """
    x = np.asarray(x, dtype=I64)
    s = int(s)
    if s >= 0:
        return sat(rnd(x, s), bits)
    lim = I64(1) << I64(bits)
    left = min(-s, bits + 1)
    return sat(np.clip(x, -lim, lim) << I64(left), bits)


def asr_sat(x: npt.ArrayLike, s: int, bits: int) -> np.ndarray:
    """``fxs_asr_w``: truncating shift right by ``s`` (saturating left for ``s < 0``), saturated to ``bits``."""
    x = np.asarray(x, dtype=I64)
    s = int(s)
    if s >= 0:
        return sat(x >> I64(min(s, 63)), bits)
    lim = I64(1) << I64(bits)
    left = min(-s, bits + 1)
    return sat(np.clip(x, -lim, lim) << I64(left), bits)


def norm_a40(x: int) -> int:
    """``fx_norm_a40``: left shifts normalising the fractional value ``raw << 1`` (31 for 0)."""
    x = int(x)
    if x == 0:
        return 31
    mag = ~x if x < 0 else x
    return 30 - mag.bit_length()
