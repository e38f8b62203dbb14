"""Shifts, rounding and saturation of MLI's platform maths (``pal/ref/mli_math.h``).

Every helper works on NumPy integer arrays (computed in int64) and models a C integer type of
``bits`` bits (8, 16, 32 or 64): what the C template does for ``T = int<bits>_t``. Shift amounts
may be scalars or arrays that broadcast against the values (per-channel shifts). Rounding follows
the current :class:`~pymli.config.Platform` unless ``mode`` is given.

This module and its siblings in :mod:`pymli.arith` are the only places where pymli rounds.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ..config import get_platform
from ..formats import RoundMode

try:  # the clip ufunc itself: np.clip adds ~2-4 us of Python-level argument handling per call
    from numpy._core.umath import clip as clip_ufunc
except ImportError:  # pragma: no cover - older NumPy
    clip_ufunc = np.clip

__all__ = [
    "clip_ufunc",
    "limits",
    "wrap",
    "sat",
    "add_sat",
    "sub_sat",
    "asr",
    "asl",
    "asr_rnd",
    "sat_fx",
    "cast_fx",
    "norm_cast",
    "round_mode",
    "wrap_int",
    "trunc_div",
    "norm",
    "bit_length",
    "convergent_bump",
]

ArrayLike = npt.ArrayLike
I64 = np.int64


def limits(bits: int) -> tuple[int, int]:
    """(lowest, max) of a signed ``bits``-bit integer.

    Args:
        bits: the width.

    Returns:
        ``(-2**(bits-1), 2**(bits-1) - 1)``.
    """
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def round_mode(mode: RoundMode | None = None) -> RoundMode:
    """``mode`` or the current platform's rounding.

    Args:
        mode: an explicit mode, or None.

    Returns:
        The rounding mode to use.
    """
    return get_platform().round_mode if mode is None else mode


def _i64(x: ArrayLike) -> np.ndarray:
    return np.asarray(x, dtype=I64)


def wrap(x: ArrayLike, bits: int) -> np.ndarray:
    """Two's-complement wrap to ``bits`` bits: a C cast ``(intN_t)x`` or an overflowing add.

    Args:
        x: integers (int64 array-like); bits: the C type's width.

    Returns:
        int64 array of the wrapped values.
    """
    x = _i64(x)
    if bits >= 64:
        return x
    sh = 64 - bits
    return (x << sh) >> sh


def wrap_int(x: int, bits: int, signed: bool = True) -> int:
    """Two's-complement wrap of one Python int to a C ``intN_t`` (or ``uintN_t``), exact at any size.

    Args:
        x: the value (any Python or NumPy integer).
        bits: width of the C type (8, 16, 32, 64).
        signed: ``False`` for an unsigned C type.

    Returns:
        The Python int the C cast ``(intN_t)x`` (``(uintN_t)x``) holds.
    """
    v = int(x) & ((1 << bits) - 1)
    return v - (1 << bits) if signed and v >> (bits - 1) else v


def trunc_div(a: ArrayLike, b: ArrayLike) -> ArrayLike:
    """C integer division: the quotient rounded toward zero (``b`` must not be 0).

    Args:
        a, b: integers; two Python/NumPy scalars give a Python int (exact at any size), arrays an
            int64 array (broadcast).

    Returns:
        ``a / b`` truncated toward zero.
    """
    if isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer)):
        q = abs(int(a)) // abs(int(b))
        return q if (a >= 0) == (b >= 0) else -q
    a, b = _i64(a), _i64(b)
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


def norm(x: ArrayLike, bits: int = 32) -> ArrayLike:
    """``mli_math_norm_fx<intN_t>``: redundant sign bits of ``x`` as a ``bits``-bit integer.

    ``bits - 1`` for 0 and -1. Exact over the whole int64 range (the bit length is taken in two
    32-bit halves, each exact in float64).

    Args:
        x: integer(s), wrapped to ``bits`` bits first as the C type holds them. A Python/NumPy
            scalar gives a Python int, an array an int64 array.
        bits: width of the C type (8 to 64).

    Returns:
        The left shift that normalises ``x`` without overflow.
    """
    if isinstance(x, (int, np.integer)):
        v = wrap_int(x, bits)
        return bits - 1 - (v if v >= 0 else ~v).bit_length()
    v = wrap(x, bits)
    return (bits - 1) - bit_length(np.where(v < 0, ~v, v))  # the bits that differ from the sign


def bit_length(x: ArrayLike) -> np.ndarray:
    """Number of significant bits of non-negative int64 values (``int.bit_length``, vectorised).

    Exact over the whole int64 range: each 32-bit half is exact in float64, whose ``frexp``
    exponent is the bit length.

    Args:
        x: non-negative integers.

    Returns:
        int64 array of bit lengths (0 for 0).
    """
    mag = _i64(x)
    hi = mag >> 32
    lo = mag & 0xFFFFFFFF
    return np.where(hi > 0, np.frexp(hi.astype(np.float64))[1] + 32, np.frexp(lo.astype(np.float64))[1]).astype(I64)


def convergent_bump(x: ArrayLike, r: ArrayLike, half: ArrayLike) -> ArrayLike:
    """The ROUND_CONVERGENT correction of a floor shift: 1 where ``r = x >> n`` must round up.

    With ``half = 2**(n-1)``, ``x`` rounds up when its dropped bits exceed half, or equal half and
    ``r`` is odd (a tie goes to even). Works on Python ints and on NumPy arrays alike.

    Args:
        x: the value before the shift; r: ``x >> n``; half: ``1 << (n - 1)``.

    Returns:
        0 or 1 (bool array for arrays): add it to ``r``.
    """
    return ((x & half) != 0) & (((r & 1) != 0) | ((x & (half - 1)) != 0))


def sat(x: ArrayLike, bits: int) -> np.ndarray:
    """Saturate to the range of a signed ``bits``-bit integer (``mli_math_cast_fx`` clamp).

    Args:
        x: integers; bits: the C type's width.

    Returns:
        int64 array clamped to the range.
    """
    lo, hi = limits(bits)
    # minimum/maximum rather than np.clip: same result, far less overhead on small arrays.
    return np.minimum(np.maximum(_i64(x), lo), hi)


def _sat_binop(op: np.ufunc, a: ArrayLike, b: ArrayLike, bits: int) -> np.ndarray:
    """``op(a, b)`` (``np.add`` or ``np.subtract``) saturated to ``bits`` bits, as C's overflow
    tests give it: the exact result clamped to the range."""
    a, b = _i64(a), _i64(b)
    if bits < 64:
        return sat(op(a, b), bits)
    lo, hi = limits(64)
    with np.errstate(over="ignore"):
        r = op(a, b)
    # floor(op(a, b) / 2) without overflow: the halves of the operands (|a >> 1| <= 2**62) plus
    # the carry of their low bits. The exact result is above hi (below lo) exactly when its half
    # is above hi >> 1 (below lo >> 1).
    half = op(a >> 1, b >> 1) + (op(a & 1, b & 1) >> 1)
    return np.where(half < lo >> 1, lo, np.where(half > hi >> 1, hi, r))


def add_sat(a: ArrayLike, b: ArrayLike, bits: int = 32) -> np.ndarray:
    """``mli_math_add_fx<T>``: addition saturated to ``bits`` bits (operands already in range).

    Args:
        a, b: integers in range; bits: the C type's width.

    Returns:
        int64 array of the saturated sums.
    """
    return _sat_binop(np.add, a, b, bits)


def sub_sat(a: ArrayLike, b: ArrayLike, bits: int = 32) -> np.ndarray:
    """``mli_math_sub_fx<T>``: subtraction saturated to ``bits`` bits.

    Args:
        a, b: integers in range; bits: the C type's width.

    Returns:
        int64 array of the saturated differences.
    """
    return _sat_binop(np.subtract, a, b, bits)


def _is_scalar(n: ArrayLike) -> bool:
    return np.ndim(n) == 0


def asr(x: ArrayLike, n: ArrayLike, bits: int = 32) -> np.ndarray:
    """``mli_math_asr_fx<T>``: arithmetic shift right by ``n`` (left, saturating, if ``n < 0``).

    A shift of more than ``bits - 1`` gives -1 or 0 (the sign).

    Args:
        x: integers; n: shift (negative: left); bits: the C type's width.

    Returns:
        int64 array.
    """
    x = _i64(x)
    nmax = bits - 1
    if _is_scalar(n):
        n = int(n)
        if n > nmax:
            return np.where(x < 0, I64(-1), I64(0))
        if n < 0:
            return asl(x, -n, bits)
        return x >> n
    n = _i64(n)
    r = x >> np.clip(n, 0, 63)
    r = np.where(n > nmax, np.where(x < 0, I64(-1), I64(0)), r)
    if np.any(n < 0):
        r = np.where(n < 0, asl(x, np.maximum(-n, 0), bits), r)
    return r


def asl(x: ArrayLike, n: ArrayLike, bits: int = 32) -> np.ndarray:
    """``mli_math_asl_fx<T>``: shift left by ``n`` saturating to ``bits`` bits (right if ``n < 0``).

    A shift right here never rounds and a shift of more than ``bits - 1`` gives the sign.

    Args:
        x: integers; n: shift (negative: right); bits: the C type's width.

    Returns:
        int64 array.
    """
    x = _i64(x)
    lo, hi = limits(bits)
    nmax = bits - 1
    if _is_scalar(n):
        n = int(n)
        if n < 0:
            return x >> min(-n, 63) if -n <= nmax else np.where(x < 0, I64(-1), I64(0))
        if n > nmax:
            return np.where(x == 0, I64(0), np.where(x < 0, I64(lo), I64(hi)))
        top = x >> (nmax - n)
        ok = (top == 0) | (top == -1)
        return np.where(ok, x << n, np.where(top < 0, I64(lo), I64(hi)))
    n = _i64(n)
    nn = np.clip(n, 0, nmax)
    top = x >> (nmax - nn)
    ok = (top == 0) | (top == -1)
    r = np.where(ok, x << nn, np.where(top < 0, I64(lo), I64(hi)))
    r = np.where(n > nmax, np.where(x == 0, I64(0), np.where(x < 0, I64(lo), I64(hi))), r)
    neg = n < 0
    if np.any(neg):
        m = np.clip(-n, 0, 63)
        rr = np.where(-n > nmax, np.where(x < 0, I64(-1), I64(0)), x >> m)
        r = np.where(neg, rr, r)
    return r


def asr_rnd(x: ArrayLike, n: ArrayLike, bits: int = 32, mode: RoundMode | None = None) -> np.ndarray:
    """``mli_math_asr_rnd_fx<T>``: shift right by ``n`` with rounding; saturating left if ``n < 0``.

    ROUND_UP adds half an LSB with a saturating add, then shifts; ROUND_CONVERGENT rounds a tie to
    the even neighbour. ``n == 0`` returns ``x``; ``n > bits - 1`` returns 0.

    Args:
        x: integers; n: shift (negative: saturating left); bits: the C type's width;
        mode: rounding (default: the platform's).

    Returns:
        int64 array.
    """
    x = _i64(x)
    mode = round_mode(mode)
    nmax = bits - 1
    if _is_scalar(n):
        n = int(n)
        if n < 0:
            return asl(x, -n, bits)
        if n == 0:
            return x
        if n > nmax:
            return np.zeros_like(x)
        half = I64(1) << (n - 1)
        if mode is RoundMode.UP:
            return add_sat(x, half, bits) >> n
        r = x >> n
        return r + convergent_bump(x, r, half)
    n = _i64(n)
    nc = np.clip(n, 1, nmax)
    half = I64(1) << (nc - 1)
    if mode is RoundMode.UP:
        r = add_sat(x, half, bits) >> nc
    else:
        r = x >> nc
        r = r + convergent_bump(x, r, half)
    r = np.where(n == 0, x, r)
    r = np.where(n > nmax, I64(0), r)
    if np.any(n < 0):
        r = np.where(n < 0, asl(x, np.maximum(-n, 0), bits), r)
    return r


def sat_fx(x: ArrayLike, nbits: int, bits: int = 32) -> np.ndarray:
    """``mli_math_sat_fx<T>(x, nbits)``: keep ``bits - nbits`` significant bits, saturating.

    Args:
        x: integers; nbits: bits removed from the range; bits: the C type's width.

    Returns:
        int64 array.
    """
    return asr(asl(x, nbits, bits), nbits, bits)


def cast_fx(x: ArrayLike, shift_right: ArrayLike, in_bits: int, out_bits: int,
            mode: RoundMode | None = None) -> np.ndarray:
    """``mli_math_cast_fx<in_T, out_T>(x, shift)``: rounding shift in ``in_bits``, then saturate.

    The result is saturated to ``out_bits`` bits (the common pattern of MLI's casts from an
    accumulator to an output container).

    Args:
        x: integers of ``in_bits``; shift_right: rounding shift; in_bits, out_bits: the C widths;
        mode: rounding (default: the platform's).

    Returns:
        int64 array in the ``out_bits`` range.
    """
    return sat(asr_rnd(x, shift_right, in_bits, mode), out_bits)


def norm_cast(x: ArrayLike, in_bits: int = 32, out_bits: int = 16,
              mode: RoundMode | None = None) -> tuple[ArrayLike, ArrayLike]:
    """``mli_math_norm_cast_fx<in_T, out_T>(x, &norm_shift)``: normalise ``x`` into ``out_bits`` bits.

    The value is shifted right by ``norm_shift = (in_bits - out_bits) - norm(x)`` (rounding; left,
    saturating, when negative) so that its most significant bit lands on the top bit of an
    ``out_bits`` integer, then saturated to ``out_bits``.

    Args:
        x: integer(s) of ``in_bits``: a Python/NumPy scalar gives Python ints, an array int64 arrays.
        in_bits, out_bits: the C widths; mode: rounding (default: the platform's).

    Returns:
        (value, norm_shift).
    """
    shift = (in_bits - out_bits) - norm(x, in_bits)
    val = cast_fx(x, shift, in_bits, out_bits, mode)
    if isinstance(x, (int, np.integer)):
        return int(val), int(shift)
    return val, shift
