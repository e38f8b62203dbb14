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
* :func:`sa8_bias` -- sa32 bias as added by ``bias_additive`` (precision-reduced without FULL_ACCU).
* :func:`sa8_result_cast` -- s8asym accumulator to int8 (``result_cast`` for s8asym).
* :func:`relu_bounds` -- ``mli_prv_get_relu_limits``: clamp bounds of the fused ReLU.
* :func:`shift_round` -- fast ``mli_math_asr_rnd_fx`` for int64 values far from the type limits.
* :func:`asr_rnd32` -- fast ``mli_math_asr_rnd_fx<int32_t>`` (rounding add saturation included).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ..config import get_platform
from ..formats import RoundMode
from .rounding import add_sat, asl, asr_rnd, limits, sat, wrap

__all__ = [
    "wrap_acc",
    "acc_container_bits",
    "norm32",
    "fx_bias",
    "add_bias",
    "fx_result_cast",
    "sa8_out_params",
    "sa8_bias",
    "sa8_result_cast",
    "relu_bounds",
    "shift_round",
    "asr_rnd32",
    "RELU_NONE",
    "RELU_GEN",
    "RELU_1",
    "RELU_6",
]

I64 = np.int64
ArrayLike = npt.ArrayLike

RELU_NONE, RELU_GEN, RELU_1, RELU_6 = 0, 1, 2, 3


def _full_accu(full_accu: bool | None) -> bool:
    return get_platform().full_accu if full_accu is None else bool(full_accu)


def acc_container_bits(acc_bits: int) -> int:
    """Width of the C container of an accumulator: 32 for ``mli_acc32_t``, 64 for ``mli_acc40_t``."""
    return 32 if acc_bits <= 32 else 64


def wrap_acc(acc: ArrayLike, acc_bits: int) -> np.ndarray:
    """Reduce an exact sum of MACs to the C accumulator (wraps for 32 bits, int64 otherwise)."""
    return wrap(acc, acc_container_bits(acc_bits))


def norm32(x: ArrayLike) -> np.ndarray:
    """``mli_math_norm_fx<int32_t>``: redundant sign bits of a 32-bit value (31 for 0 and -1)."""
    x = np.asarray(x, dtype=I64)
    mag = np.where(x < 0, ~x, x)
    # frexp is exact for |values| < 2**53: its exponent is the bit length.
    _, e = np.frexp(mag.astype(np.float64))
    return (31 - e).astype(I64)


def shift_round(x: ArrayLike, n: ArrayLike, mode: RoundMode | None = None) -> np.ndarray:
    """``mli_math_asr_rnd_fx`` on int64 for ``0 <= n <= 62`` and ``|x| < 2**62``.

    Under these bounds neither the rounding add nor the shift can overflow, so no saturation is
    needed: the result equals the C function for any container of 32 or 64 bits in which ``x``
    fits (for 32-bit containers the caller guarantees ``x + 2**(n-1)`` stays below ``2**31`` or
    clamps afterwards). ``n == 0`` returns ``x``.
    """
    x = np.asarray(x, dtype=I64)
    n = np.asarray(n, dtype=I64)
    mode = get_platform().round_mode if mode is None else mode
    half = (I64(1) << n) >> 1
    if mode is RoundMode.UP:
        return (x + half) >> n
    r = x >> n
    bump = ((x & half) != 0) & (((r & 1) != 0) | ((x & (half - 1)) != 0))
    return r + bump


def asr_rnd32(x: ArrayLike, n: ArrayLike, mode: RoundMode | None = None) -> np.ndarray:
    """``mli_math_asr_rnd_fx<int32_t>`` for int32 values and ``0 <= n <= 31`` (fast path).

    ROUND_UP saturates the rounding add at INT32_MAX: clamping ``x`` to ``INT32_MAX - half``
    first gives exactly the same shifted value. ROUND_CONVERGENT never saturates.
    """
    x = np.asarray(x, dtype=I64)
    n = np.asarray(n, dtype=I64)
    mode = get_platform().round_mode if mode is None else mode
    if mode is RoundMode.UP:
        x = np.minimum(x, ((1 << 31) - 1) - ((I64(1) << n) >> 1))
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


def add_bias(acc: ArrayLike, bias: ArrayLike, acc_bits: int) -> np.ndarray:
    """``mli_math_add_fx<acc_T>(acc, bias)``: saturating add in the accumulator container."""
    acc = np.asarray(acc, dtype=I64)
    bias = np.asarray(bias, dtype=I64)
    if acc_container_bits(acc_bits) == 64:
        # |acc| < 2**62 and |bias| < 2**32 in every MLI kernel: the int64 add cannot overflow.
        return acc + bias
    lo, hi = limits(32)
    return np.clip(acc + bias, lo, hi)


def fx_result_cast(acc: ArrayLike, out_shift: int, acc_bits: int, out_bits: int) -> np.ndarray:
    """``result_cast`` for MLI_FX: rounding shift right by ``out_shift`` in the accumulator container,
    then saturation to the ``out_bits`` output container (``mli_math_cast_fx<acc_T, out_T>``)."""
    cb = acc_container_bits(acc_bits)
    acc = np.asarray(acc, dtype=I64)
    s = int(out_shift)
    if cb == 32 and 0 <= s <= 31:
        r = asr_rnd32(acc, s)
    elif cb == 64 and 0 <= s <= 62:
        # 40-bit accumulators of real kernels stay far below 2**61: no saturation possible.
        r = shift_round(acc, s)
    else:
        r = asr_rnd(acc, s, cb)
    return sat(r, out_bits)


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
        (out_mul, out_shift): int64 arrays, the accumulator is scaled as
        ``acc * out_mul * 2**-out_shift``.
    """
    full = _full_accu(full_accu)
    in_scale, out_scale = int(in_scale), int(out_scale)
    n_in = int(norm32(in_scale))
    unfinished = int(asl(in_scale, n_in, 32))
    # C integer division truncates toward zero.
    q = abs(unfinished) // abs(out_scale) if out_scale != 0 else 0
    unfinished = q if (unfinished >= 0) == (out_scale > 0) else -q
    n_ratio = int(norm32(unfinished))
    ratio = int(sat(asr_rnd(unfinished, 16 - n_ratio, 32), 16))
    in_to_out_shift = int(in_frac) + n_in - int(out_frac) - (16 - n_ratio)
    mul = ratio * np.asarray(w_scales, dtype=I64).reshape(-1)
    shift = in_to_out_shift + np.asarray(w_fracs, dtype=I64).reshape(-1)
    mul = wrap(mul, 32)
    if not full:
        nrm = norm32(mul)
        mul = wrap(mul << nrm, 32)
        shift = shift + nrm
    return mul, shift


def sa8_bias(bias: ArrayLike, full_accu: bool | None = None) -> np.ndarray:
    """sa32 bias as ``bias_additive`` adds it: without FULL_ACCU only its 16 most significant
    bits are kept (lower bits cleared by an arithmetic shift pair)."""
    b = np.asarray(bias, dtype=I64)
    if _full_accu(full_accu):
        return b
    sh = np.maximum(16 - norm32(b), 0)
    return asl(b >> sh, sh, 32)


def sa8_result_cast(acc: ArrayLike, out_mul: ArrayLike, out_shift: ArrayLike, out_zp: int,
                    full_accu: bool | None = None) -> np.ndarray:
    """``result_cast`` for s8asym: int32 accumulator to int8 output, per-channel ``out_mul/out_shift``.

    Without FULL_ACCU the multiplier is reduced to 16 bits and the accumulator pre-shifted
    (at most 8 bits, rounding) and saturated to 16 bits before the 64-bit product; with FULL_ACCU
    the full 32-bit accumulator multiplies the full multiplier. The product is shifted with
    rounding (64 bits), saturated to 16 bits, the output zero point added (saturating 16-bit add)
    and the result saturated to int8.

    Args:
        acc: int32 accumulator values (bias included), channels on the last axis.
        out_mul, out_shift: from :func:`sa8_out_params` (broadcast along the last axis).
        out_zp: output zero point.
        full_accu: FULL_ACCU build; ``None`` reads the current platform.

    Returns:
        int64 array of int8 values.
    """
    acc = np.asarray(acc, dtype=I64)
    mul = np.asarray(out_mul, dtype=I64)
    shift = np.asarray(out_shift, dtype=I64)
    if len(np.unique(shift)) == 1 and len(np.unique(mul)) == 1:
        mul, shift = mul.reshape(-1)[:1].reshape(()), shift.reshape(-1)[:1].reshape(())
    if not _full_accu(full_accu):
        mul = sat(asr_rnd(mul, 16, 32), 32)
        shift = shift - 16
        pre = np.clip(shift - (32 - 8 - 3), 0, 8)
        # Rounding add saturated at INT32_MAX: a clamp before the add gives the same 16-bit result.
        a = asr_rnd32(acc, pre)
        a = np.clip(a, -(1 << 15), (1 << 15) - 1)
        shift = np.minimum(shift - pre, 63)
    else:
        a = acc
        shift = np.minimum(shift, 63)
    # Non-FULL_ACCU: |a| <= 2**15, |mul| <= 2**15. FULL_ACCU: |a| <= 2**31, |mul| <= 2**30 (a product
    # of two int16). So |p| <= 2**61 and shift_round's add of at most 2**61 cannot overflow int64.
    p = a * mul
    if np.all((shift >= 0) & (shift <= 62)):
        r = shift_round(p, shift)
    else:
        r = asr_rnd(p, shift, 64)
    r = np.clip(r, -(1 << 15), (1 << 15) - 1)
    r = np.clip(r + int(out_zp), -(1 << 15), (1 << 15) - 1)
    return np.clip(r, -128, 127)


# -------------------------------------------------------------------------------------- ReLU
def _c_div(a: int, b: int) -> int:
    if b == 0:
        raise ZeroDivisionError("division by a zero scale")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


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
    lo_c, hi_c = limits(out_bits)
    zero, scale, shift = int(zero_point), int(scale), int(frac_bits)
    rt = int(relu_type)
    if rt == RELU_GEN:
        lo, hi = max(zero, lo_c), hi_c
    elif rt == RELU_6:
        if shift >= 0:
            six = _c_div(6 << shift, scale) if shift < 28 else hi_c
        else:
            six = _c_div(6 >> -shift, scale) if shift > -3 else 0
        six += zero
        lo, hi = max(zero, lo_c), min(six, hi_c)
    elif rt == RELU_1:
        one = (_c_div(1 << shift, scale) if shift < 30 else hi_c) if shift >= 0 else 0
        lo, hi = max(zero - one, lo_c), min(one + zero, hi_c)
    else:
        lo, hi = lo_c, hi_c
    # (int16_t) then (io_T) casts of the C code.
    lo, hi = int(wrap(wrap(lo, 16), out_bits)), int(wrap(wrap(hi, 16), out_bits))
    return lo, hi
