"""Arithmetic of MLI's tensor conversions (``helpers/src/impl/mli_hlp_convert_tensor_ref.h``).

Three families, each vectorised over NumPy arrays (per-axis parameters broadcast like values):

* requantisation between integer formats (FX / SA, any container): the 16-bit ratio of the input
  and output scales from ``define_requant_params`` (``bricks/impl/mli_prv_quant_ref.h``), then the
  element step of ``calc_convert`` with a 32-bit accumulator (8/16-bit containers) or the 64-bit
  normalised multiply (when an SA_32 container takes part);
* float32 -> integer (``convert_float_data`` in QUANTIZE mode: ``mli_math_float_scale``);
* integer -> float32 (DEQUANTIZE mode).

Float steps reproduce the single-precision operations of the x86 build (no FMA, float32
multiplies and adds, ``ldexp`` in double then rounded to float, truncating casts).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ..formats import RoundMode
from .rounding import add_sat, asl, asr_rnd, bit_length, norm, norm_cast, sat, sub_sat, trunc_div, wrap

__all__ = [
    "bit_length",
    "norm",
    "norm_cast",
    "requant_params",
    "requantize",
    "float_to_int32",
    "float_scale",
    "quant_multiplier",
    "dequant_multiplier",
    "quantize_float",
    "dequantize_float",
    "trunc_div",
    "round_half_away",
    "split_scale",
]

I64 = np.int64
F32 = np.float32


def requant_params(in_scale: npt.ArrayLike, in_frac: npt.ArrayLike, out_scale: npt.ArrayLike,
                   out_frac: npt.ArrayLike, mode: RoundMode | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``define_requant_params``: ``in_scale * 2^-in_frac / (out_scale * 2^-out_frac)`` as Q15-ish ``scale * 2^-shift``.

    Args:
        in_scale, out_scale: int scales (``mli_hlp_tensor_scale``: 1 for FX), any broadcastable shape.
        in_frac, out_frac: their fractional bits (``mli_hlp_tensor_scale_shift``).

    Returns:
        (scale, shift): int16 multiplier and int16 right shift.

    Raises:
        ZeroDivisionError: an output scale of 0 (the C library divides by it).
    """
    in_scale = wrap(in_scale, 32)
    out_scale16 = wrap(out_scale, 16)
    out_scale = wrap(out_scale, 32)
    if np.any(out_scale == 0):
        raise ZeroDivisionError("output scale of 0")
    pre = norm(in_scale, 32) - norm(out_scale16, 16)
    # (int32)in_scale << pre: pre >= 1 for positive 16-bit scales and never overflows int32.
    num = wrap(np.where(pre >= 0, in_scale << np.clip(pre, 0, 63), in_scale >> np.clip(-pre, 0, 63)), 32)
    ratio = wrap(trunc_div(num, out_scale), 32)
    scale, norm_shift = norm_cast(ratio, 32, 16, mode)
    shift = wrap(pre + np.asarray(in_frac, I64) - np.asarray(out_frac, I64) - norm_shift, 16)
    return scale, shift


def requantize(x: npt.ArrayLike, in_zp: npt.ArrayLike, scale: npt.ArrayLike, shift: npt.ArrayLike,
               out_zp: npt.ArrayLike, *, wide: bool, out_bits: int, mode: RoundMode | None = None) -> np.ndarray:
    """``calc_convert``: ``(x - in_zp) * scale * 2^-shift + out_zp`` saturated to ``out_bits``.

    Args:
        x: input container values, any shape.
        in_zp, scale, shift, out_zp: per-element (broadcastable) parameters; ``shift`` is the
            requantisation shift of :func:`requant_params`.
        wide: the 64-bit accumulator path (an SA_32 container on either side); otherwise the
            32-bit one (int8/int16 containers).
        out_bits: output container bits (8, 16 or 32).
        mode: rounding mode (default: the current platform's).

    Returns:
        int64 array of output container values, the broadcast shape.
    """
    x = np.asarray(x, dtype=I64)
    shift = np.asarray(shift, dtype=I64)
    if not wide:
        # int16 difference (saturated), int16 x int16 -> int32 product, rounding shift in int32.
        d = sub_sat(x, in_zp, 16)
        acc = d * np.asarray(scale, I64)
        acc = asr_rnd(acc, np.minimum(shift, 31), 32, mode)
        return sat(add_sat(acc, out_zp, 32), out_bits)
    # 64-bit path: normalise both operands to Q31, keep the high word of the product.
    d = sub_sat(x, in_zp, 32)
    d_norm = norm(d, 32)
    d = asl(d, d_norm, 32)
    scale = np.asarray(scale, I64)
    s_norm = norm(scale, 32)
    s32 = asl(scale, s_norm, 32)
    hi = (d * s32) >> 32  # |d * s32| < 2**62: exact in int64
    total = np.minimum(shift, 63) + s_norm + d_norm - 32
    acc = asr_rnd(hi, total, 32, mode)
    val = add_sat(acc, out_zp, 32)
    return val if out_bits >= 32 else sat(val, out_bits)


def float_to_int32(v: npt.ArrayLike) -> np.ndarray:
    """A C cast ``(int32_t)`` of float values on x86: truncation; NaN and out-of-range give INT32_MIN.

    Args:
        v: float values, any shape.

    Returns:
        int64 array of int32 values, shape of ``v``.
    """
    v = np.asarray(v, dtype=np.float64)
    ok = np.isfinite(v) & (v > -(2.0**31) - 1.0) & (v < 2.0**31)
    t = np.trunc(np.where(ok, v, 0.0)).astype(I64)
    return np.where(ok, t, I64(-(2**31)))


def float_scale(value: npt.ArrayLike, scale: npt.ArrayLike) -> np.ndarray:
    """``mli_math_float_scale``: ``(int32_t)(value * scale +/- 0.5f)`` in single precision.

    Args:
        value: float values, any shape (taken as float32).
        scale: float32 multiplier(s) broadcasting against ``value``.

    Returns:
        int64 array of int32 values (:func:`float_to_int32` of the float32 result).
    """
    value = np.asarray(value, dtype=F32)
    with np.errstate(over="ignore", invalid="ignore"):
        prod = value * np.asarray(scale, dtype=F32)
        rnd = np.where(value > 0, F32(0.5), F32(-0.5)).astype(F32)
        return float_to_int32((prod + rnd).astype(F32))


def quant_multiplier(scale: npt.ArrayLike, frac_bits: npt.ArrayLike) -> np.ndarray:
    """``(float)ldexp(1.0f / scale, frac_bits)``: the float32 factor that quantises a float value.

    Args:
        scale: int scale(s) (``mli_hlp_tensor_scale``), any shape.
        frac_bits: fractional bits, broadcasting against ``scale`` (taken as int8).

    Returns:
        float32 array of multipliers (inf for a scale of 0).
    """
    with np.errstate(divide="ignore", over="ignore"):
        inv = F32(1.0) / np.asarray(scale, dtype=F32)
        return np.ldexp(inv.astype(np.float64), wrap(frac_bits, 8)).astype(F32)


def dequant_multiplier(scale: npt.ArrayLike, frac_bits: npt.ArrayLike) -> np.ndarray:
    """``(float)ldexp((float)scale, -frac_bits)``: the float32 factor that dequantises a value.

    Args:
        scale: int scale(s), any shape.
        frac_bits: fractional bits, broadcasting against ``scale`` (taken as int8).

    Returns:
        float32 array of multipliers.
    """
    with np.errstate(over="ignore"):
        return np.ldexp(np.asarray(scale, dtype=F32).astype(np.float64), -wrap(frac_bits, 8)).astype(F32)


def quantize_float(value: npt.ArrayLike, scale: npt.ArrayLike, frac_bits: npt.ArrayLike,
                   zero_point: npt.ArrayLike, out_bits: int) -> np.ndarray:
    """float32 -> integer of ``out_bits`` bits as ``convert_float_data`` (QUANTIZE) does.

    Args:
        value: float values, any shape.
        scale, frac_bits, zero_point: output parameters, broadcasting against ``value``.
        out_bits: output container bits (8, 16 or 32).

    Returns:
        int64 array of container values, the broadcast shape.
    """
    q = float_scale(value, quant_multiplier(scale, frac_bits))
    q = add_sat(q, zero_point, 32)
    return q if out_bits >= 32 else sat(q, out_bits)


def dequantize_float(x: npt.ArrayLike, scale: npt.ArrayLike, frac_bits: npt.ArrayLike,
                     zero_point: npt.ArrayLike) -> np.ndarray:
    """integer -> float32 as ``convert_float_data`` (DEQUANTIZE) does: ``float(x - zp) * multiplier``.

    Args:
        x: int container values, any shape.
        scale, frac_bits, zero_point: input parameters, broadcasting against ``x``.

    Returns:
        float32 array, the broadcast shape.
    """
    d = sub_sat(x, zero_point, 32).astype(F32)
    with np.errstate(over="ignore", under="ignore"):
        return (d * dequant_multiplier(scale, frac_bits)).astype(F32)


def round_half_away(x: npt.ArrayLike) -> np.ndarray:
    """Round float values to the nearest integer, ties away from zero (parameter choice, not MLI arithmetic).

    Args:
        x: float values, any shape.

    Returns:
        int64 array, shape of ``x``.
    """
    x = np.asarray(x, dtype=np.float64)
    return (np.sign(x) * np.floor(np.abs(x) + 0.5)).astype(I64)


def split_scale(real: npt.ArrayLike, bits: int = 16, round_up: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """A positive real scale as ``scale * 2^-frac_bits`` with a normalised ``bits``-bit ``scale``.

    ``frexp`` gives ``real = m * 2^e`` (``0.5 <= m < 1``); ``scale = round(m * 2^(bits-1))`` and
    ``frac_bits = bits - 1 - e`` (one bit less when the rounding reaches ``2^(bits-1)``). The
    rounding is to nearest with ties away from zero (exact: ``m * 2^(bits-1)`` is computed without
    error), or upwards with ``round_up`` (the represented scale is then never below ``real``). The
    relative error is at most ``2^-(bits-1)``. Used by every offline float -> MLI scale conversion
    (quantisers, network and TFLite import).

    Args:
        real: positive float scale(s), any shape.
        bits: bits of the integer scale (16 for MLI's int16 scales).
        round_up: round the mantissa up instead of to nearest.

    Returns:
        (scale, frac_bits): int64 arrays of the shape of ``real``.
    """
    m, e = np.frexp(np.asarray(real, dtype=np.float64))
    mant = np.ldexp(m, bits - 1)
    s = np.ceil(mant).astype(I64) if round_up else round_half_away(mant)
    frac = (bits - 1) - e.astype(I64)
    top = s >= (1 << (bits - 1))
    s = np.where(top, s >> 1, s)
    frac = np.where(top, frac - 1, frac)
    return s, frac
