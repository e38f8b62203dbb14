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

__all__ = [
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
    "round_mode",
]

ArrayLike = npt.ArrayLike
I64 = np.int64


def limits(bits: int) -> tuple[int, int]:
    """(lowest, max) of a signed ``bits``-bit integer."""
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def round_mode(mode: RoundMode | None = None) -> RoundMode:
    """``mode`` or the current platform's rounding."""
    return get_platform().round_mode if mode is None else mode


def _i64(x: ArrayLike) -> np.ndarray:
    return np.asarray(x, dtype=I64)


def wrap(x: ArrayLike, bits: int) -> np.ndarray:
    """Two's-complement wrap to ``bits`` bits: a C cast ``(intN_t)x`` or an overflowing add."""
    x = _i64(x)
    if bits >= 64:
        return x
    sh = 64 - bits
    return (x << sh) >> sh


def sat(x: ArrayLike, bits: int) -> np.ndarray:
    """Saturate to the range of a signed ``bits``-bit integer (``mli_math_cast_fx`` clamp)."""
    lo, hi = limits(bits)
    # minimum/maximum rather than np.clip: same result, far less overhead on small arrays.
    return np.minimum(np.maximum(_i64(x), lo), hi)


def add_sat(a: ArrayLike, b: ArrayLike, bits: int = 32) -> np.ndarray:
    """``mli_math_add_fx<T>``: addition saturated to ``bits`` bits (operands already in range)."""
    a, b = _i64(a), _i64(b)
    if bits < 64:
        return sat(a + b, bits)
    lo, hi = limits(64)
    with np.errstate(over="ignore"):
        r = a + b
    r = np.where((b > 0) & (a > hi - np.maximum(b, 0)), hi, r)
    return np.where((b < 0) & (a < lo - np.minimum(b, 0)), lo, r)


def sub_sat(a: ArrayLike, b: ArrayLike, bits: int = 32) -> np.ndarray:
    """``mli_math_sub_fx<T>``: subtraction saturated to ``bits`` bits."""
    a, b = _i64(a), _i64(b)
    if bits < 64:
        return sat(a - b, bits)
    lo, hi = limits(64)
    with np.errstate(over="ignore"):
        r = a - b
    r = np.where((b < 0) & (a > hi + np.minimum(b, 0)), hi, r)
    return np.where((b > 0) & (a < lo + np.maximum(b, 0)), lo, r)


def _is_scalar(n: ArrayLike) -> bool:
    return np.ndim(n) == 0


def asr(x: ArrayLike, n: ArrayLike, bits: int = 32) -> np.ndarray:
    """``mli_math_asr_fx<T>``: arithmetic shift right by ``n`` (left, saturating, if ``n < 0``).

    A shift of more than ``bits - 1`` gives -1 or 0 (the sign).
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
        bump = ((x & half) != 0) & (((r & 1) != 0) | ((x & (half - 1)) != 0))
        return r + bump
    n = _i64(n)
    nc = np.clip(n, 1, nmax)
    half = I64(1) << (nc - 1)
    if mode is RoundMode.UP:
        r = add_sat(x, half, bits) >> nc
    else:
        r = x >> nc
        r = r + (((x & half) != 0) & (((r & 1) != 0) | ((x & (half - 1)) != 0)))
    r = np.where(n == 0, x, r)
    r = np.where(n > nmax, I64(0), r)
    if np.any(n < 0):
        r = np.where(n < 0, asl(x, np.maximum(-n, 0), bits), r)
    return r


def sat_fx(x: ArrayLike, nbits: int, bits: int = 32) -> np.ndarray:
    """``mli_math_sat_fx<T>(x, nbits)``: keep ``bits - nbits`` significant bits, saturating."""
    return asr(asl(x, nbits, bits), nbits, bits)


def cast_fx(x: ArrayLike, shift_right: ArrayLike, in_bits: int, out_bits: int,
            mode: RoundMode | None = None) -> np.ndarray:
    """``mli_math_cast_fx<in_T, out_T>(x, shift)``: rounding shift in ``in_bits``, then saturate.

    The result is saturated to ``out_bits`` bits (the common pattern of MLI's casts from an
    accumulator to an output container).
    """
    return sat(asr_rnd(x, shift_right, in_bits, mode), out_bits)
