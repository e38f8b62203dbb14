"""TFLite Micro's multiplier arithmetic, vectorised and exact (double-rounding build).

TFLM encodes a real rescale factor ``m`` as a Q0.31 ``multiplier`` in ``[2**30, 2**31)`` and a
power-of-two ``shift`` (``m ~= multiplier * 2**(shift - 31)``), and applies it with gemmlowp's
``SaturatingRoundingDoublingHighMul`` (SRDHM) followed by ``RoundingDivideByPOT`` (RDBP). TFLM is
built without ``TFLITE_SINGLE_ROUNDING`` (its default), which is what these helpers mirror.

Every function takes NumPy integer arrays (or Python ints) and returns ``int64`` arrays holding the
value the C code produces in its own width (int32 results are wrapped/saturated exactly as in C).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from ..kernels import _jit

__all__ = [
    "quantize_multiplier",
    "quantize_multipliers",
    "srdhm",
    "rounding_divide_by_pot",
    "rounding_divide_by_pot_int32",
    "saturating_rounding_multiply_by_pot",
    "multiply_by_quantized_multiplier",
    "multiply_by_quantized_multiplier_int64",
    "multiply_by_quantized_multiplier_smaller_than_one_exp",
    "multiply_by_quantized_multiplier_greater_than_one",
    "downscale_int32_to_int16_multiplier",
    "wrap",
    "saturate",
    "wrap32_inplace",
    "mbqm_inplace",
    "requantize_clamp",
]

ArrayLike = npt.ArrayLike
I64 = npt.NDArray[np.int64]


def wrap(x: ArrayLike, bits: int) -> I64:
    """Two's complement wrap of an int64 array to ``bits`` bits (a C narrowing cast).

    Args:
        x: integer array (any shape).
        bits: target width, 8..63.

    Returns:
        int64 array, same shape, values in ``[-2**(bits-1), 2**(bits-1))``.
    """
    x = np.asarray(x, np.int64)
    m = np.int64(1) << np.int64(bits)
    h = np.int64(1) << np.int64(bits - 1)
    return ((x + h) & (m - 1)) - h


def saturate(x: ArrayLike, bits: int) -> I64:
    """Clamp an integer array to the signed ``bits``-bit range.

    Args:
        x: integer array.
        bits: target width.

    Returns:
        int64 array, same shape.
    """
    lo = -(1 << (bits - 1))
    return np.clip(np.asarray(x, np.int64), lo, -lo - 1)


def _round_half_away(v: float) -> int:
    """``std::round`` on a double (ties away from zero), exactly."""
    f = math.floor(abs(v))
    r = abs(v) - f  # exact: v has at most 53 significant bits
    n = f + 1 if r >= 0.5 else f
    return int(n) if v >= 0 else -int(n)


def quantize_multiplier(m: float) -> tuple[int, int]:
    """TFLM ``QuantizeMultiplier``: a real factor as ``(multiplier, shift)``.

    ``q, shift = frexp(m)`` (``q`` in ``[0.5, 1)``), ``multiplier = round(q * 2**31)`` with ties away
    from zero; a multiplier of ``2**31`` becomes ``2**30`` with ``shift + 1``; a shift below -31 flushes
    to ``(0, 0)``; ``m == 0`` gives ``(0, 0)``.

    Args:
        m: the real factor (a Python float / float64; TFLM computes it in double).

    Returns:
        ``(multiplier, shift)``: int32 multiplier (negative for a negative ``m``), shift (positive
        means a left shift).
    """
    m = float(m)
    if m == 0.0:
        return 0, 0
    q, shift = math.frexp(m)
    q_fixed = _round_half_away(q * float(1 << 31))
    if q_fixed == (1 << 31):
        q_fixed //= 2
        shift += 1
    if shift < -31:
        shift, q_fixed = 0, 0
    return int(q_fixed), int(shift)


def quantize_multipliers(m: ArrayLike) -> tuple[I64, I64]:
    """:func:`quantize_multiplier` over an array (per-channel factors).

    Args:
        m: float64 array of real factors, any shape.

    Returns:
        ``(multiplier, shift)`` int64 arrays of the same shape.
    """
    a = np.asarray(m, np.float64)
    pairs = [quantize_multiplier(v) for v in a.reshape(-1)]
    mult = np.array([p[0] for p in pairs], np.int64).reshape(a.shape)
    sh = np.array([p[1] for p in pairs], np.int64).reshape(a.shape)
    return mult, sh


def srdhm(a: ArrayLike, b: ArrayLike, bits: int = 32) -> I64:
    """gemmlowp ``SaturatingRoundingDoublingHighMul`` for int32 (or int16 with ``bits=16``).

    ``(a * b + nudge) / 2**(bits-1)`` with C truncating division, nudge ``2**(bits-2)`` for a
    non-negative product and ``1 - 2**(bits-2)`` otherwise; ``a == b == min`` saturates to max.
    Both cases are the floor of ``(a * b + 2**(bits-2)) / 2**(bits-1)`` (for a negative product the
    truncation adds ``2**(bits-1) - 1`` before flooring, which cancels the nudge's ``1 - 2**(bits-1)``
    offset), computed as one arithmetic shift.

    Args:
        a: integer array, values in the ``bits``-bit range.
        b: integer array, broadcastable with ``a``.
        bits: 32 or 16.

    Returns:
        int64 array of ``bits``-bit values.
    """
    a = np.asarray(a, np.int64)
    b = np.asarray(b, np.int64)
    lo = -(1 << (bits - 1))
    r = (a * b + (1 << (bits - 2))) >> (bits - 1)
    if (b == lo).any() and (a == lo).any():
        r = np.where((a == lo) & (b == lo), np.int64(-lo - 1), r)
    return np.asarray(r, np.int64)


def rounding_divide_by_pot(x: ArrayLike, exponent: ArrayLike) -> I64:
    """gemmlowp ``RoundingDivideByPOT``: ``x / 2**exponent`` rounded to nearest, ties away from zero.

    Computed as ``(x + 2**(e-1) - [x < 0]) >> e`` (floor): a tie of a negative ``x`` then stays
    below the next integer, every other value rounds to nearest; ``e = 0`` adds nothing.

    Args:
        x: integer array (int32 values in TFLM; any int64 value below ``2**62`` works).
        exponent: non-negative shift, scalar or broadcastable array (0..62).

    Returns:
        int64 array.
    """
    x = np.asarray(x, np.int64)
    if isinstance(exponent, (int, np.integer)):
        e = int(exponent)
        if e == 0:
            return x.copy()
        return (x + ((1 << (e - 1)) - (x < 0))) >> e
    e = np.asarray(exponent, np.int64)
    half = (np.int64(1) << e) >> 1
    return (x + (half - ((x < 0) & (e > 0)))) >> e


def rounding_divide_by_pot_int32(x: ArrayLike, exponent: ArrayLike) -> I64:
    """gemmlowp ``RoundingDivideByPOT(int32_t x, int exponent)`` as TFLM's release builds compute it,
    including exponents of 32..63 that its (disabled) assert forbids.

    There ``mask = int32_t((1ll << exponent) - 1)`` is -1 and the int32 ``x >> exponent`` shifts by
    ``exponent & 31`` (x86 and ARC shifters), so the result is ``(x >> (exponent - 32)) + (x >= 0)``
    (the DIV kernel reaches these exponents for small quotients). Up to 31 it is
    :func:`rounding_divide_by_pot`.

    Args:
        x: int32 values.
        exponent: shift(s) in 0..63, broadcastable.

    Returns:
        int64 array.
    """
    x = np.asarray(x, np.int64)
    if isinstance(exponent, (int, np.integer)) and int(exponent) < 32:
        return rounding_divide_by_pot(x, int(exponent))
    e = np.asarray(exponent, np.int64)
    if not (e >= 32).any():
        return rounding_divide_by_pot(x, e)
    wide = e >= 32
    exact = rounding_divide_by_pot(x, np.where(wide, 0, e))
    return np.where(wide, (x >> (e & 31)) + (x >= 0), exact)


def saturating_rounding_multiply_by_pot(x: ArrayLike, exponent: int, bits: int = 32) -> I64:
    """gemmlowp ``SaturatingRoundingMultiplyByPOT<exponent>``: a left shift saturating to ``bits``
    bits for ``exponent > 0``, :func:`rounding_divide_by_pot` for ``exponent < 0``.

    Args:
        x: integer array of ``bits``-bit values.
        exponent: shift (compile-time constant in C).
        bits: 32 or 16.

    Returns:
        int64 array.
    """
    x = np.asarray(x, np.int64)
    if exponent == 0:
        return x.copy()
    if exponent < 0:
        return rounding_divide_by_pot(x, -exponent)
    return saturate(x << exponent, bits)


def multiply_by_quantized_multiplier(x: ArrayLike, multiplier: ArrayLike, shift: ArrayLike) -> I64:
    """TFLM ``MultiplyByQuantizedMultiplier(int32_t x, int32_t multiplier, int shift)``.

    ``RDBP(SRDHM(x * 2**max(shift, 0), multiplier), max(-shift, 0))``; the pre-shift product wraps
    to int32 as the C code does.

    Args:
        x: int32 values (int64 array).
        multiplier: Q0.31 multiplier(s), broadcastable.
        shift: shift(s), broadcastable (positive: left).

    Returns:
        int64 array of int32 values.
    """
    x = np.asarray(x, np.int64)
    if isinstance(shift, (int, np.integer)):
        sh = int(shift)
        return rounding_divide_by_pot_int32(srdhm(wrap(x << max(sh, 0), 32), multiplier), max(-sh, 0))
    sh = np.asarray(shift, np.int64)
    left = np.maximum(sh, 0)
    right = np.maximum(-sh, 0)
    return rounding_divide_by_pot_int32(srdhm(wrap(x << left, 32), multiplier), right)


def multiply_by_quantized_multiplier_int64(x: ArrayLike, multiplier: ArrayLike,
                                           shift: ArrayLike) -> I64:
    """TFLM ``MultiplyByQuantizedMultiplier(int64_t x, int32_t multiplier, int shift)`` (16x8 paths).

    The multiplier is reduced to 15 bits (``(m + 2**15) >> 16``, or ``0x7FFF`` from ``0x7FFF0000``),
    then ``(x * reduced + 2**(14 - shift)) >> (15 - shift)``, truncated to int32.

    Args:
        x: int64 accumulators (TFLM assumes ``|x| < 2**47``).
        multiplier: non-negative Q0.31 multiplier(s), broadcastable.
        shift: shift(s) in ``[-31, 7]``, broadcastable.

    Returns:
        int64 array of int32 values.
    """
    x = np.asarray(x, np.int64)
    m = np.asarray(multiplier, np.int64)
    sh = np.asarray(shift, np.int64)
    red = np.where(m < 0x7FFF0000, (m + (1 << 15)) >> 16, np.int64(0x7FFF))
    total = 15 - sh
    r = (x * red + (np.int64(1) << (total - 1))) >> total
    return wrap(r, 32)


def multiply_by_quantized_multiplier_smaller_than_one_exp(x: ArrayLike, multiplier: ArrayLike,
                                                          left_shift: ArrayLike) -> I64:
    """TFLM ``MultiplyByQuantizedMultiplierSmallerThanOneExp``: ``RDBP(SRDHM(x, m), -left_shift)``.

    Args:
        x: int32 values.
        multiplier: Q0.31 multiplier(s).
        left_shift: non-positive shift(s).

    Returns:
        int64 array of int32 values.
    """
    return rounding_divide_by_pot_int32(srdhm(x, multiplier), -np.asarray(left_shift, np.int64))


def multiply_by_quantized_multiplier_greater_than_one(x: ArrayLike, multiplier: ArrayLike,
                                                      left_shift: ArrayLike) -> I64:
    """TFLM ``MultiplyByQuantizedMultiplierGreaterThanOne``: ``SRDHM(x * 2**left_shift, m)``.

    Args:
        x: int32 values.
        multiplier: Q0.31 multiplier(s).
        left_shift: non-negative shift(s); the product wraps to int32 as in C.

    Returns:
        int64 array of int32 values.
    """
    x = np.asarray(x, np.int64)
    return srdhm(wrap(x << np.asarray(left_shift, np.int64), 32), multiplier)


def downscale_int32_to_int16_multiplier(m: int) -> int:
    """TFLM ``DownScaleInt32ToInt16Multiplier``: ``(m + 2**15) >> 16``, 32767 near the top.

    Args:
        m: non-negative int32 multiplier.

    Returns:
        the int16 multiplier.
    """
    m = int(m)
    if m >= (1 << 31) - 1 - (1 << 15):
        return 32767
    return (m + (1 << 15)) >> 16


def wrap32_inplace(x: np.ndarray) -> np.ndarray:
    """:func:`wrap` to 32 bits of an int64 array, in place (three NumPy calls, no temporaries).

    Args:
        x: int64 array (overwritten).

    Returns:
        ``x``.
    """
    x += 1 << 31
    x &= (1 << 32) - 1
    x -= 1 << 31
    return x


def mbqm_inplace(x: np.ndarray, multiplier: int, shift: int) -> np.ndarray:
    """:func:`multiply_by_quantized_multiplier` of int32 values (an int64 array, overwritten where it can)
    by one multiplier and shift (Python ints): the pre-shift product wrapped to int32, SRDHM as one shift
    (its saturating case ``INT32_MIN * INT32_MIN`` only with that multiplier: the general function), RDBP
    as another (exponents of 32 or more: the general function).

    Args:
        x: int64 array of int32 values.
        multiplier: Q0.31 multiplier. shift: its shift (positive: left).

    Returns:
        int64 array of int32 values (``x`` or a new array).
    """
    left, right = max(shift, 0), max(-shift, 0)
    if left:
        x <<= left
        wrap32_inplace(x)
    if multiplier == -(1 << 31):
        return multiply_by_quantized_multiplier(x, multiplier, -right)
    x *= multiplier  # |x| <= 2**31, |multiplier| < 2**31: below 2**62
    if (1 << 30) < multiplier and 0 < right < 32:
        # SRDHM's floor then RDBP's as one shift: floor((x*m + 2**30 + (2**(e-1) - [srdhm < 0]) * 2**31)
        # / 2**(31+e)) (an integer added inside a floor, floors of powers of two composed); with
        # m > 2**30 the SRDHM result is negative exactly when x is (x = -1: -m + 2**30 < 0), and x*m has
        # x's sign: [x < 0] * 2**31 is -(x*m >> 63) << 31. Every term stays below 2**63.
        t = x >> 63
        t <<= 31
        x += t
        x += (1 << 30) + (1 << (right - 1 + 31))
        x >>= 31 + right
        return x
    x += 1 << 30
    x >>= 31
    if right >= 32:
        return rounding_divide_by_pot_int32(x, right)
    if right:
        x += (1 << (right - 1)) - (x < 0)
        x >>= right
    return x


def requantize_clamp(acc: np.ndarray, multiplier: int, shift: int, zero_point: int, lo: int, hi: int,
                     dtype: np.dtype | type, wrap: bool) -> np.ndarray:
    """The output stage of TFLM's integer kernels: ``acc`` (int64 array of sums, overwritten) through
    :func:`mbqm_inplace` (after a wrap to int32 where the sums may leave it), plus the output zero
    point, clamped to ``[lo, hi]``, cast to ``dtype``; with the JIT on, one compiled call
    (:func:`pymli.kernels._jit_requant.requantize_clamp`, the same values) for multipliers in ``[0, 2**31)``
    and shifts of at least -31.

    Args:
        acc: int64 sums. multiplier, shift: the output's quantised multiplier.
        zero_point: output zero point. lo, hi: the activation range. dtype: the output type.
        wrap: whether ``acc`` may hold values beyond int32 (C's int32 accumulator wraps them).

    Returns:
        the output values in ``dtype``.
    """
    multiplier, shift = int(multiplier), int(shift)
    if 0 <= multiplier < 1 << 31 and shift >= -31:  # the operands of the compiled stage's mbqm32
        jit = _jit.compiled("_jit_requant")
        if jit is not None:  # one compiled call, the same values (its wrap: the identity within int32)
            out = np.empty(acc.shape, dtype)
            jit.requantize_clamp(acc.reshape(-1), out.reshape(-1), multiplier, shift, int(zero_point), int(lo),
                                 int(hi))
            return out
    r = mbqm_inplace(wrap32_inplace(acc) if wrap else acc, multiplier, shift)
    r += zero_point
    np.maximum(r, lo, out=r)
    np.minimum(r, hi, out=r)
    return r.astype(dtype)
