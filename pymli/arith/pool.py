"""Arithmetic of MLI's pooling kernels: the reciprocal of the window size and the sa8 requantisation.

Average pooling in MLI never divides. For a window of ``n`` valid input elements it multiplies the
window sum by a 16-bit reciprocal ``mul ~ 2**shift / n`` (``get_mul_shift_value`` /
``calc_mul`` of ``kernels/pooling/impl/mli_krn_avepool_hwc_ref.h``) and shifts right with
rounding. For sa8 the reciprocal is merged with the input-to-output scale ratio
(``define_requant_params`` of ``bricks/impl/mli_prv_quant_ref.h``) and narrowed to 8 bits (16 bits
in an ``AVEPOOL_16BIT_MUL`` build, :attr:`pymli.config.Platform.avepool_16bit_mul`); the output
zero point enters as an accumulator bias ``offset << shift``.

All helpers here take Python ints (per-window parameters) or NumPy arrays (window sums).
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from ..config import get_platform
from ..formats import RoundMode
from .rounding import asl, asr_rnd, cast_fx, norm, norm_cast, sat, trunc_div, wrap

__all__ = [
    "norm_fx",
    "norm_cast",
    "scalar_cast",
    "RequantParams",
    "requant_params",
    "reciprocal",
    "avepool_multiplier",
    "avepool_output",
]


norm_fx = norm
"""``mli_math_norm_fx<intN_t>`` on one value: :func:`pymli.arith.rounding.norm`."""


def scalar_cast(x: int, shift: int, in_bits: int, out_bits: int, mode: RoundMode | None = None) -> int:
    """``mli_math_cast_fx<in_T, out_T>(x, shift)`` on one value: rounding shift, then saturation.

    Args:
        x: the value.
        shift: right shift (left for a negative one).
        in_bits, out_bits: input and output container bits.
        mode: rounding (default: the platform's).

    Returns:
        The result as a Python int.
    """
    return int(cast_fx(np.int64(x), shift, in_bits, out_bits, mode))


@dataclasses.dataclass(frozen=True)
class RequantParams:
    """``s8asym_quant_params``: ``out ~ (in * scale) >> shift + offset``."""

    scale: int
    shift: int
    offset: int


def requant_params(in_scale: int, in_sfb: int, in_zp: int,
                   out_scale: int, out_sfb: int, out_zp: int) -> RequantParams:
    """``define_requant_params``: scale ratio of two sa8 tensors as a 16-bit multiplier + shift.

    Args:
        in_scale, in_sfb, in_zp: input scale (int16), scale_frac_bits, zero point.
        out_scale, out_sfb, out_zp: the same for the output.

    Returns:
        The :class:`RequantParams` (scale, shift, offset); derived once per distinct arguments and
        rounding mode (the derivation rounds), then cached.
    """
    return _requant_params(int(in_scale), int(in_sfb), int(in_zp), int(out_scale), int(out_sfb), int(out_zp),
                           get_platform().round_mode)


@functools.lru_cache(maxsize=256)
def _requant_params(in_scale: int, in_sfb: int, in_zp: int, out_scale: int, out_sfb: int, out_zp: int,
                    mode: RoundMode) -> RequantParams:
    """:func:`requant_params` with the rounding mode explicit (Python ints in, cached)."""
    # Pre-shift the input scale so that the integer division keeps 15-16 significant bits.
    pre = norm_fx(in_scale, 32) - norm_fx(wrap(out_scale, 16), 16)
    ratio = int(wrap(int(in_scale) << pre, 32))
    quot = trunc_div(ratio, int(out_scale))
    scale, norm_shift = norm_cast(quot, 32, 16, mode)
    shift = pre + int(in_sfb) - int(out_sfb) - norm_shift
    zp_term = scalar_cast(int(wrap(scale * int(in_zp), 32)), shift, 32, 16, mode)
    offset = int(sat(int(wrap(out_zp, 16)) - zp_term, 16))
    return RequantParams(scale, shift, offset)


def reciprocal(div: int) -> tuple[int, int]:
    """``get_mul_shift_value(div)``: (mul, shift) with ``mul / 2**shift ~ 1 / div``.

    ``mul`` is a Q15 value in [0x4000, 0x7fff]: the truncated ``2**31 / div`` normalised so that
    its top bit is bit 14. (MLI tabulates divisors below 32; the table equals this formula.)
    ``div`` is taken as the C ``unsigned`` it is: 0 gives (0, 0), and a negative window size (only
    in degenerate geometries) wraps to a huge divisor whose reciprocal is 0.

    Args:
        div: the divisor (a window size).

    Returns:
        (mul, shift) as Python ints.
    """
    div = int(div) & 0xFFFFFFFF
    if div == 0:
        return 0, 0
    val = (1 << 31) // div  # u1.31
    norm = 0
    if div > 1:
        norm = norm_fx(val, 32) + 1
        val = (val << (norm & 31)) & 0xFFFFFFFF  # x86 masks the shift count
    return val >> 17, 14 + norm


def avepool_multiplier(count: int, base_shift: int, scale: int | None = None,
                       mul16: bool = False) -> tuple[int, int]:
    """Multiplier and total shift of one pooling window of ``count`` valid elements.

    Args:
        count: valid (non-padded) elements in the window.
        base_shift: ``in_frac_bits - out_frac_bits`` (fx) or the requantisation shift (sa8).
        scale: sa8 requantisation scale (``RequantParams.scale``); ``None`` for fx.
        mul16: AVEPOOL_16BIT_MUL build: keep a 16-bit instead of an 8-bit sa8 multiplier.

    Returns:
        (mul, shift) such that ``out = (bias + mul * sum) >> shift`` with rounding.
    """
    mul, sh = reciprocal(count)
    shift = base_shift + sh
    if scale is not None:
        mul, norm_shift = norm_cast(int(wrap(int(scale) * mul, 32)), 32, 16 if mul16 else 8)
        shift -= norm_shift
    return mul, shift


def avepool_output(window_sum: np.ndarray, mul: int, shift: int, offset: int,
                   acc_bits: int, out_bits: int, sum_bound: int | None = None) -> np.ndarray:
    """``compute_avepool``: bias + reciprocal x sum, rounding shift, saturation to the output.

    Args:
        window_sum: integer sums of the valid inputs of each window (any shape).
        mul, shift: from :func:`avepool_multiplier`.
        offset: zero-point offset of the output (``RequantParams.offset``; 0 for fx).
        acc_bits: accumulator width: 32 for 8-bit data (``mli_acc32_t``, wraps), 64 for 16-bit
            data (``mli_acc40_t`` is an int64 in the reference PAL).
        out_bits: 8 or 16.
        sum_bound: a bound on ``|window_sum|`` (computed from the data if not given).

    Returns:
        int64 array of output values.
    """
    bias = int(asl(np.int64(offset), shift, acc_bits)) if offset else 0
    acc = window_sum.astype(np.int64)
    acc *= mul
    if bias:
        acc += bias
    if sum_bound is None:
        sum_bound = int(np.abs(window_sum).max(initial=0))
    # |acc| bound: decides whether the wrap-around and the saturating rounding add can trigger.
    bound = abs(mul) * sum_bound + abs(bias)
    top = (1 << (acc_bits - 1)) - 1
    if acc_bits < 64 and bound > top:
        acc = wrap(acc, acc_bits)
        bound = top + 1
    if get_platform().round_up and 0 < shift < acc_bits and bound + (1 << (shift - 1)) <= top:
        # ROUND_UP without saturation: add half an LSB, shift (what asr_rnd does here).
        acc += 1 << (shift - 1)
        acc >>= shift
    else:
        acc = asr_rnd(acc, shift, acc_bits)
    lo, hi = -(1 << (out_bits - 1)), (1 << (out_bits - 1)) - 1
    return np.clip(acc, lo, hi, out=acc)
