"""Arithmetic of MLI's element-wise kernels (``kernels/eltwise/impl/mli_krn_eltwise_ref.h``).

Two families:

* fx8 / fx16: operands are aligned to the larger number of fractional bits with a saturating left
  shift, combined in a 32-bit (add/sub, saturating) or 64-bit (mul) accumulator, then shifted to
  the output format with rounding and saturated. min/max work in the container type and only
  shift the result (with the container's own rounding and saturation).
* sa8: each operand loses its zero point; add/sub rescale each operand by a 16-bit ratio
  ``in_scale / out_scale`` with a pre-shift, min/max rescale after comparing, and mul rescales the
  product of the two centred operands in two steps. The result is saturated to 16 bits, offset
  by the output zero point and saturated to 8 bits.

Parameter derivation (``eltwise_prepare_and_run``) is done once per call on Python ints; the
element arithmetic is vectorised over int64 arrays.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from ..formats import RoundMode
from .activation import clamp
from .lut import asr_rnd_int32
from .pool import norm_cast
from .rounding import add_sat, asr_rnd, limits, round_mode, sat, sub_sat, trunc_div

__all__ = ["EltOp", "FxParams", "SaParams", "fx_params", "sa8_params", "fx_eltwise", "fx_int32_plan", "sa8_eltwise"]

MUL_MAX_SHIFT = 31
MAX_MIN_UPPER_LIMIT_SHIFT = 23


class EltOp(enum.Enum):
    """``mli_eltwise_type``."""

    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    MAX = "max"
    MIN = "min"


@dataclasses.dataclass(frozen=True)
class FxParams:
    """Shifts of an fx element-wise operation: ``pre1``/``pre2`` (right; negative = left), ``post``."""

    pre1: int
    pre2: int
    post: int


@dataclasses.dataclass(frozen=True)
class SaParams:
    """Requantisation of an sa8 element-wise operation."""

    zp1: int
    zp2: int
    zp_out: int
    scale1: int
    scale2: int
    pre1: int
    pre2: int
    post: int


def fx_params(op: EltOp, fb1: int, fb2: int, fb_out: int, bits: int) -> FxParams:
    """Shifts of ``eltwise_prepare_and_run`` for fx operands of ``bits`` (8 or 16) bits.

    Args:
        op: the operation.
        fb1, fb2, fb_out: frac_bits of in1, in2 and out.
        bits: container bits (8 or 16).

    Returns:
        The :class:`FxParams` (pre-shifts of both inputs, post-shift).
    """
    pre1 = pre2 = 0
    if op is EltOp.MUL:
        max_shift, post = 2 * bits - 1, fb1 + fb2 - fb_out
    elif op in (EltOp.MIN, EltOp.MAX):
        max_shift, post = bits - 1, fb1 - fb_out
    else:
        max_shift = 2 * bits - 1
        pre1, pre2 = min(fb1 - fb2, 0), min(fb2 - fb1, 0)
        post = max(fb1, fb2) - fb_out
    return FxParams(pre1, pre2, min(post, max_shift))


def _asr_rnd16(x: int, n: int, mode: RoundMode) -> int:
    return int(asr_rnd(np.int64(x), n, 16, mode))


def sa8_params(op: EltOp, q1: tuple[int, int, int], q2: tuple[int, int, int],
               qo: tuple[int, int, int]) -> SaParams:
    """Multipliers and shifts of ``eltwise_prepare_and_run`` for sa8 tensors.

    Derived once per distinct arguments and rounding mode (the derivation rounds), then cached.

    Args:
        op: the operation.
        q1, q2, qo: (scale, scale_frac_bits, zero_point) of in1, in2 and out.

    Returns:
        The :class:`SaParams` (multipliers, shifts and zero points of the operation).
    """
    return _sa8_params(EltOp(op), tuple(int(v) for v in q1), tuple(int(v) for v in q2), tuple(int(v) for v in qo),
                       round_mode())


@functools.lru_cache(maxsize=256)
def _sa8_params(op: EltOp, q1: tuple[int, int, int], q2: tuple[int, int, int], qo: tuple[int, int, int],
                mode: RoundMode) -> SaParams:
    """:func:`sa8_params` with the rounding mode explicit (Python ints in, cached)."""
    (s1, f1, z1), (s2, f2, z2), (so, fo, zo) = q1, q2, qo
    pre1 = pre2 = post = 0
    if op in (EltOp.MAX, EltOp.MIN):
        sf, sh = norm_cast(s1, 32, 32, mode)
        sf = trunc_div(sf, so)
        post = f1 - fo - sh
        m1, sh = norm_cast(sf, 32, 16, mode)
        post -= sh
        sh = max(post - MAX_MIN_UPPER_LIMIT_SHIFT, 0) + min(MUL_MAX_SHIFT + post, 0)
        m1 = _asr_rnd16(m1, sh, mode)
        post -= sh
        m2 = m1
    elif op is EltOp.MUL:
        sf, sh = norm_cast(s1 * s2, 32, 32, mode)
        sf = trunc_div(sf, so)
        post = f1 + f2 - fo - sh
        m1, sh = norm_cast(sf, 32, 16, mode)
        post -= sh
        sh = max(post - MUL_MAX_SHIFT, 0) + min(MUL_MAX_SHIFT + post, 0)
        m1 = _asr_rnd16(m1, sh, mode)
        post -= sh
        m2 = 1
    else:
        sf1, n1 = norm_cast(s1, 32, 32, mode)
        sf2, n2 = norm_cast(s2, 32, 32, mode)
        sf1, sf2 = trunc_div(sf1, so), trunc_div(sf2, so)
        pre1, pre2 = -n1 + f1 - fo, -n2 + f2 - fo
        m1, n1 = norm_cast(sf1, 32, 16, mode)
        m2, n2 = norm_cast(sf2, 32, 16, mode)
        pre1, pre2 = pre1 - n1, pre2 - n2
        sh1 = max(pre1 - MAX_MIN_UPPER_LIMIT_SHIFT, 0) + min(MUL_MAX_SHIFT + pre1, 0)
        sh2 = max(pre2 - MAX_MIN_UPPER_LIMIT_SHIFT, 0) + min(MUL_MAX_SHIFT + pre2, 0)
        m1, m2 = _asr_rnd16(m1, sh1, mode), _asr_rnd16(m2, sh2, mode)
        pre1, pre2 = pre1 - sh1, pre2 - sh2
    return SaParams(z1, z2, zo, int(m1), int(m2), int(pre1), int(pre2), int(post))


def fx_eltwise(op: EltOp, a: npt.ArrayLike, b: npt.ArrayLike, p: FxParams, bits: int) -> np.ndarray:
    """``eltwise_perform_operation`` for fx data of ``bits`` bits (broadcasting ``a`` and ``b``).

    Args:
        op: the operation.
        a, b: int container values of the two operands, broadcastable shapes.
        p: the shifts (:func:`fx_params`).
        bits: container bits (8 or 16).

    Returns:
        Array of output values within the ``bits``-bit range: of the container dtype when ``a`` and
        ``b`` are int8 / int16 arrays and the shifts allow the int32 path, else int64.
    """
    fast = _fx_eltwise_int32(op, a, b, p, bits)
    if fast is not None:
        return fast
    a64, b64 = np.asarray(a, np.int64), np.asarray(b, np.int64)
    if op in (EltOp.MAX, EltOp.MIN):
        acc = np.maximum(a64, b64) if op is EltOp.MAX else np.minimum(a64, b64)
        # mli_math_cast_fx<T, T>: a rounding shift done in the container type itself.
        return asr_rnd(acc, p.post, bits)
    x1 = asr_rnd(a64, p.pre1, 32) if p.pre1 else a64
    x2 = asr_rnd(b64, p.pre2, 32) if p.pre2 else b64
    if op is EltOp.ADD:
        acc = add_sat(x1, x2, 32)
    elif op is EltOp.SUB:
        acc = sub_sat(x1, x2, 32)
    else:
        acc = x1 * x2  # |x| <= 2**15: exact in int64
    return sat(asr_rnd(acc, p.post, 64), bits)


def _shl_sat_int32(x: np.ndarray, s: int, lo: np.int32, hi: np.int32) -> np.ndarray:
    """``sat(x << s)`` to ``[lo, hi]`` (a saturating left shift of any width >= bits) in place,
    ``0 <= s <= 15``, ``lo, hi`` the limits of a container of at most 16 bits.

    Clamping first keeps ``|x| <= 2**15`` so ``x << 15`` fits int32; a clamped value still
    saturates to the same end after the shift.
    """
    clamp(x, lo, hi, out=x)
    if s:
        x <<= s
        clamp(x, lo, hi, out=x)
    return x


def _fx_eltwise_int32(op: EltOp, a: npt.ArrayLike, b: npt.ArrayLike, p: FxParams, bits: int) -> np.ndarray | None:
    """:func:`fx_eltwise` in int32 for int8 / int16 operands, or None when a bound fails
    (:func:`fx_int32_plan`)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype not in (np.int8, np.int16) or b.dtype not in (np.int8, np.int16):
        return None
    compute = fx_int32_plan(op, p, bits, round_mode())
    return None if compute is None else compute(a, b)


def fx_int32_plan(op: EltOp, p: FxParams, bits: int,
                  mode: RoundMode) -> Callable[[np.ndarray, np.ndarray], np.ndarray] | None:
    """:func:`fx_eltwise` in int32 for int8 / int16 operands, with every constant fixed up front.

    Bounds (``|a|, |b| <= 2**15``): add/sub align with a left shift ``s <= 14`` (no saturation:
    ``|x| <= 2**29``), so ``|acc| <= 2**29 + 2**15`` and rounding by ``post <= 31`` adds at most
    ``2**30``: below ``2**31``. mul: ``|a * b| <= 2**30`` plus at most ``2**29`` (``post <= 30``).
    min/max: ``|x| <= 2**15``. Left shifts (negative ``post``) are limited to 15 bits.

    Args:
        op: the operation; p: its shifts (:func:`fx_params`); bits: container bits.
        mode: the rounding mode the result is computed with.

    Returns:
        ``compute(a, b)`` (int8 / int16 arrays of one shape, or one of them 0-d) returning the
        container-typed result, or None when a bound above fails (use :func:`fx_eltwise`). The
        add / sub / mul form also takes ``out=`` (of the result's shape): written and returned.
    """
    if bits not in (8, 16):
        return None
    lo, hi = (np.int32(v) for v in limits(bits))
    out_dt = np.int8 if bits == 8 else np.int16
    n = p.post
    half = np.int32(1 << (n - 1)) if n > 0 else np.int32(0)
    up = mode is RoundMode.UP
    if op in (EltOp.MAX, EltOp.MIN):
        if n < -15:
            return None
        pick = np.maximum if op is EltOp.MAX else np.minimum

        def minmax(a: np.ndarray, b: np.ndarray) -> np.ndarray:
            acc = np.asarray(pick(a, b), dtype=np.int32)
            if n > bits - 1:
                return np.zeros(acc.shape, out_dt)
            if n < 0:
                acc = _shl_sat_int32(acc, -n, lo, hi)
            elif n > 0:
                if up:
                    # mli_math_add_fx in the container type saturates x + half at its maximum.
                    acc += half
                    np.minimum(acc, hi, out=acc)
                    acc >>= n
                else:
                    acc = asr_rnd_int32(acc, n, mode)
            return acc.astype(out_dt)

        return minmax
    if op is EltOp.MUL:
        if not -15 <= n <= 30:
            return None
    else:
        s1, s2 = -p.pre1, -p.pre2
        if not (0 <= s1 <= 14 and 0 <= s2 <= 14 and -15 <= n <= 31):
            return None

    def arith(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        if op is EltOp.MUL:
            acc = np.asarray(np.multiply(a, b, dtype=np.int32))
        else:
            # Each step one ufunc call computing in int32 (the casts folded into it).
            x1 = np.left_shift(a, s1, dtype=np.int32) if s1 else a
            x2 = np.left_shift(b, s2, dtype=np.int32) if s2 else b
            acc = np.asarray(np.add(x1, x2, dtype=np.int32) if op is EltOp.ADD else np.subtract(x1, x2, dtype=np.int32))
        if n > 0:
            if up:
                acc += half
                acc >>= n
            else:
                acc = asr_rnd_int32(acc, n, mode)
        acc = _shl_sat_int32(acc, max(-n, 0), lo, hi)
        if out is None:
            return acc.astype(out_dt)
        out[...] = acc
        return out

    return arith


def sa8_eltwise(op: EltOp, a: npt.ArrayLike, b: npt.ArrayLike, p: SaParams) -> np.ndarray:
    """``eltwise_perform_operation<int8_t, int8_t, op, convert=true>`` (broadcasting).

    Args:
        op: the operation.
        a, b: int8 values of the two operands, broadcastable shapes.
        p: the parameters (:func:`sa8_params`).

    Returns:
        int64 array of sa8 output values, the broadcast shape.
    """
    a64, b64 = np.asarray(a, np.int64), np.asarray(b, np.int64)
    # Centred operands: |a - zp| <= 255 (zero points are checked to lie in [-128, 127]).
    c1 = sub_sat(a64, p.zp1, 16)
    c2 = sub_sat(b64, p.zp2, 16)
    if op is EltOp.MUL:
        acc = c1 * c2
        target = 32 - 8 - 3  # accumulator bits - output bits - headroom
        preshift = min(max(p.post - target, 0), 3)
        r = sat(asr_rnd(acc, preshift, 32), 16)
        tmp = sat(asr_rnd(r * p.scale1, p.post - preshift, 32), 16)
    else:
        x1 = c1 * p.scale1  # Q: |x| < 2**24, exact
        x2 = c2 * p.scale2
        if op in (EltOp.MAX, EltOp.MIN):
            acc = np.maximum(x1, x2) if op is EltOp.MAX else np.minimum(x1, x2)
            tmp = sat(asr_rnd(acc, p.post, 32), 16)
        else:
            x1 = asr_rnd(x1, p.pre1, 32)
            x2 = asr_rnd(x2, p.pre2, 32)
            acc = add_sat(x1, x2, 32) if op is EltOp.ADD else sub_sat(x1, x2, 32)
            tmp = sat(asr_rnd(acc, p.post, 64), 16)
    return sat(add_sat(tmp, p.zp_out, 16), 8)
