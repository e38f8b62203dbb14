"""TFLM reference HARD_SWISH (int8), SQUARED_DIFFERENCE (int8 / int16), RSQRT (int8 / int16) and
DIV (int8): the integer kernels with their own fixed-point tricks."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ..errors import MliError, Status
from . import fixedpoint as fp
from . import quant_util as qu
from .common import require_int8
from .quant_util import downscale_int32_to_int16_multiplier, quantize_multiplier

__all__ = ["hard_swish_params", "hard_swish", "squared_difference_params", "squared_difference",
           "rsqrt_params", "inv_sqrt_multiplier_exp", "rsqrt", "div_params", "div",
           "count_leading_sign_bits", "reciprocal", "prelu_params", "prelu", "comparison_params",
           "compare", "lut_populate_int8", "elu_int8", "l2_normalization_int8"]

I64 = npt.NDArray[np.int64]
f32 = np.float32


def hard_swish_params(input_scale: float, output_scale: float) -> tuple[int, int, int, int]:
    """TFLM HARD_SWISH Prepare (float32 ratios, int16 multipliers).

    Args:
        input_scale: input scale. output_scale: output scale.

    Returns:
        ``(output_multiplier_int16, output_exponent, reluish_multiplier_int16, reluish_exponent)``.
    """
    hires = f32(f32(1.0 / 128.0) * f32(input_scale))
    om, oe = quantize_multiplier(float(f32(hires / f32(output_scale))))
    rm, re_ = quantize_multiplier(float(f32(hires / f32(3.0 / 32768.0))))
    return (downscale_int32_to_int16_multiplier(om), oe, downscale_int32_to_int16_multiplier(rm), re_)


def _sat_lshift16(v: I64, amount: int) -> I64:
    return np.clip(v * (1 << amount), -32768, 32767)


def hard_swish(x: np.ndarray, *, input_zp: int, output_zp: int, output_multiplier: int,
               output_exponent: int, reluish_multiplier: int, reluish_exponent: int) -> np.ndarray:
    """TFLM ``reference_ops::HardSwish`` (quantised): ``x * relu6(x + 3) / 6`` in int16 fixed point.

    Args:
        x: int8 input.
        input_zp: input zero point. output_zp: output zero point.
        output_multiplier: :func:`hard_swish_params`. output_exponent: its exponent.
        reluish_multiplier: :func:`hard_swish_params`. reluish_exponent: its exponent.

    Returns:
        int8 array.
    """
    iv = qu.wrap(x.astype(np.int64) - input_zp, 16)
    hires = qu.wrap(iv * 128, 16)
    pre = qu.srdhm(hires, output_multiplier, bits=16)
    r = hires
    if reluish_exponent > 0:
        r = _sat_lshift16(r, reluish_exponent - 1)
    r = qu.srdhm(r, reluish_multiplier, bits=16)
    if reluish_exponent > 0:
        r = _sat_lshift16(r, 1)
    if reluish_exponent < 0:
        r = qu.rounding_divide_by_pot(r, -reluish_exponent)
    r = (r + (1 << 15)) >> 1
    prod = r * pre  # SaturatingDoublingHighMul without rounding: C division by 2**15
    ps = np.where(prod >= 0, prod >> 15, -((-prod) >> 15))
    ps = np.where((r == -32768) & (pre == -32768), 32767, qu.wrap(ps, 16))
    out = qu.wrap(qu.rounding_divide_by_pot(ps, -output_exponent) + output_zp, 16)
    lo, hi = np.iinfo(x.dtype).min, np.iinfo(x.dtype).max
    return np.clip(out, lo, hi).astype(x.dtype)


def squared_difference_params(s1: float, zp1: int, s2: float, zp2: int, so: float, zpo: int,
                              *, int16: bool) -> dict:
    """TFLM SQUARED_DIFFERENCE ``PrepareQuantized`` (left shift 7 for int8, 0 for int16).

    Args:
        s1: input 1 scale. zp1: zero point. s2: input 2 scale. zp2: zero point.
        so: output scale. zpo: output zero point.
        int16: int16 tensors.

    Returns:
        dict of the ArithmeticParams fields.
    """
    ls = 0 if int16 else 7
    twice = 2.0 * float(max(f32(s1), f32(s2)))
    m1, sh1 = quantize_multiplier(float(f32(s1)) / twice)
    m2, sh2 = quantize_multiplier(float(f32(s2)) / twice)
    den = float(f32(f32(1 << (ls * 2)) * f32(so)))
    mo, sho = quantize_multiplier(twice * twice / den)
    return dict(input1_offset=-int(zp1), input2_offset=-int(zp2), output_offset=int(zpo),
                left_shift=ls, input1_multiplier=m1, input1_shift=sh1, input2_multiplier=m2,
                input2_shift=sh2, output_multiplier=mo, output_shift=sho)


def squared_difference(x1: np.ndarray, x2: np.ndarray, p: dict) -> np.ndarray:
    """TFLM quantised SQUARED_DIFFERENCE (broadcasting).

    Args:
        x1: int8 / int16 input. x2: same dtype, broadcastable.
        p: :func:`squared_difference_params`.

    Returns:
        array of the inputs' dtype.
    """
    a = qu.wrap((x1.astype(np.int64) + p["input1_offset"]) << p["left_shift"], 32)
    b = qu.wrap((x2.astype(np.int64) + p["input2_offset"]) << p["left_shift"], 32)
    a = qu.multiply_by_quantized_multiplier_smaller_than_one_exp(a, p["input1_multiplier"],
                                                                  p["input1_shift"])
    b = qu.multiply_by_quantized_multiplier_smaller_than_one_exp(b, p["input2_multiplier"],
                                                                  p["input2_shift"])
    d = qu.wrap(a - b, 32)
    sq = qu.wrap(d * d, 32)
    out = qu.multiply_by_quantized_multiplier(sq, p["output_multiplier"], p["output_shift"]) \
        + p["output_offset"]
    lo, hi = np.iinfo(x1.dtype).min, np.iinfo(x1.dtype).max
    return np.clip(out, lo, hi).astype(x1.dtype)


def count_leading_sign_bits(v: npt.ArrayLike) -> I64:
    """``__builtin_clrsb`` of int32 values (31 for 0 and -1)."""
    v = np.asarray(v, np.int64)
    return fp.clz32(np.where(v < 0, ~v, v)) - 1


def reciprocal(x: npt.ArrayLike, x_integer_digits: int) -> tuple[I64, I64]:
    """TFLM ``GetReciprocal``: ``(Q0.31 1/x scaled, num_bits_over_unit)`` for positive int32 ``x``."""
    x = np.asarray(x, np.int64)
    hp1 = fp.clz32(x)
    nbou = x_integer_digits - hp1
    shifted = qu.wrap(((x << hp1) & 0xFFFFFFFF) - (1 << 31), 32)
    return fp.one_over_one_plus_x_for_x_in_0_1(shifted), nbou


def rsqrt_params(input_scale: float, output_scale: float) -> tuple[int, int]:
    """TFLM RSQRT Prepare: ``QuantizeMultiplier(1 / double(sqrtf(si) * so))`` (float32 product)."""
    return quantize_multiplier(1.0 / float(f32(np.sqrt(f32(input_scale)) * f32(output_scale))))


def inv_sqrt_multiplier_exp(v: npt.ArrayLike, reverse_shift: int = -1) -> tuple[I64, I64]:
    """TFLM ``GetInvSqrtQuantizedMultiplierExp`` (Newton-Raphson in Q3.28), vectorised.

    Args:
        v: non-negative int32 values.
        reverse_shift: -1 (``kReverseShift``).

    Returns:
        ``(multiplier, shift)`` int64 arrays.
    """
    v = np.asarray(v, np.int64)
    small = v <= 1
    inp = np.where(small, 2, v)
    shift = np.full(v.shape, 11, np.int64)
    for _ in range(2):  # int32 input: at most two divisions by 4 bring it below 2**29
        big = inp >= (1 << 29)
        inp = np.where(big, inp // 4, inp)
        shift = shift + big
    pairs = (fp.clz32(inp) - 1) // 2 - 1
    shift = shift - pairs
    inp = inp << (2 * pairs)
    fi = inp >> 1
    half = qu.rounding_divide_by_pot(fi, 1)
    x = np.full(v.shape, 1 << 28, np.int64)
    half_three = (1 << 28) + (1 << 27)
    for _ in range(5):
        x3 = fp.rescale(fp.mul(fp.mul(x, x), x), 9, 3)
        x = fp.rescale(fp.sub(fp.mul(half_three, x), fp.mul(half, x3)), 6, 3)
    x = fp.mul(x, 1518500250)
    neg = shift < 0
    x = np.where(neg, qu.wrap(x << np.where(neg, -shift, 0), 32), x)
    shift = np.where(neg, 0, shift) * reverse_shift
    return np.where(small, 2**31 - 1, x), np.where(small, 0, shift)


def rsqrt(x: np.ndarray, *, input_zp: int, output_zp: int, multiplier: int, shift: int) -> np.ndarray:
    """TFLM quantised RSQRT (int8 / int16).

    Args:
        x: input; values below the zero point are rejected (as TFLM's Eval does).
        input_zp: input zero point. output_zp: output zero point.
        multiplier: :func:`rsqrt_params`. shift: its shift.

    Returns:
        array of ``x``'s dtype.

    Raises:
        MliError: a negative (real) input.
    """
    v = x.astype(np.int64) - input_zp
    if (v < 0).any():
        raise MliError(Status.ARGUMENT_ERROR, "RSQRT is only defined for positive values")
    im, ish = inv_sqrt_multiplier_exp(v)
    data = qu.multiply_by_quantized_multiplier(np.ones_like(v), im, ish + 20)
    out = qu.multiply_by_quantized_multiplier(data, multiplier, shift - 20) + output_zp
    lo, hi = np.iinfo(x.dtype).min, np.iinfo(x.dtype).max
    return np.where(v == 0, hi, np.clip(out, lo, hi)).astype(x.dtype)


def div_params(s1: float, s2: float, so: float) -> tuple[int, int]:
    """TFLM DIV Prepare: ``QuantizeMultiplier(double(s1 / (s2 * so)))`` in float32."""
    return quantize_multiplier(float(f32(f32(s1) / f32(f32(s2) * f32(so)))))


def div(x1: np.ndarray, x2: np.ndarray, *, zp1: int, zp2: int, zpo: int, multiplier: int, shift: int,
        act_min: int, act_max: int) -> np.ndarray:
    """TFLM ``reference_ops::Div`` for int8 (reciprocal of the divisor, broadcasting).

    Args:
        x1: int8 dividend. x2: int8 divisor (never at its zero point), broadcastable.
        zp1: zero point 1. zp2: zero point 2. zpo: output zero point.
        multiplier: :func:`div_params`. shift: its shift.
        act_min: clamp low. act_max: clamp high.

    Returns:
        int8 array.

    Raises:
        MliError: a divisor equal to its zero point.
    """
    a, b = np.broadcast_arrays(x1.astype(np.int64) - zp1, x2.astype(np.int64) - zp2)
    if (b == 0).any():
        raise MliError(Status.ARGUMENT_ERROR, "DIV by zero")
    a = np.where(b < 0, -a, a)
    b = np.abs(b)
    inv, rs = reciprocal(b, 31)
    head = count_leading_sign_bits(a)
    uq = qu.multiply_by_quantized_multiplier_greater_than_one(a, inv, head)
    total = shift - rs - head
    out = qu.multiply_by_quantized_multiplier_smaller_than_one_exp(uq, multiplier, total) + zpo
    return np.clip(out, act_min, act_max).astype(x1.dtype)


def prelu_params(si: float, sa: float, so: float) -> tuple[int, int, int, int]:
    """TFLM PRELU Prepare: ``si / so`` and ``si * sa / so`` in double.

    Returns:
        ``(multiplier_1, shift_1, multiplier_2, shift_2)``.
    """
    m1, s1 = quantize_multiplier(float(f32(si)) / float(f32(so)))
    m2, s2 = quantize_multiplier(float(f32(si)) * float(f32(sa)) / float(f32(so)))
    return m1, s1, m2, s2


def prelu(x: np.ndarray, alpha: np.ndarray, *, input_zp: int, alpha_zp: int, output_zp: int,
          m1: int, s1: int, m2: int, s2: int) -> np.ndarray:
    """TFLM ``reference_ops::BroadcastPrelu4DSlow`` (int8 / int16), broadcasting ``alpha``.

    Args:
        x: input. alpha: slopes (same dtype), broadcastable.
        input_zp: input zero point. alpha_zp: alpha zero point. output_zp: output zero point.
        m1: positive-side multiplier. s1: its shift. m2: negative-side multiplier. s2: its shift.

    Returns:
        array of ``x``'s dtype.
    """
    v, a = np.broadcast_arrays(x.astype(np.int64) - input_zp, alpha.astype(np.int64) - alpha_zp)
    pos = qu.multiply_by_quantized_multiplier(v, m1, s1)
    neg = qu.multiply_by_quantized_multiplier(qu.wrap(v * a, 32), m2, s2)
    out = np.where(v >= 0, pos, neg) + output_zp
    info = np.iinfo(x.dtype)
    return np.clip(out, info.min, info.max).astype(x.dtype)


def comparison_params(s1: float, zp1: int, s2: float, zp2: int) -> dict:
    """TFLM int8 comparison Prepare: each input rescaled by its own scale (left shift 8)."""
    m1, sh1 = quantize_multiplier(float(f32(s1)))
    m2, sh2 = quantize_multiplier(float(f32(s2)))
    return dict(left_shift=8, input1_offset=-int(zp1), input1_multiplier=m1, input1_shift=sh1,
                input2_offset=-int(zp2), input2_multiplier=m2, input2_shift=sh2)


def compare(x1: np.ndarray, x2: np.ndarray, op: str, p: dict | None = None) -> np.ndarray:
    """TFLM EQUAL / NOT_EQUAL / LESS / LESS_EQUAL / GREATER / GREATER_EQUAL (broadcasting).

    Args:
        x1: input. x2: input of the same dtype, broadcastable.
        op: the builtin name.
        p: :func:`comparison_params` for int8 (the values are compared after rescaling); None
            compares raw values (int32, bool, ...).

    Returns:
        bool array.
    """
    a = x1.astype(np.int64)
    b = x2.astype(np.int64)
    if p is not None:
        a = qu.multiply_by_quantized_multiplier_smaller_than_one_exp(
            qu.wrap((a + p["input1_offset"]) << p["left_shift"], 32), p["input1_multiplier"],
            p["input1_shift"])
        b = qu.multiply_by_quantized_multiplier_smaller_than_one_exp(
            qu.wrap((b + p["input2_offset"]) << p["left_shift"], 32), p["input2_multiplier"],
            p["input2_shift"])
    f = {"EQUAL": np.equal, "NOT_EQUAL": np.not_equal, "LESS": np.less, "LESS_EQUAL": np.less_equal,
         "GREATER": np.greater, "GREATER_EQUAL": np.greater_equal}[op]
    return f(a, b)


def lut_populate_int8(transform, input_scale: float, input_zp: int, output_scale: float,
                      output_zp: int) -> np.ndarray:  # noqa: ANN001 - float32 -> float32 callable
    """TFLM's int8 table of a float function (ELU's ``PopulateLookupTable``), in float32.

    Returns:
        int64 array of 256 entries indexed by ``value + 128``.
    """
    v = np.arange(-128, 128, dtype=np.int64)
    deq = (f32(input_scale) * (v - input_zp).astype(f32)).astype(f32)
    t = transform(deq)
    inv = f32(f32(1) / f32(output_scale))
    y = (t * inv).astype(f32)
    r = np.sign(y) * np.floor(np.abs(y).astype(np.float64) + 0.5)
    q = r.astype(np.int64) + output_zp
    return np.clip(q, -128, 127)


def _elu(x: np.ndarray) -> np.ndarray:
    e = (np.exp(x.astype(np.float64)).astype(f32) - f32(1)).astype(f32)  # std::exp(float) - 1.0f
    return np.where(x < 0, e, x).astype(f32)


def elu_int8(x: np.ndarray, *, input_scale: float, input_zp: int, output_scale: float,
             output_zp: int) -> np.ndarray:
    """TFLM ELU int8: a 256-entry table of ``exp(x) - 1`` (negative side) / ``x``.

    Returns:
        int8 array.
    """
    lut = lut_populate_int8(_elu, input_scale, input_zp, output_scale, output_zp)
    return lut[x.astype(np.int64) + 128].astype(np.int8)


def l2_normalization_int8(x: np.ndarray, *, input_zp: int) -> np.ndarray:
    """TFLM ``reference_integer_ops::L2Normalization`` over the last axis (output scale 1/128, zero
    point 0): the int32 sum of squares of ``x - zp`` to an inverse square root multiplier
    (:func:`inv_sqrt_multiplier_exp`), applied with 7 more bits of left shift, clamped to int8.

    Args:
        x: int8 input.
        input_zp: input zero point.

    Returns:
        int8 array of ``x``'s shape.

    Raises:
        MliError: input not int8.
    """
    require_int8(x, "l2_normalization_int8")
    v = x.astype(np.int64) - input_zp
    acc = (v * v).sum(axis=-1, keepdims=True)  # <= 255**2 * depth: int32 for depth < 2**15
    m, s = inv_sqrt_multiplier_exp(acc)
    out = qu.multiply_by_quantized_multiplier(v, m, s + 7)
    return np.clip(out, -128, 127).astype(np.int8)
