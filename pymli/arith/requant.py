"""Arithmetic of MLI's MAC kernels: accumulator, bias, output requantisation, fused ReLU bounds.

This mirrors ``bricks/impl/mli_prv_quant_ref.h`` and the accumulator types of the reference PAL
(``pal/ref/mli_math.h``) as used by convolution, fully connected and the recurrent kernels. All
functions are vectorised over NumPy int64 arrays; per-channel parameters broadcast along the last
axis (the output channel axis of HWC / [N] outputs).

Accumulators (reference build, x86):

=====================  ==============  ============================================================
kernel types            ``acc_bits``    C accumulator
=====================  ==============  ============================================================
sa8 x sa8 (+ sa32)      32              ``int32_t``; every MAC wraps (two's complement)
fx16 x fx8 (+ fx8)      32              ``int32_t``; every MAC wraps
fx8 x fx8 (+ fx8)       32              ``int32_t``; every MAC wraps
fx16 x fx16 (+ fx16)    40              ``mli_acc40_t`` = ``int64_t`` on x86: never wraps in practice
=====================  ==============  ============================================================

Since a sequence of wrapping additions equals the exact sum reduced modulo ``2**acc_bits``, a
kernel may compute the dot products and the zero-point additives exactly (int64 or exact float)
and call :func:`wrap_acc` once; the bias is then added with saturation (``mli_math_add_fx``).

Public API (stable; other kernels rely on it):

* :func:`wrap_acc` -- ``acc_bits``-bit wrap-around of an exact sum (MAC chains).
* :func:`acc_container_bits` -- C container width of an accumulator (32 or 64).
* :func:`norm32` -- ``mli_math_norm_fx<int32_t>``.
* :func:`fx_bias` -- FX bias aligned to the accumulator (``bias_additive`` for FX, before the add).
* :func:`add_bias` -- saturating ``mli_math_add_fx`` of accumulator and aligned bias.
* :func:`fx_result_cast` -- FX accumulator to output container (``result_cast`` for FX).
* :func:`sa8_out_params` -- per-channel output multiplier and shift (``define_quant_params`` +
  ``adjust_quant_params`` for s8asym), honouring FULL_ACCU.
* :func:`sa8_bias` -- sa32 bias as added by ``bias_additive`` (precision-reduced without FULL_ACCU);
  :func:`sa8_bias_bound` also returns its largest magnitude.
* :func:`sa8_result_cast` -- s8asym accumulator to int8 (``result_cast`` for s8asym).
* :func:`sa8_float_cast` -- bias add and :func:`sa8_result_cast` in a few float64 passes on exact
  sums (the first stage in float32 on float32 sums), when that is provably exact (else None).
* :func:`relu_bounds` -- ``mli_prv_get_relu_limits``: clamp bounds of the fused ReLU.
* :func:`shift_round` -- fast ``mli_math_asr_rnd_fx`` for int64 values far from the type limits.
* :func:`asr_rnd32` -- fast ``mli_math_asr_rnd_fx<int32_t>`` (rounding add saturation included).
* :func:`asr_rnd_int` -- the same on one Python int (parameter set-up without NumPy overhead).
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import numpy.typing as npt

from ..config import get_platform
from ..formats import RoundMode
from .activation import relu_limits
from .rounding import clip_ufunc as _clip
from .rounding import asl, asr_rnd, convergent_bump, limits, norm, sat, trunc_div, wrap, wrap_int

_F32_EXACT = 1 << 24
"""Integers below this (times a power of two) are exact float32 values."""

_TILE_PIXELS = 16
"""Most pixels per inner loop of a per-channel pass of :class:`Sa8FloatCast` (see its ``_rows``)."""

__all__ = [
    "RELU_1",
    "RELU_6",
    "RELU_GEN",
    "RELU_NONE",
    "Sa8FloatCast",
    "acc_container_bits",
    "add_bias",
    "asr_rnd32",
    "asr_rnd_int",
    "fx_bias",
    "fx_result_cast",
    "norm32",
    "relu_bounds",
    "sa8_bias",
    "sa8_bias_bound",
    "sa8_float_cast",
    "sa8_out_params",
    "sa8_result_cast",
    "shift_round",
    "wrap_acc",
]

I64 = np.int64
ArrayLike = npt.ArrayLike

RELU_NONE, RELU_GEN, RELU_1, RELU_6 = 0, 1, 2, 3


def _full_accu(full_accu: bool | None) -> bool:
    return get_platform().full_accu if full_accu is None else bool(full_accu)


def acc_container_bits(acc_bits: int) -> int:
    """Width of the C container of an accumulator: 32 for ``mli_acc32_t``, 64 for ``mli_acc40_t``.

    Args:
        acc_bits: accumulator bits (32 or 40).

    Returns:
        32 or 64.
    """
    return 32 if acc_bits <= 32 else 64


def wrap_acc(acc: ArrayLike, acc_bits: int) -> np.ndarray:
    """Reduce an exact sum of MACs to the C accumulator (wraps for 32 bits, int64 otherwise).

    Args:
        acc: exact integer sums, any shape.
        acc_bits: accumulator bits (32 or 40).

    Returns:
        int64 array, shape of ``acc``.
    """
    return wrap(acc, acc_container_bits(acc_bits))


def norm32(x: ArrayLike) -> np.ndarray:
    """``mli_math_norm_fx<int32_t>``: redundant sign bits of a 32-bit value (31 for 0 and -1).

    Args:
        x: int32-range values, any shape.

    Returns:
        int64 array, shape of ``x``.
    """
    return norm(x, 32)


def asr_rnd_int(x: int, n: int, bits: int = 32, mode: RoundMode | None = None) -> int:
    """``mli_math_asr_rnd_fx`` on one Python int modelling a ``bits``-bit C integer (no NumPy).

    Args:
        x: the value.
        n: right shift; a negative one is a saturating left shift.
        bits: container bits.
        mode: rounding mode (default: the current platform's).

    Returns:
        The shifted value as a Python int.
    """
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if n < 0:
        m = -n
        if m > bits - 1:
            return 0 if x == 0 else (lo if x < 0 else hi)
        return max(lo, min(hi, x << m))
    if n == 0:
        return x
    if n > bits - 1:
        return 0
    mode = get_platform().round_mode if mode is None else mode
    half = 1 << (n - 1)
    if mode is RoundMode.UP:
        return min(x + half, hi) >> n
    r = x >> n
    return r + 1 if convergent_bump(x, r, half) else r


def _half(n: ArrayLike, dtype: np.dtype) -> np.ndarray:
    """``2**(n-1)`` (0 for ``n == 0``) in ``dtype``, computed in int64 (``0 <= n <= 62``)."""
    return ((I64(1) << np.asarray(n, dtype=I64)) >> 1).astype(dtype)


def shift_round(x: ArrayLike, n: ArrayLike, mode: RoundMode | None = None) -> np.ndarray:
    """``mli_math_asr_rnd_fx`` for ``0 <= n`` when ``|x| + 2**(n-1)`` fits the dtype of ``x``.

    ``x`` keeps its integer dtype (int32 or int64; Python ints become int64). Under that bound
    neither the rounding add nor the shift can overflow, so no saturation is needed and the result
    equals the C function for any container in which ``x`` fits (``n`` must also stay below the
    dtype's width). ``n == 0`` returns ``x``.

    Args:
        x: int values, any shape.
        n: shift(s) broadcasting against ``x``.
        mode: rounding mode (default: the current platform's).

    Returns:
        Array of the dtype of ``x``, the broadcast shape.
    """
    x = np.asarray(x)
    if x.dtype.kind != "i" or x.dtype.itemsize < 4:
        x = x.astype(I64)
    half = _half(n, x.dtype)
    n = np.asarray(n, dtype=x.dtype)
    mode = get_platform().round_mode if mode is None else mode
    if mode is RoundMode.UP:
        return (x + half) >> n
    r = x >> n
    return r + convergent_bump(x, r, half)


def asr_rnd32(x: ArrayLike, n: ArrayLike, mode: RoundMode | None = None, x_bound: int | None = None) -> np.ndarray:
    """``mli_math_asr_rnd_fx<int32_t>`` for int32 values and ``0 <= n <= 31`` (fast path).

    ROUND_UP saturates the rounding add at INT32_MAX: clamping ``x`` to ``INT32_MAX - half``
    first gives exactly the same shifted value (skipped when ``x_bound`` proves the add cannot
    saturate). ROUND_CONVERGENT never saturates.

    Args:
        x: int32-range values (int32 or int64 dtype, kept), any shape.
        n: shift(s) broadcasting against ``x``.
        mode: rounding mode (default: the current platform's).
        x_bound: a bound on ``|x|``, or None.

    Returns:
        Array of the dtype of ``x``, the broadcast shape.
    """
    x = np.asarray(x)
    if x.dtype.kind != "i" or x.dtype.itemsize < 4:
        x = x.astype(I64)
    mode = get_platform().round_mode if mode is None else mode
    if mode is RoundMode.UP:
        nmax = int(np.max(n)) if np.size(n) else 0
        if x_bound is None or x_bound + ((1 << nmax) >> 1) > (1 << 31) - 1:
            x = np.minimum(x, x.dtype.type((1 << 31) - 1) - _half(n, x.dtype))
    return shift_round(x, n, mode)


# ---------------------------------------------------------------------------------------- FX
def fx_bias(bias: ArrayLike, bias_shift: int, acc_bits: int) -> np.ndarray:
    """FX bias brought to the accumulator format (``bias_additive`` for MLI_FX, before the add).

    Args:
        bias: bias values (int8 or int16 container values).
        bias_shift: ``in.frac_bits + weights.frac_bits - bias.frac_bits`` (left shift).
        acc_bits: 32 (``mli_acc32_t``) or 40 (``mli_acc40_t``).

    Returns:
        int64 array: for 32-bit accumulators a saturating shift in 32 bits; for the 40-bit
        accumulator the C code shifts in 64 bits and then casts to ``int32_t`` (wraps).
    """
    b = np.asarray(bias, dtype=I64)
    if acc_bits <= 32:
        return asr_rnd(b, -int(bias_shift), 32)
    return wrap(asr_rnd(b, -int(bias_shift), 64), 32)


def add_bias(acc: ArrayLike, bias: ArrayLike, acc_bits: int, acc_bound: int | None = None,
             bias_bound: int | None = None) -> np.ndarray:
    """``mli_math_add_fx<acc_T>(acc, bias)``: saturating add in the accumulator container.

    Args:
        acc: accumulators (int32 or int64), any shape.
        bias: bias values broadcasting against ``acc``.
        acc_bits: accumulator bits (32 or 40).
        acc_bound: a bound on ``|acc|``, or None.
        bias_bound: a bound on ``|bias|``, or None (computed).

    Returns:
        The sums: int32 when ``acc`` is int32 and ``acc_bound`` plus the largest bias proves they fit
        31 bits, int64 otherwise.
    """
    acc = np.asarray(acc)
    bias = np.asarray(bias, dtype=I64)
    if acc_container_bits(acc_bits) == 64:
        # |acc| < 2**62 and |bias| < 2**32 in every MLI kernel: the int64 add cannot overflow.
        return acc.astype(I64, copy=False) + bias
    bmax = bias_bound if bias_bound is not None else (int(np.abs(bias).max()) if bias.size else 0)
    if acc_bound is not None and acc_bound + bmax < (1 << 31):
        if acc.dtype == np.int32:
            return acc + bias.astype(np.int32)
        return acc + bias
    lo, hi = limits(32)
    return _clip(acc.astype(I64, copy=False) + bias, I64(lo), I64(hi))


def fx_result_cast(acc: ArrayLike, out_shift: int, acc_bits: int, out_bits: int,
                   acc_bound: int | None = None) -> np.ndarray:
    """``result_cast`` for MLI_FX: rounding shift right by ``out_shift`` in the accumulator container,
    then saturation to the ``out_bits`` output container (``mli_math_cast_fx<acc_T, out_T>``).

    Args:
        acc: accumulators (int32 or int64 dtype, kept), any shape.
        out_shift: right shift (left for a negative one).
        acc_bits: accumulator bits (32 or 40).
        out_bits: output container bits.
        acc_bound: a bound on ``|acc|`` that lets the 32-bit path skip the saturation of the
            rounding add, or None.

    Returns:
        Array of output values, shape of ``acc``.
    """
    cb = acc_container_bits(acc_bits)
    acc = np.asarray(acc)
    if acc.dtype.kind != "i" or acc.dtype.itemsize < 4:
        acc = acc.astype(I64)
    s = int(out_shift)
    if cb == 32 and 0 <= s <= 31:
        r = asr_rnd32(acc, s, x_bound=acc_bound)
    elif cb == 64 and 0 <= s <= 62:
        # 40-bit accumulators of real kernels stay far below 2**61: no saturation possible.
        r = shift_round(acc.astype(I64, copy=False), s)
    else:
        r = asr_rnd(acc, s, cb)
    lo, hi = limits(out_bits)
    return _clip(r, r.dtype.type(lo), r.dtype.type(hi))


# --------------------------------------------------------------------------------------- SA8
def sa8_out_params(in_scale: int, in_frac: int, out_scale: int, out_frac: int,
                   w_scales: ArrayLike, w_fracs: ArrayLike,
                   full_accu: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel output multiplier and shift of an s8asym MAC kernel.

    Mirrors ``define_quant_params`` (in/out scale ratio normalised and cut to 16 bits) followed
    by ``adjust_quant_params`` for each output channel (ratio times the weights scale; without
    FULL_ACCU the product is normalised to use all 32 bits).

    Args:
        in_scale, in_frac: input scale (int16) and scale_frac_bits (int8), per tensor.
        out_scale, out_frac: output scale and scale_frac_bits, per tensor.
        w_scales, w_fracs: weights scales / frac bits, one per output channel (or one value).
        full_accu: FULL_ACCU build; ``None`` reads the current platform.

    Returns:
        (out_mul, out_shift): int64 arrays (read-only, cached), the accumulator is scaled as
        ``acc * out_mul * 2**-out_shift``.
    """
    ws = np.ascontiguousarray(w_scales, dtype=I64).reshape(-1)
    wf = np.ascontiguousarray(w_fracs, dtype=I64).reshape(-1)
    return _sa8_out_params(int(in_scale), int(in_frac), int(out_scale), int(out_frac), ws.tobytes(), wf.tobytes(),
                           _full_accu(full_accu), get_platform().round_mode)


@functools.lru_cache(maxsize=256)
def _sa8_out_params(in_scale: int, in_frac: int, out_scale: int, out_frac: int, w_scales: bytes,
                    w_fracs: bytes, full: bool, mode: RoundMode) -> tuple[np.ndarray, np.ndarray]:
    n_in = int(norm32(in_scale))
    unfinished = int(asl(in_scale, n_in, 32))
    unfinished = trunc_div(unfinished, out_scale) if out_scale != 0 else 0
    n_ratio = int(norm32(unfinished))
    ratio = int(sat(asr_rnd(unfinished, 16 - n_ratio, 32, mode), 16))
    in_to_out_shift = int(in_frac) + n_in - int(out_frac) - (16 - n_ratio)
    mul = ratio * np.frombuffer(w_scales, dtype=I64)
    shift = in_to_out_shift + np.frombuffer(w_fracs, dtype=I64)
    mul = wrap(mul, 32)
    if not full:
        nrm = norm32(mul)
        mul = wrap(mul << nrm, 32)
        shift = shift + nrm
    mul.flags.writeable = False
    shift.flags.writeable = False
    return mul, shift


def sa8_bias(bias: ArrayLike, full_accu: bool | None = None) -> np.ndarray:
    """sa32 bias as ``bias_additive`` adds it: without FULL_ACCU only its 16 most significant
    bits are kept (lower bits cleared by an arithmetic shift pair).

    Args:
        bias: int32 bias values, any shape.
        full_accu: the FULL_ACCU build option (default: the current platform's).

    Returns:
        int64 array, shape of ``bias``.
    """
    return sa8_bias_bound(bias, full_accu)[0]


def sa8_bias_bound(bias: ArrayLike, full_accu: bool | None = None) -> tuple[np.ndarray, int]:
    """:func:`sa8_bias` and the largest magnitude of its values (cached per bias content).

    Args:
        bias: int32 bias values, any shape.
        full_accu: the FULL_ACCU build option (default: the current platform's).

    Returns:
        (reduced bias as an int64 array, largest ``|value|``).
    """
    b = np.ascontiguousarray(bias, dtype=I64)
    return _sa8_bias_reduced(b.tobytes(), b.shape, _full_accu(full_accu))


@functools.lru_cache(maxsize=256)
def _sa8_bias_reduced(b_bytes: bytes, shape: tuple[int, ...], full: bool) -> tuple[np.ndarray, int]:
    b = np.frombuffer(b_bytes, dtype=I64).reshape(shape)
    if full:
        r = b.copy()
    else:
        sh = np.maximum(16 - norm32(b), 0)
        # Shifting back left cannot saturate: the low bits were just cleared.
        r = (b >> sh) << sh
    r.flags.writeable = False
    return r, int(np.abs(r).max()) if r.size else 0


def sa8_result_cast(acc: ArrayLike, out_mul: ArrayLike, out_shift: ArrayLike, out_zp: int,
                    full_accu: bool | None = None, *, clamp: tuple[int, int] = (-128, 127),
                    acc_bound: int | None = None) -> np.ndarray:
    """``result_cast`` for s8asym: int32 accumulator to int8 output, per-channel ``out_mul/out_shift``.

    Without FULL_ACCU the multiplier is reduced to 16 bits and the accumulator pre-shifted
    (at most 8 bits, rounding) and saturated to 16 bits before the 64-bit product; with FULL_ACCU
    the full 32-bit accumulator multiplies the full multiplier. The product is shifted with
    rounding (64 bits), saturated to 16 bits, the output zero point added (saturating 16-bit add)
    and the result saturated to int8.

    Args:
        acc: int32 accumulator values (bias included), channels on the last axis; int32 or int64
            dtype (kept when the arithmetic provably fits it).
        out_mul, out_shift: from :func:`sa8_out_params` (broadcast along the last axis).
        out_zp: output zero point.
        full_accu: FULL_ACCU build; ``None`` reads the current platform.
        clamp: a further clamp inside the int8 range (a fused ReLU's bounds); merging it here is
            exact because saturating to int16 and then clamping to a sub-range of int8 equals
            clamping directly.
        acc_bound: optional bound on ``|acc|`` (skips a saturation that cannot happen).

    Returns:
        array of int8 values (dtype of the computation: int32 or int64).
    """
    acc = np.asarray(acc)
    if acc.dtype != np.int32 and acc.dtype != I64:
        acc = acc.astype(I64)
    mul = np.ascontiguousarray(out_mul, dtype=I64)
    shift = np.ascontiguousarray(out_shift, dtype=I64)
    full = _full_accu(full_accu)
    mode = get_platform().round_mode
    up = mode is RoundMode.UP
    plan = _cast_plan(mul.tobytes(), shift.tobytes(), full, mode)
    if not full:
        a = acc
        if plan.pre_max:
            pre, half = plan.pre[a.dtype.char], plan.pre_half[a.dtype.char]
            if up and (acc_bound is None or acc_bound + (1 << (plan.pre_max - 1)) > (1 << 31) - 1):
                # ROUND_UP's rounding add saturates at INT32_MAX: clamping first is equivalent.
                a = np.minimum(a, plan.pre_lim[a.dtype.char])
            a = _rnd(a, pre, half, up)
        a = _clip(a, a.dtype.type(-(1 << 15)), a.dtype.type((1 << 15) - 1))
        if a.dtype == np.int32 and plan.sh_ok32:
            # |a| <= 2**15 and |mul| <= 2**15: |a * mul| + 2**29 < 2**31, int32 is exact.
            r = _rnd(a * plan.mul["i"], plan.sh["i"], plan.sh_half["i"], up)
        else:
            p = a.astype(I64, copy=False) * plan.mul["l"]
            r = _rnd(p, plan.sh["l"], plan.sh_half["l"], up) if plan.sh_ok64 else asr_rnd(p, plan.sh["l"], 64, mode)
    else:
        # |acc| <= 2**31, |mul| <= 2**30 (a product of two int16): |p| <= 2**61, and the rounding
        # add of at most 2**61 cannot overflow int64.
        p = acc.astype(I64, copy=False) * plan.mul["l"]
        r = _rnd(p, plan.sh["l"], plan.sh_half["l"], up) if plan.sh_ok64 else asr_rnd(p, plan.sh["l"], 64, mode)
    t = r.dtype.type
    r = _clip(r, t(-(1 << 15)), t((1 << 15) - 1))
    r += t(int(out_zp))
    lo, hi = max(int(clamp[0]), -128), min(int(clamp[1]), 127)
    return _clip(r, t(lo), t(hi))


def _rnd(x: np.ndarray, n: np.ndarray, half: np.ndarray, up: bool) -> np.ndarray:
    """Rounding shift right with precomputed ``half = 2**(n-1)`` (no overflow: see callers)."""
    if up:
        return (x + half) >> n
    r = x >> n
    return r + convergent_bump(x, r, half)


@dataclasses.dataclass(frozen=True)
class _CastPlan:
    """Per-channel constants of :func:`sa8_result_cast` in int32 ('i') and int64 ('l') forms."""

    mul: dict
    sh: dict
    sh_half: dict
    pre: dict
    pre_half: dict
    pre_lim: dict
    pre_max: int
    sh_ok32: bool
    sh_ok64: bool


def _forms(v: np.ndarray) -> dict:
    v64 = np.asarray(v, dtype=I64)
    return {"l": v64, "i": v64.astype(np.int32) if v64.size and np.all(np.abs(v64) < (1 << 31)) else v64}


def _in_range(a: np.ndarray, lo: int, hi: int) -> bool:
    return bool(np.all((a >= lo) & (a <= hi)))


@functools.lru_cache(maxsize=256)
def _cast_plan(mul_b: bytes, shift_b: bytes, full: bool, mode: RoundMode) -> _CastPlan:
    """Per-channel constants of :func:`sa8_result_cast` (scalars when all channels agree)."""
    mul = np.frombuffer(mul_b, dtype=I64)
    shift = np.frombuffer(shift_b, dtype=I64)
    if mul.size > 1 and (mul == mul[0]).all() and (shift == shift[0]).all():
        mul, shift = mul[:1], shift[:1]
    if mul.size == 1:
        mul, shift = mul.reshape(()), shift.reshape(())
    if full:
        sh = np.minimum(shift, 63)
        ok = _in_range(sh, 0, 62)
        half = _half(np.clip(sh, 0, 62), I64)
        return _CastPlan(_forms(mul), _forms(sh), _forms(half), {}, {}, {}, 0, False, ok)
    m16 = asr_rnd(mul, 16, 32, mode)
    sh = shift - 16
    pre = np.clip(sh - (32 - 8 - 3), 0, 8)
    sh = np.minimum(sh - pre, 63)
    pre_half = _half(pre, I64)
    sh_half = _half(np.clip(sh, 0, 62), I64)
    return _CastPlan(_forms(m16), _forms(sh), _forms(sh_half), _forms(pre), _forms(pre_half),
                     _forms(((1 << 31) - 1) - pre_half), int(np.max(pre)), _in_range(sh, 0, 30), _in_range(sh, 0, 62))


@dataclasses.dataclass(frozen=True, eq=False)
class _Int32Stage:
    """The ROUND_UP second stage of :class:`Sa8FloatCast` in int32 passes (no FULL_ACCU).

    The float32 first stage adds ``add`` (instead of the plan's ``f32`` additive): with ``offset``
    it also adds ``2**15``, so that the int16 saturation of ``a = floor(u)`` becomes a clip of
    ``a + 2**15`` to ``[0, 2**16 - 1]`` on which the float32 -> int32 truncation is the floor (one
    pass fewer); the planner checks that ``u + 2**15`` stays exact. Then
    ``r = ((a + offset) * mul + add2) >> sh`` with ``add2 = 2**(sh-1) - offset * mul`` (plus
    ``zp * 2**sh`` when ``zp`` is folded in) is ``floor((a * mul + 2**(sh-1)) / 2**sh)`` (plus
    ``zp``): the int32 multiply and add wrap modulo 2**32, which leaves the result exact because
    the true value ``a * mul + 2**(sh-1) [+ zp * 2**sh]`` lies in int32 (``|a| <= 2**15``,
    ``|mul| <= 2**15``, ``sh <= 30``; with the zero point: checked per channel). The clip to
    ``[lo, hi]`` is then the output clamp (``zp`` folded in, ``zp8 == 0``), or the clamp minus
    the zero point (``[low, high]``, inside int16), whose int8 cast plus ``zp8`` (the zero point
    modulo 256) wraps to exactly the clamped output.

    Attributes:
        add: float32 additive of the first stage (per channel or scalar).
        offset: 2**15 or 0.
        mul, add2, sh: int32 per-channel (or scalar) multiplier, additive and shift.
        lo, hi: the clip after the shift; zp8: int8 added after the cast (0: none).
    """

    add: np.ndarray
    offset: int
    mul: np.ndarray
    add2: np.ndarray
    sh: np.ndarray
    lo: int
    hi: int
    zp8: int


def _uniform(a: np.ndarray) -> bool:
    """All values of ``a`` are equal."""
    return a.size == 0 or bool((a == a.flat[0]).all())


def _scalar_if_uniform(a: np.ndarray) -> np.ndarray:
    """``a``, or its one value as a 0-d array when all are equal (a scalar operand: a faster pass)."""
    return a.reshape(-1)[:1].reshape(()) if a.size and _uniform(a) else a


def _int32_stage(add32: np.ndarray, pre: np.ndarray | None, vb: int, m: np.ndarray, sh: np.ndarray, zp: int,
                 lo: int, hi: int) -> _Int32Stage:
    """:class:`_Int32Stage` of a plan: ``add32`` its float32 first-stage additive, ``pre`` the
    per-channel pre-shifts (None: the values are integers), ``vb`` the bound on ``|acc + bias|``,
    ``m``, ``sh`` the int16 multiplier and shift (``0 <= sh <= 30``, ``|m| <= 2**15``)."""
    # u + 2**15 is a multiple of 2**-q (q = max(pre, 1) with pre-shifts: the 0.5 of ROUND_UP)
    # bounded by vb * 2**-pre + 1/2 + 2**15: exact in float32 when that, in units of 2**-q, is
    # below 2**24
    if pre is None:
        offset_ok = vb + (1 << 15) < _F32_EXACT
    else:
        q = np.maximum(pre, 1)
        offset_ok = bool(np.all((vb << (q - pre)) + (I64(1) << (q - 1)) + (I64(1) << (q + 15)) < _F32_EXACT))
    half = (I64(1) << sh) >> 1
    # the zero point is folded in when |a * m| + 2**(sh-1) + |zp| * 2**sh stays in int32
    fold = bool(np.all((np.abs(m) << 15) + half + (abs(zp) << sh) < (1 << 31)))
    add2 = half + (zp << sh if fold else 0)
    # The offset saves the floor pass but puts the per-channel -offset * m into add2: taken unless
    # that turns a scalar add2 into a per-channel one (measured on 65k values: a pass with a
    # per-channel operand ~10 us, with a scalar ~3.5 us, the floor ~5 us).
    offset = 1 << 15 if offset_ok and (_uniform(m) or not _uniform(add2)) else 0
    add2 = add2 - offset * m
    return _Int32Stage(add=(add32 + np.float32(offset)).astype(np.float32), offset=offset,
                       mul=_scalar_if_uniform(m.astype(np.int32)),
                       add2=_scalar_if_uniform(wrap(add2, 32).astype(np.int32)),
                       sh=_scalar_if_uniform(sh.astype(np.int32)),
                       lo=lo if fold else lo - zp, hi=hi if fold else hi - zp, zp8=0 if fold else wrap_int(zp, 8))


@dataclasses.dataclass(frozen=True, eq=False)
class Sa8FloatCast:
    """Bias add and s8asym ``result_cast`` of one call in float64 (see :func:`sa8_float_cast`).

    Attributes:
        bias: float64 reduced bias (per channel or scalar).
        sat32: clip the biased sum to int32 (the saturating bias add can saturate).
        pre_scale: ``2**-pre`` per channel, or None when no channel pre-shifts.
        pre_lim: ROUND_UP's clamp before the pre-shift (its rounding add saturates), or None.
        pre_bias: ``bias * 2**-pre`` (plus 0.5 for ROUND_UP) when neither saturation can happen
            (the bias add and the pre-shift's rounding add then fold into one multiply-add), or None.
        sat16: clip to int16 after the pre-shift (None when that clip is provably invisible).
        scale: ``m16 * 2**-sh`` (FULL_ACCU: ``mul * 2**-sh``) per channel.
        low, high: the final clamp shifted by the zero point, ``lo - zp`` and ``hi - zp``.
        out_lo: ``lo`` (the result is ``u + lo`` for ``u`` in ``[0, hi - lo]``).
        up: ROUND_UP (else ROUND_CONVERGENT).
        f32: float32 forms ``(pre_scale or None, pre_bias or bias)`` of the first stage when it is
            exact in float32 (no saturation, ``2 * (|acc| + |bias|) + 2**pre < 2**24``), or None:
            float32 sums then take that stage in float32 (no mixed-type passes: measured 21 us
            instead of 37 us for the whole stage on 16k sums) and only the second in float64.
        i32: the second stage in int32 passes after a float32 first one (:class:`_Int32Stage`),
            when it can run there (ROUND_UP without FULL_ACCU, ``0 <= sh <= 30``,
            ``|m16| <= 2**15``), else None.
    """

    bias: np.ndarray
    sat32: bool
    pre_scale: np.ndarray | None
    pre_lim: np.ndarray | None
    pre_bias: np.ndarray | None
    sat16: bool
    scale: np.ndarray
    low: int
    high: int
    out_lo: int
    up: bool
    f32: tuple[np.ndarray | None, np.ndarray] | None = None
    i32: _Int32Stage | None = None
    _tiles: dict = dataclasses.field(default_factory=dict, repr=False)

    def _rows(self, v: np.ndarray, *ops: np.ndarray | None) -> tuple:
        """``v`` (channels last) and the per-channel operands ``ops`` reshaped for elementwise
        passes whose inner loop runs over up to :data:`_TILE_PIXELS` pixels (each operand repeated
        as often): a (64,) operand broadcast over pixels makes NumPy loop 64 elements at a time
        (measured 15 us instead of 6 us for a float32 multiply of 65k sums). Scalars (and
        one-element operands) are returned as they are, which broadcast against either form;
        so is everything for a non-contiguous ``v``.

        Returns:
            ``(rows, *operands)``: the view of ``v`` and the operands in the same order.
        """
        if v.ndim == 0 or not v.flags.c_contiguous or all(a is None or np.size(a) <= 1 for a in ops):
            return (v, *ops)
        c = v.shape[-1]
        pixels = v.size // c if c else 0
        r = min(pixels & -pixels, _TILE_PIXELS)  # a power of two dividing the pixel count
        if r <= 1:
            return (v, *ops)
        return (v.reshape(-1, c * r), *(a if a is None or np.size(a) <= 1 else self._tile(a, r) for a in ops))

    def _tile(self, a: np.ndarray, r: int) -> np.ndarray:
        """``a`` repeated ``r`` times (cached: the plan's own arrays, whose ids are stable while it lives)."""
        key = (id(a), r)
        t = self._tiles.get(key)
        if t is None:
            t = self._tiles[key] = np.tile(a, r)
        return t

    def first_stage(self) -> tuple[np.ndarray | None, np.ndarray] | None:
        """The float32 first pass as ``(scale or None, additive)`` (per channel or scalar): float32
        sums ``acc`` become ``acc * scale + additive`` (its ``i32`` form's additive where it has
        one), which a product may apply itself (see ``staged``); None without the float32 stage."""
        if self.f32 is None:
            return None
        return self.f32[0], (self.f32[1] if self.i32 is None else self.i32.add)

    def __call__(self, acc: np.ndarray, overwrite: bool = False, staged: bool = False) -> np.ndarray:
        """Exact integer sums (any numeric dtype, channels last) -> int8 outputs.

        Args:
            acc: sums bounded as the plan's ``acc_bound`` says.
            overwrite: ``acc`` may be overwritten (a temporary of the caller).
            staged: ``acc`` (float32) already holds the exact ``acc * scale + additive`` of
                :meth:`first_stage` (only for a plan that has one).

        Returns:
            int8 array, shape of ``acc``.

        Raises:
            ValueError: ``staged`` without a float32 first stage or with other than float32 sums.
        """
        if staged and (self.f32 is None or acc.dtype != np.float32):
            raise ValueError("staged sums need a plan with a float32 first stage and float32 sums")
        if self.f32 is not None and acc.dtype == np.float32:
            # Stage one in float32, exact: see sa8_float_cast (the sum of the scaled terms is an
            # integer below 2**24 times a power of two).
            scale32, add32 = self.first_stage()  # type: ignore[misc]
            v32 = acc if overwrite and acc.flags.c_contiguous else np.array(acc)
            if not staged:
                rows, scale, add = self._rows(v32, scale32, add32)
                if scale is not None:
                    rows *= scale
                rows += add
            if self.i32 is not None:
                return self._finish32(v32, scale32 is not None)
            if scale32 is not None:
                if self.up:
                    np.floor(v32, out=v32)
                else:
                    np.rint(v32, out=v32)
            return self._finish(v32.astype(np.float64))
        if self.pre_bias is not None:
            # (acc + bias [+ 2**(pre-1)]) * 2**-pre in two passes: both terms and their sum are exact
            v = np.multiply(acc, self.pre_scale, dtype=np.float64)
            v += self.pre_bias
            if self.up:
                np.floor(v, out=v)
            else:
                np.rint(v, out=v)
            return self._finish(v)
        v = np.add(acc, self.bias, dtype=np.float64)
        if self.sat32:
            _clip(v, -2.0 ** 31, 2.0 ** 31 - 1, out=v)
        if self.pre_scale is not None:
            if self.pre_lim is not None:
                np.minimum(v, self.pre_lim, out=v)
            v *= self.pre_scale
            if self.up:
                v += 0.5
                np.floor(v, out=v)
            else:
                np.rint(v, out=v)
        return self._finish(v)

    def _finish32(self, v: np.ndarray, pre: bool) -> np.ndarray:
        """The float32 first stage's values before their floor (modified) -> int8 outputs, ROUND_UP
        (see :class:`_Int32Stage`); ``pre``: they are pre-shifted (not integers)."""
        st = self.i32
        if st.offset:
            # v = u + 2**15: the int16 clip is one to [0, 2**16 - 1], after which the truncating
            # cast is the floor; casting first is the same (any v < 0 ends at 0 either way)
            a = v.astype(np.int32)
            _clip(a, np.int32(0), np.int32((1 << 16) - 1), out=a)
        else:
            if pre:
                np.floor(v, out=v)
            a = v.astype(np.int32)  # integers below 2**24: exact
            _clip(a, np.int32(-(1 << 15)), np.int32((1 << 15) - 1), out=a)
        rows, m, add2, sh = self._rows(a, st.mul, st.add2, st.sh)
        rows *= m  # wraps modulo 2**32: see _Int32Stage
        rows += add2
        rows >>= sh
        _clip(a, np.int32(st.lo), np.int32(st.hi), out=a)
        u = a.astype(np.int8)
        if st.zp8:
            u += np.int8(st.zp8)  # the int8 wrap-around of the add is exact (see _Int32Stage)
        return u

    def _finish(self, v: np.ndarray) -> np.ndarray:
        """The pre-shifted values (float64, modified) -> int8 outputs."""
        if self.sat16:
            _clip(v, -32768.0, 32767.0, out=v)
        rows, scale = self._rows(v, self.scale)
        rows *= scale
        if self.up:
            # floor(x + 0.5) - low, clipped to [0, high - low]: clip and floor commute (integer
            # bounds), and on [0, 255] the truncating cast is the floor.
            v += 0.5 - self.low
        else:
            np.rint(v, out=v)  # ties to even: the integer shift of the zero point must follow it
            v -= self.low
        _clip(v, 0.0, float(self.high - self.low), out=v)
        u = v.astype(np.uint8).view(np.int8)
        u += np.int8(self.out_lo)  # u + lo lies in [lo, hi]: the int8 wrap-around of the add is exact
        return u


def sa8_float_cast(bias: ArrayLike, out_mul: ArrayLike, out_shift: ArrayLike, out_zp: int, acc_bound: int,
                   full_accu: bool | None = None, *,
                   clamp: tuple[int, int] = (-128, 127)) -> Sa8FloatCast | None:
    """Plan of :func:`add_bias` + :func:`sa8_result_cast` on exact sums in a few float64 passes.

    The plan's result equals ``sa8_result_cast(add_bias(acc, sa8_bias(bias), 32), ...)`` for every
    sum ``|acc| <= acc_bound`` (already the C accumulator: ``acc_bound < 2**31``, no wrap). Every
    float64 step is exact (checked here, else None is returned):

    * ``acc + bias`` is an integer below ``2**32``; the saturating add is a clip to int32.
    * The pre-shift (no FULL_ACCU) ``v * 2**-pre`` scales by a power of two, and ``+ 0.5`` gives
      ``(v + 2**(pre-1)) * 2**-pre``, an integer below 2**53 times a power of two: ``floor`` of it
      is ROUND_UP's ``(v + half) >> pre`` and ``rint`` (ties to even) ROUND_CONVERGENT's result.
      Without saturations it is ``acc * 2**-pre + (bias * 2**-pre + 0.5)``: every term exact.
      ROUND_UP's saturating rounding add is the same clamp as in :func:`sa8_result_cast`.
    * ``a * (m * 2**-sh)`` is the exact ``a * m * 2**-sh`` when ``|a * m| < 2**53`` (a product
      whose significand fits, scaled by a power of two); adding ``0.5 - low`` (an integer plus a
      half) stays exact when ``2 * |a * m| + 2**(sh+1) * (|low| + 1) < 2**53`` (twice the sum is
      an integer below 2**53); its floor is the rounded shift minus ``low``.
    * The int16 saturations before and after the shift: the one after it, with the zero point
      add and the final clamp, is one clip to ``[lo - zp, hi - zp]`` (exact when that range lies
      in int16); the one before it is dropped when every channel's rounded product of the int16
      limits already lies beyond the final clamp (the clamp then hides it).

    Args:
        bias: sa32 bias (per channel or scalar), before the precision reduction.
        out_mul, out_shift: from :func:`sa8_out_params`.
        out_zp: output zero point.
        acc_bound: bound on ``|acc|`` (the sums before the bias).
        full_accu: FULL_ACCU build; ``None`` reads the current platform.
        clamp: the fused ReLU's clamp, as in :func:`sa8_result_cast`.

    Returns:
        A callable :class:`Sa8FloatCast`, or None when float64 cannot be proved exact.
    """
    b = np.ascontiguousarray(bias, dtype=I64)
    mul = np.ascontiguousarray(out_mul, dtype=I64)
    shift = np.ascontiguousarray(out_shift, dtype=I64)
    return _sa8_float_cast(b.tobytes(), b.shape, mul.tobytes(), shift.tobytes(), int(out_zp), int(acc_bound),
                           _full_accu(full_accu), get_platform().round_mode,
                           max(int(clamp[0]), -128), min(int(clamp[1]), 127))


@functools.lru_cache(maxsize=256)
def _sa8_float_cast(b_bytes: bytes, b_shape: tuple[int, ...], mul_b: bytes, shift_b: bytes, zp: int,
                    acc_bound: int, full: bool, mode: RoundMode, lo: int, hi: int) -> Sa8FloatCast | None:
    if acc_bound >= 1 << 31 or lo > hi:
        return None
    b, bmax = _sa8_bias_reduced(b_bytes, b_shape, full)
    low, high = lo - zp, hi - zp
    if low < -(1 << 15) or high > (1 << 15) - 1:
        return None
    up = mode is RoundMode.UP
    vb = min(acc_bound + bmax, 1 << 31)  # bound on |acc + bias| after the saturating add
    plan = _cast_plan(mul_b, shift_b, full, mode)
    sh = np.asarray(plan.sh["l"], dtype=I64)
    m = np.asarray(plan.mul["l"], dtype=I64)
    if sh.size == 0 or not _in_range(sh, 0, 52):
        return None
    pre_scale = pre_lim = None
    sat16 = False
    if full:
        ab = vb
    else:
        pre = np.asarray(plan.pre["l"], dtype=I64)
        if plan.pre_max:
            pre_scale = np.ldexp(1.0, -pre)
            half = (I64(1) << pre) >> 1
            if up and vb + (1 << (plan.pre_max - 1)) > (1 << 31) - 1:
                pre_lim = (((1 << 31) - 1) - half).astype(np.float64)
        # The int16 clip is invisible when the extreme int16 values already round beyond the clamp;
        # without it |a| <= vb (a rounding right shift of an integer never grows its magnitude).
        r_lo = asr_rnd(np.int64(-(1 << 15)) * m, sh, 64, mode)
        r_hi = asr_rnd(np.int64((1 << 15) - 1) * m, sh, 64, mode)
        pos = (m > 0) & (r_lo <= low) & (r_hi >= high)
        neg = (m < 0) & (r_lo >= high) & (r_hi <= low)
        sat16 = not bool(np.all(pos | neg | (m == 0)))
        ab = 1 << 15 if sat16 else vb
    if 2 * int(np.max(np.abs(m))) * ab + (2 << int(np.max(sh))) * (abs(low) + 1) >= 1 << 53:
        return None
    sat32 = acc_bound + bmax > (1 << 31) - 1
    pre_bias = f32 = None
    if pre_scale is not None and not sat32 and pre_lim is None:
        # (acc + bias + 2**(pre-1)) * 2**-pre is an integer below 2**33 times a power of two, and so
        # are acc * 2**-pre and bias * 2**-pre + 0.5: the float64 add of the last two is exact.
        pre_bias = b.astype(np.float64) * pre_scale + (0.5 if up else 0.0)
        if 2 * (acc_bound + bmax) + (1 << plan.pre_max) < _F32_EXACT:
            # The same three values are integers below 2**24 times a power of two (a channel that
            # does not pre-shift: 2 * (acc + bias) + 1 halves), exact in float32 too, and so are
            # 2**-pre and the float32 sums.
            f32 = (pre_scale.astype(np.float32), pre_bias.astype(np.float32))
    elif pre_scale is None and not sat32 and acc_bound + bmax < _F32_EXACT:
        f32 = (None, b.astype(np.float32))  # acc + bias: an integer below 2**24
    i32 = None
    if f32 is not None and up and not full and _in_range(sh, 0, 30) and _in_range(m, -(1 << 15), 1 << 15):
        i32 = _int32_stage(f32[1], None if f32[0] is None else np.asarray(plan.pre["l"], dtype=I64), acc_bound + bmax,
                           m, sh, zp, lo, hi)
    return Sa8FloatCast(bias=b.astype(np.float64), sat32=sat32, pre_scale=pre_scale, pre_lim=pre_lim,
                        pre_bias=pre_bias, sat16=sat16, scale=np.ldexp(m.astype(np.float64), -sh), low=low,
                        high=high, out_lo=lo, up=up, f32=f32, i32=i32)


# -------------------------------------------------------------------------------------- ReLU
def relu_bounds(relu_type: int, out_bits: int, *, zero_point: int = 0, scale: int = 1,
                frac_bits: int = 0) -> tuple[int, int]:
    """``mli_prv_get_relu_limits``: (min, max) clamp of a fused ReLU in output container units.

    Args:
        relu_type: 0 NONE, 1 GEN, 2 RELU_1, 3 RELU_6 (``mli_relu_type`` values).
        out_bits: 8 or 16 (output container).
        zero_point, scale, frac_bits: output quantisation; FX outputs pass ``frac_bits`` only
            (zero 0, scale 1); SA outputs pass their zero point, scale and scale_frac_bits.

    Returns:
        (lo, hi) as the C code casts them to the output container (``int16_t`` then ``io_T``).
    """
    return relu_limits(int(relu_type), out_bits, int(zero_point), int(scale), int(frac_bits))


