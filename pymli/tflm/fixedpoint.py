"""gemmlowp fixed-point arithmetic on int32 raw values, as TFLM's reference kernels use it.

A ``FixedPoint<int32_t, I>`` is its raw int32 value with ``31 - I`` fractional bits; every function
here takes and returns int64 arrays of raw int32 values, with the integer-bit counts as arguments.
Additions wrap to int32 (gemmlowp's raw ``+``); products are :func:`~.quant_util.srdhm`.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ..arith.rounding import bit_length
from .quant_util import rounding_divide_by_pot, saturate, saturating_rounding_multiply_by_pot, srdhm, wrap

__all__ = [
    "clz32",
    "add",
    "sub",
    "mul",
    "rescale",
    "rounding_half_sum",
    "exp_on_interval_between_negative_one_quarter_and_0_excl",
    "exp_on_negative_values",
    "one_over_one_plus_x_for_x_in_0_1",
    "one_over_one_plus_x_for_x_in_0_1_int",
    "logistic",
    "one_minus_x_over_one_plus_x_for_x_in_0_1",
    "tanh",
    "log_x_for_x_greater_than_or_equal_to_1",
    "ONE0",
]

I64 = npt.NDArray[np.int64]
ONE0 = (1 << 31) - 1  # FixedPoint<int32, 0>::One()


def add(a: npt.ArrayLike, b: npt.ArrayLike) -> I64:
    """Raw int32 addition (wraps as the C code does)."""
    return wrap(np.asarray(a, np.int64) + np.asarray(b, np.int64), 32)


def sub(a: npt.ArrayLike, b: npt.ArrayLike) -> I64:
    """Raw int32 subtraction (wraps)."""
    return wrap(np.asarray(a, np.int64) - np.asarray(b, np.int64), 32)


def mul(a: npt.ArrayLike, b: npt.ArrayLike) -> I64:
    """FixedPoint product: ``SaturatingRoundingDoublingHighMul`` of the raws (Q(I1) x Q(I2) -> Q(I1+I2))."""
    return srdhm(a, b)


def rescale(x: npt.ArrayLike, src_bits: int, dst_bits: int) -> I64:
    """gemmlowp ``Rescale<dst>``: ``SaturatingRoundingMultiplyByPOT<src - dst>`` of the raw value."""
    return saturating_rounding_multiply_by_pot(x, src_bits - dst_bits)


def rounding_half_sum(a: npt.ArrayLike, b: npt.ArrayLike) -> I64:
    """gemmlowp ``RoundingHalfSum`` for int32: ``(a + b + sign) / 2`` in int64, C division."""
    s = np.asarray(a, np.int64) + np.asarray(b, np.int64)
    t = s + np.where(s >= 0, 1, -1)
    return np.where(t >= 0, t // 2, -((-t) // 2))


def exp_on_interval_between_negative_one_quarter_and_0_excl(a: npt.ArrayLike) -> I64:
    """gemmlowp: ``exp(a)`` for a Q0.31 ``a`` in ``[-1/4, 0)``, a 4th-order Taylor series around -1/8."""
    a = np.asarray(a, np.int64)
    constant_term = 1895147668  # exp(-1/8)
    constant_1_over_3 = 715827883
    x = add(a, 1 << 28)  # + 1/8
    x2 = mul(x, x)
    x3 = mul(x2, x)
    x4 = mul(x2, x2)
    x4_over_4 = saturating_rounding_multiply_by_pot(x4, -2)
    poly = saturating_rounding_multiply_by_pot(add(mul(add(x4_over_4, x3), constant_1_over_3), x2), -1)
    return add(constant_term, mul(constant_term, add(x, poly)))


_BARREL = [(-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535),
           (3, 720401), (4, 242)]


def exp_on_negative_values(a: npt.ArrayLike, integer_bits: int) -> I64:
    """gemmlowp ``exp_on_negative_values``: ``exp(a)`` for ``a <= 0`` in Q(integer_bits), result Q0.31.

    Args:
        a: raw values of a ``FixedPoint<int32, integer_bits>`` (non-positive).
        integer_bits: the input's integer bits.

    Returns:
        raw Q0.31 values.
    """
    a = np.asarray(a, np.int64)
    frac = 31 - integer_bits
    one_quarter = 1 << (frac - 2)
    mask = one_quarter - 1
    a_mod = sub(a & mask, one_quarter)
    result = exp_on_interval_between_negative_one_quarter_and_0_excl(rescale(a_mod, integer_bits, 0))
    remainder = sub(a_mod, a)
    for exponent, mult in _BARREL:
        if integer_bits > exponent:
            shift = frac + exponent
            if 0 <= shift < 32:
                bit = (remainder >> shift) & 1
                result = np.where(bit != 0, mul(result, mult), result)
    if integer_bits > 5:
        clamp = -(1 << (36 - integer_bits)) if integer_bits > 5 else 0
        result = np.where(a < clamp, 0, result)
    return np.where(a == 0, ONE0, result)


def one_over_one_plus_x_for_x_in_0_1(a: npt.ArrayLike) -> I64:
    """gemmlowp ``one_over_one_plus_x_for_x_in_0_1``: ``1 / (1 + a)`` for Q0.31 ``a`` in [0, 1],
    three Newton-Raphson steps in Q2.29; result Q0.31."""
    a = np.asarray(a, np.int64)
    half_den = rounding_half_sum(a, ONE0)
    x = add(1515870810, mul(half_den, -1010580540))  # 48/17 - 32/17 * d, Q2.29
    one2 = 1 << 29
    for _ in range(3):
        hdx = mul(half_den, x)
        x = add(x, rescale(mul(x, sub(one2, hdx)), 4, 2))
    return rescale(x, 1, 0)  # ExactMulByPot<-1> (Q2 -> Q1, same raw) then Rescale<0>


def _wrap32(v: int) -> int:
    return ((v + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def _srdhm32(a: int, b: int) -> int:
    """:func:`~.quant_util.srdhm` of two Python ints (int32 values)."""
    if a == b == -(1 << 31):
        return (1 << 31) - 1
    return (a * b + (1 << 30)) >> 31


def _shift_left_sat32(x: int, e: int) -> int:
    """``SaturatingRoundingMultiplyByPOT<e>`` for ``e > 0`` of a Python int (int32 value)."""
    return min(max(x << e, -(1 << 31)), (1 << 31) - 1)


def one_over_one_plus_x_for_x_in_0_1_int(a: int) -> int:
    """:func:`one_over_one_plus_x_for_x_in_0_1` of one Python int, in Python integer arithmetic (the
    same steps: a per-row scalar costs ~3 us here against ~80 us of NumPy calls on a 1-element array).

    Args:
        a: raw Q0.31 value in [0, 2**31 - 1].

    Returns:
        raw Q0.31 value of ``1 / (1 + a)``.
    """
    s = a + ONE0  # RoundingHalfSum (C division of s + sign by 2)
    t = s + (1 if s >= 0 else -1)
    half_den = t // 2 if t >= 0 else -((-t) // 2)
    x = _wrap32(1515870810 + _srdhm32(half_den, -1010580540))
    for _ in range(3):
        hdx = _srdhm32(half_den, x)
        x = _wrap32(x + _shift_left_sat32(_srdhm32(x, _wrap32((1 << 29) - hdx)), 2))
    return _shift_left_sat32(x, 1)


def logistic(a: npt.ArrayLike, integer_bits: int) -> I64:
    """gemmlowp ``logistic`` on ``FixedPoint<int32, integer_bits>``; result raw Q0.31."""
    a = np.asarray(a, np.int64)
    pos = a > 0
    abs_in = np.where(pos, a, wrap(-a, 32))
    r_pos = one_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(wrap(-abs_in, 32), integer_bits))
    r_neg = sub(ONE0, r_pos)
    return np.where(a == 0, 1 << 30, np.where(pos, r_pos, r_neg))



def one_minus_x_over_one_plus_x_for_x_in_0_1(a: npt.ArrayLike) -> I64:
    """gemmlowp ``one_minus_x_over_one_plus_x_for_x_in_0_1``: ``(1 - a) / (1 + a)`` for Q0.31 ``a``
    in [0, 1] (the Newton-Raphson reciprocal of :func:`one_over_one_plus_x_for_x_in_0_1`, minus one)."""
    a = np.asarray(a, np.int64)
    half_den = rounding_half_sum(a, ONE0)
    x = add(1515870810, mul(half_den, -1010580540))
    one2 = 1 << 29
    for _ in range(3):
        hdx = mul(half_den, x)
        x = add(x, rescale(mul(x, sub(one2, hdx)), 4, 2))
    return rescale(sub(x, one2), 2, 0)


def tanh(a: npt.ArrayLike, integer_bits: int) -> I64:
    """gemmlowp ``tanh`` on ``FixedPoint<int32, integer_bits>``: ``(1 - e) / (1 + e)`` with
    ``e = exp(-2|a|)``, sign restored; result raw Q0.31. The doubling is ``ExactMulByPot<1>``: the
    same raw value read with one more integer bit (it cannot overflow)."""
    a = np.asarray(a, np.int64)
    neg = a < 0
    n = np.where(neg, a, wrap(-a, 32))  # -|a|
    t = one_minus_x_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(n, integer_bits + 1))
    return np.where(a == 0, 0, np.where(neg, wrap(-t, 32), t))


def clz32(v: npt.ArrayLike) -> I64:
    """gemmlowp / TFLM ``CountLeadingZeros`` of uint32 values.

    Args:
        v: int32 raws (any integer dtype), read as unsigned 32-bit.

    Returns:
        int64 array of leading zero counts (32 for 0).
    """
    return 32 - bit_length(np.asarray(v, np.int64) & 0xFFFFFFFF)


def _mul_by_pot_param(x: npt.ArrayLike, exponent: npt.ArrayLike) -> I64:
    """TFLM ``SaturatingRoundingMultiplyByPOTParam`` with a per-element exponent: a saturating left
    shift for a positive exponent, ``RoundingDivideByPOT`` for a negative one."""
    x = np.asarray(x, np.int64)
    e = np.broadcast_to(np.asarray(exponent, np.int64), x.shape)
    left = saturate(x << np.clip(e, 0, 32), 32)  # |x| < 2**31 and e <= 32: no int64 overflow
    right = rounding_divide_by_pot(x, np.clip(-e, 0, 31))
    return np.where(e > 0, left, np.where(e < 0, right, x))


def log_x_for_x_greater_than_or_equal_to_1(a: npt.ArrayLike, output_bits: int,
                                           input_bits: int) -> I64:
    """TFLM ``log_x_for_x_greater_than_or_equal_to_1<OutputIntegerBits>`` (``common.h``): the natural
    log of ``FixedPoint<int32, input_bits>`` values >= 1, as ``FixedPoint<int32, output_bits>``.

    The input's power of two comes from its leading zeros (taken twice: as is and premultiplied by
    sqrt(1/2), the closer one kept); the mantissa's log from a rational approximation with one
    reciprocal. Accumulation in Q(output_bits + 1).

    Args:
        a: raw int32 values (positive), ``input_bits`` integer bits.
        output_bits: integer bits of the result.
        input_bits: integer bits of ``a``.

    Returns:
        raw int32 values (int64 array).
    """
    acc_bits = output_bits + 1
    log_2, sqrt_sqrt_half, sqrt_half, one_quarter = 1488522236, 1805811301, 1518500250, 536870912
    alpha_n, alpha_d, alpha_i, alpha_f = 117049297, 127690142, 1057819769, 638450708
    shifted_quarter = rescale(one_quarter, 0, acc_bits)
    z_a = np.asarray(a, np.int64)
    hr_a1 = clz32(z_a)
    r_a = _mul_by_pot_param(mul(_mul_by_pot_param(z_a, hr_a1 - 1), sqrt_half), 1)
    pow_a = saturate(_mul_by_pot_param(input_bits - hr_a1, 31 - acc_bits) + shifted_quarter, 32)
    z_b = mul(z_a, sqrt_half)
    hr_b = clz32(z_b) - 1
    r_b = _mul_by_pot_param(z_a, hr_b)
    pow_b = saturate(_mul_by_pot_param(input_bits - hr_b, 31 - acc_bits) - shifted_quarter, 32)
    r = np.minimum(r_a, r_b)
    z_pow = np.maximum(pow_a, pow_b)
    p = rounding_half_sum(r, sqrt_sqrt_half)
    q = sub(r, sqrt_sqrt_half)
    q = add(q, q)
    common_sq = mul(q, q)
    num = add(mul(q, r), mul(mul(q, common_sq), alpha_n))
    denom_minus_one = add(mul(p, add(add(alpha_i, q), mul(alpha_d, common_sq))), mul(alpha_f, q))
    recip = one_over_one_plus_x_for_x_in_0_1(denom_minus_one)
    num_scaled = rescale(num, 0, acc_bits)
    return rescale(add(mul(z_pow, log_2), mul(num_scaled, recip)), acc_bits, output_bits)
