"""TFLM reference SOFTMAX (int8 -> int8 / int16), LOGISTIC (int8), LEAKY_RELU (int8 / int16)."""

from __future__ import annotations

import functools
import math
from typing import Callable

import numpy as np

from ..kernels import _jit
from . import fixedpoint as fp
from . import quant_util as qu
from .common import require_int8, tflite_round
from .lstm import checked_log2, sigmoid_int16, tanh_int16
from .quant_util import quantize_multiplier

__all__ = ["softmax_params", "softmax_int8", "logistic_int8_params", "logistic_int8",
           "tanh_int8", "int16_activation_params", "logistic_int16", "tanh_int16",
           "lut_populate_int16", "lut_lookup_int16", "softmax_int16_params", "softmax_int16",
           "leaky_relu_params", "leaky_relu", "calculate_input_radius", "log_softmax_params",
           "log_softmax_int8", "prepare_softmax_int8"]


def calculate_input_radius(input_integer_bits: int, input_left_shift: int,
                           total_signed_bits: int = 31) -> int:
    """TFLM ``CalculateInputRadius`` (double arithmetic, floor)."""
    v = 1.0 * ((1 << input_integer_bits) - 1) * float(1 << (total_signed_bits - input_integer_bits)) \
        / float(1 << input_left_shift)
    return int(math.floor(v))


def softmax_params(beta: float, input_scale: float) -> tuple[int, int, int]:
    """TFLM int8 SOFTMAX Prepare (``PreprocessSoftmaxScaling``, 5 integer bits).

    Args:
        beta: the op's beta (float32 value).
        input_scale: input scale (float32 value).

    Returns:
        ``(input_multiplier, input_left_shift, diff_min)``.
    """
    real = min(float(np.float32(beta)) * float(np.float32(input_scale)) * float(1 << 26),
               float((1 << 31) - 1))
    m, ls = quantize_multiplier(real)
    diff_min = -calculate_input_radius(5, ls)
    return m, ls, diff_min


def softmax_int8(x: np.ndarray, *, input_multiplier: int, input_left_shift: int, diff_min: int,
                 out_dtype: np.dtype | type = np.int8) -> np.ndarray:
    """TFLM ``reference_ops::Softmax`` for int8 input (gemmlowp exp, 12-bit accumulation), over the
    last axis; output int8 (zero point -128, scale 1/256) or int16 (-32768, 1/65536).

    Args:
        x: int8 input, softmax over the last axis.
        input_multiplier: :func:`softmax_params`.
        input_left_shift: :func:`softmax_params`.
        diff_min: :func:`softmax_params`.
        out_dtype: int8 or int16.

    Returns:
        array of ``out_dtype``, ``x``'s shape.

    Raises:
        MliError: input not int8.
    """
    require_int8(x, "softmax_int8")
    od = np.dtype(out_dtype)
    if x.ndim and x.size == x.shape[-1] > 256:  # one wide row (a classifier's output): Python scalars
        return _softmax_int8_row(x, int(input_multiplier), int(input_left_shift), int(diff_min), od)
    xi = x.astype(np.int64)
    neg = xi.max(axis=-1, keepdims=True) - xi  # -diff, in [0, 255]
    e_table, e12_table = _softmax_exp_tables(int(input_multiplier), int(input_left_shift), int(diff_min))
    sum_exps = qu.wrap(e12_table[neg].sum(axis=-1, keepdims=True), 32)
    # GetReciprocal(sum, 12 integer bits)
    if sum_exps.size <= _SCALAR_ROWS:  # per row in Python ints: NumPy calls on a few values cost more
        pairs = [_reciprocal(v) for v in sum_exps.reshape(-1).tolist()]
        scale = np.array([p[0] for p in pairs], np.int64).reshape(sum_exps.shape)
        nbou = np.array([p[1] for p in pairs], np.int64).reshape(sum_exps.shape)
    else:
        s = sum_exps.astype(np.uint64) & np.uint64(0xFFFFFFFF)
        # bit length of a uint32: frexp's exponent (every uint32 is exact in float64; 0 -> 0)
        headroom = 32 - np.frexp(s.astype(np.float64))[1].astype(np.int64)
        nbou = 12 - headroom
        shifted = qu.wrap(((s.astype(np.int64) << headroom) & 0xFFFFFFFF) - (1 << 31), 32)
        scale = fp.one_over_one_plus_x_for_x_in_0_1(shifted)
    exponent = nbou + 31 - od.itemsize * 8
    lo, hi = int(np.iinfo(od).min), int(np.iinfo(od).max)
    if neg.shape[-1] > 256:
        # an output depends on its row's scale and on -diff only: each row's 256 possible outputs,
        # then one gather (the same values as element by element). The operands are non-negative
        # (scale: a Q0.31 reciprocal in (0, 1]; e: Q0.31 exponentials in [0, 1)) and the exponent is
        # >= 8 (a row's sum of Q12 exponentials holds its maximum's exp(0) = 4096, so at most 19 bits
        # of headroom): SaturatingRoundingDoublingHighMul is (a * b + 2**30) >> 31 without its
        # saturation case, RoundingDivideByPOT (x + 2**(e-1)) >> e, and only the upper clip can bind.
        prod = (scale * e_table + (1 << 30)) >> 31
        unsat = (prod + (np.int64(1) << (exponent - 1))) >> exponent
        table = np.where(_softmax_valid(int(diff_min)), np.minimum(unsat + lo, hi), lo).astype(od)
        if table.shape[0] == 1 and table.ndim == 2:  # one row: a flat gather
            return np.take(table[0], neg)
        return np.take_along_axis(table, neg, axis=-1)
    unsat = qu.rounding_divide_by_pot(fp.mul(scale, e_table[neg]), exponent)  # e: Q0.31
    out = np.clip(unsat + lo, lo, hi)
    return np.where(neg <= -diff_min, out, lo).astype(od)


def _softmax_int8_row(x: np.ndarray, input_multiplier: int, input_left_shift: int, diff_min: int,
                      od: np.dtype) -> np.ndarray:
    """:func:`softmax_int8` of one row wider than 256 values: the row's table of its 256 possible outputs
    (over ``-diff``), then one gather, with the row's sum, reciprocal and exponent as Python ints.

    The same values as the table of :func:`softmax_int8`'s wide rows: ``min(((scale * e + 2**30) >> 31
    + 2**(k-1) + lo * 2**k) >> k, hi)`` is ``min(RoundingDivideByPOT(prod, k) + lo, hi)`` (adding a
    multiple of ``2**k`` before an arithmetic shift adds ``lo`` after it), and below ``diff_min`` the
    exponential table holds 0 there (:func:`_softmax_exp_tables_masked`): ``prod = 0``, and
    ``(2**(k-1) + lo * 2**k) >> k = lo``, the minimum output, as the element-wise form sets it
    (``k >= 8``, see :func:`softmax_int8`). With the JIT, both passes are compiled
    (:mod:`pymli.kernels._jit_lut`: the same int64 arithmetic, every value below 2**62).
    """
    e_masked, e12_table = _softmax_exp_tables_masked(input_multiplier, input_left_shift, diff_min)
    lo, hi = int(np.iinfo(od).min), int(np.iinfo(od).max)
    lut = _jit.compiled("_jit_lut")
    if lut is not None:  # the same two passes compiled (the row's maximum and sum; its table and gather)
        row = x.reshape(-1)
        mx, total = lut.softmax_row_sum(row, e12_table)
        scale, nbou = _reciprocal(int(total))
        out = np.empty(x.shape, od)
        lut.softmax_row_apply(row, mx, e_masked, scale, nbou + 31 - od.itemsize * 8, lo, hi, out.reshape(-1))
        return out
    neg = np.subtract(int(x.max()), x, dtype=np.int16)  # -diff, in [0, 255]
    scale, nbou = _reciprocal(int(np.take(e12_table, neg).sum()))
    k = nbou + 31 - od.itemsize * 8
    t = np.multiply(e_masked, scale)  # scale < 2**31, e < 2**31: below 2**62
    t += 1 << 30
    t >>= 31
    t += (1 << (k - 1)) + (lo << k)
    t >>= k
    return np.take(np.minimum(t, hi, out=np.empty(256, od), casting="unsafe"), neg)


@functools.lru_cache(maxsize=64)
def _softmax_exp_tables_masked(input_multiplier: int, input_left_shift: int, diff_min: int
                               ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_softmax_exp_tables` with the Q0.31 exponentials below ``diff_min`` set to 0."""
    e, e12 = _softmax_exp_tables(input_multiplier, input_left_shift, diff_min)
    em = np.where(_softmax_valid(diff_min), e, 0)
    em.flags.writeable = False
    return em, e12


_SCALAR_ROWS = 32
"""Softmax calls of up to this many rows compute each row's reciprocal in Python ints."""


def _reciprocal(sum_exps: int) -> tuple[int, int]:
    """``GetReciprocal(sum_exps, 12 integer bits)`` of one row's wrapped int32 sum, in Python ints:
    (the Q0.31 reciprocal of the normalised sum, the number of integer bits of the sum)."""
    s = sum_exps & 0xFFFFFFFF
    headroom = 32 - s.bit_length()
    shifted = ((s << headroom) & 0xFFFFFFFF) - (1 << 31)  # in the int32 range: no wrap needed
    return fp.one_over_one_plus_x_for_x_in_0_1_int(shifted), 12 - headroom


SMALL_SOFTMAX = 64
"""Prepared int8 softmax calls of up to this many values compute in Python ints (:func:`prepare_softmax_int8`)."""


@functools.lru_cache(maxsize=4096)
def _reciprocal_cached(sum_exps: int) -> tuple[int, int]:
    """:func:`_reciprocal`, remembered: small rows' sums repeat from run to run."""
    return _reciprocal(sum_exps)


def prepare_softmax_int8(input_multiplier: int, input_left_shift: int, diff_min: int,
                         out_dtype: np.dtype | type = np.int8) -> Callable[[np.ndarray], np.ndarray]:
    """:func:`softmax_int8` with its parameters bound and its tables derived once; an input of up to
    :data:`SMALL_SOFTMAX` values (a classifier's few scores) is computed in Python ints, where NumPy calls
    on a few values cost more than the arithmetic.

    The small path is the row formula of :func:`_softmax_int8_row` (the same values as element by element):
    per row, ``-diff = max - x`` indexes the Q12 exponential table for the sum and the masked Q0.31 table
    for ``min(((scale * e + 2**30) >> 31 + 2**(k-1) + lo * 2**k) >> k, hi)``.

    Args:
        input_multiplier: :func:`softmax_params`. input_left_shift: its shift. diff_min: its minimum difference.
        out_dtype: int8 or int16.

    Returns:
        ``softmax(x) -> array`` of ``out_dtype`` in ``x``'s shape, over the last axis.
    """
    m, ls, dmin = int(input_multiplier), int(input_left_shift), int(diff_min)
    od = np.dtype(out_dtype)
    e_masked, e12 = _softmax_exp_tables_masked(m, ls, dmin)
    em, e12l = e_masked.tolist(), e12.tolist()
    lo, hi = int(np.iinfo(od).min), int(np.iinfo(od).max)
    bits = od.itemsize * 8

    i8, recip = np.dtype(np.int8), _reciprocal_cached

    def softmax(x: np.ndarray) -> np.ndarray:
        if x.dtype != i8 or x.size > SMALL_SOFTMAX or not x.ndim or not x.shape[-1]:
            return softmax_int8(x, input_multiplier=m, input_left_shift=ls, diff_min=dmin, out_dtype=od)
        rows = x.tolist() if x.ndim == 2 else x.reshape(-1, x.shape[-1]).tolist()
        out = []
        for row in rows:
            mx = max(row)
            negs = [mx - v for v in row]
            scale, nbou = recip(sum([e12l[n] for n in negs]))
            k = nbou + 31 - bits
            add = (1 << (k - 1)) + (lo << k)
            out.append([min((((scale * em[n] + (1 << 30)) >> 31) + add) >> k, hi) for n in negs])
        y = np.array(out, od)  # (rows, n)
        return y if x.ndim == 2 else y.reshape(x.shape)
    return softmax


@functools.lru_cache(maxsize=64)
def _softmax_valid(diff_min: int) -> np.ndarray:
    """Over ``-diff`` (0..255): the differences at or above ``diff_min`` (the others output the minimum)."""
    v = -np.arange(256) >= diff_min
    v.flags.writeable = False
    return v


@functools.lru_cache(maxsize=64)
def _softmax_exp_tables(input_multiplier: int, input_left_shift: int, diff_min: int) -> tuple[np.ndarray, np.ndarray]:
    """The int8 softmax's per-element exponentials as tables over ``-diff`` (0..255): ``exp`` of the
    rescaled difference (Q0.31) and its Q12 term of the sum (0 below ``diff_min``), computed with the
    same fixed-point functions as element by element."""
    diff = -np.arange(256, dtype=np.int64)
    resc = qu.multiply_by_quantized_multiplier_greater_than_one(diff, input_multiplier, input_left_shift)
    e = fp.exp_on_negative_values(resc, 5)
    e12 = np.where(diff >= diff_min, fp.rescale(e, 0, 12), 0)
    e.flags.writeable = False
    e12.flags.writeable = False
    return e, e12


def logistic_int8_params(input_scale: float) -> tuple[int, int, int]:
    """TFLM int8 LOGISTIC Prepare: ``frexp(s * 2**27)`` rounded to a Q0.31 multiplier.

    Args:
        input_scale: input scale (float32 value).

    Returns:
        ``(input_multiplier, input_left_shift, input_range_radius)``.
    """
    real = float(np.float32(input_scale)) * float(1 << 27)
    q, ls = math.frexp(real)
    m = tflite_round(q * float(1 << 31))
    return m, ls, calculate_input_radius(4, ls, 31)


def logistic_int8(x: np.ndarray, *, input_zp: int, input_multiplier: int, input_left_shift: int,
                  input_range_radius: int) -> np.ndarray:
    """TFLM ``reference_integer_ops::Logistic`` (int8; output zero point -128, scale 1/256).

    Args:
        x: int8 input.
        input_zp: input zero point.
        input_multiplier: :func:`logistic_int8_params`.
        input_left_shift: :func:`logistic_int8_params`.
        input_range_radius: :func:`logistic_int8_params`.

    Returns:
        int8 array of ``x``'s shape.
    """
    v = x.astype(np.int64) - input_zp
    q4 = qu.multiply_by_quantized_multiplier(v, input_multiplier, input_left_shift)
    out = qu.rounding_divide_by_pot(fp.logistic(q4, 4), 23)
    out = np.clip(out - 128, -128, 127)
    out = np.where(v <= -input_range_radius, -128, np.where(v >= input_range_radius, 127, out))
    return out.astype(np.int8)


def leaky_relu_params(input_scale: float, alpha: float, output_scale: float
                      ) -> tuple[int, int, int, int]:
    """TFLM LEAKY_RELU Prepare (float32 ratios converted to double).

    Args:
        input_scale: input scale. alpha: the op's alpha (float32). output_scale: output scale.

    Returns:
        ``(alpha_multiplier, alpha_shift, identity_multiplier, identity_shift)``.
    """
    si, a, so = np.float32(input_scale), np.float32(alpha), np.float32(output_scale)
    ma, sa = quantize_multiplier(float(np.float32(np.float32(si * a) / so)))
    mi, s_i = quantize_multiplier(float(np.float32(si / so)))
    return ma, sa, mi, s_i


def leaky_relu(x: np.ndarray, *, input_zp: int, output_zp: int, alpha_multiplier: int,
               alpha_shift: int, identity_multiplier: int, identity_shift: int) -> np.ndarray:
    """TFLM ``reference_ops::QuantizeLeakyRelu`` (int8 / int16).

    Args:
        x: int8 / int16 input.
        input_zp: input zero point. output_zp: output zero point.
        alpha_multiplier: :func:`leaky_relu_params` (negative for a negative alpha).
        alpha_shift: its shift.
        identity_multiplier: :func:`leaky_relu_params`. identity_shift: its shift.

    Returns:
        array of ``x``'s dtype and shape.
    """
    v = x.astype(np.int64) - input_zp
    pos = qu.multiply_by_quantized_multiplier(v, identity_multiplier, identity_shift)
    neg = qu.multiply_by_quantized_multiplier(v, abs(alpha_multiplier), alpha_shift)
    if alpha_multiplier < 0:
        neg = -neg
    out = output_zp + np.where(v >= 0, pos, neg)
    lo, hi = np.iinfo(x.dtype).min, np.iinfo(x.dtype).max
    return np.clip(out, lo, hi).astype(x.dtype)


def tanh_int8(x: np.ndarray, *, input_zp: int, input_multiplier: int, input_left_shift: int,
              input_range_radius: int) -> np.ndarray:
    """TFLM ``reference_integer_ops::Tanh`` for int8 (gemmlowp tanh on Q4.27; output zero point 0,
    scale 1/128). Parameters as :func:`logistic_int8_params`.

    Args:
        x: int8 input.
        input_zp: input zero point.
        input_multiplier: multiplier. input_left_shift: shift. input_range_radius: saturation radius.

    Returns:
        int8 array.
    """
    v = x.astype(np.int64) - input_zp
    q4 = qu.multiply_by_quantized_multiplier(v, input_multiplier, input_left_shift)
    out = np.clip(qu.rounding_divide_by_pot(fp.tanh(q4, 4), 24), -128, 127)
    out = np.where(v <= -input_range_radius, -128, np.where(v >= input_range_radius, 127, out))
    return out.astype(np.int8)


def int16_activation_params(input_scale: float, *, tanh: bool) -> tuple[int, int]:
    """TFLM int16 LOGISTIC / TANH Prepare: ``(input_multiplier, input_left_shift)``.

    A power-of-two input scale with ``left_shift`` 0 (or 1 for TANH) gives multiplier 0 (the
    kernel's ``3 << shift`` case); otherwise ``s * 4096 * 3`` doubled until above 16383.5.

    Args:
        input_scale: input scale (float32 value).
        tanh: TANH rather than LOGISTIC.

    Returns:
        ``(input_multiplier, input_left_shift)``.
    """
    lg, pot = checked_log2(input_scale)
    ls = 12 + lg
    pot = pot and (ls in (0, 1) if tanh else ls == 0)
    if pot:
        return 0, ls
    m = float(np.float32(input_scale)) * 4096.0 * 3.0
    ls = 0
    while m <= 32767.0 / 2.0 and ls <= 30:
        ls += 1
        m *= 2.0
    return int(m), ls


def logistic_int16(x: np.ndarray, *, input_multiplier: int, input_left_shift: int) -> np.ndarray:
    """TFLM int16 LOGISTIC (:func:`pymli.tflm.lstm.sigmoid_int16`), output Q0.15.

    Args:
        x: int16 input (zero point 0).
        input_multiplier: :func:`int16_activation_params`. input_left_shift: its shift.

    Returns:
        int16 array.
    """
    return sigmoid_int16(x, input_multiplier, input_left_shift)


def _roundf(v: np.ndarray) -> np.ndarray:
    """``std::round`` on float32 values (ties away from zero), exact."""
    v = np.asarray(v, np.float32)
    r = np.floor(np.abs(v).astype(np.float64) + 0.5)
    return np.float32(np.sign(v)) * r.astype(np.float32)


def lut_populate_int16(transform, input_scale: float, input_zp: int, output_scale: float,
                       output_zp: int) -> np.ndarray:  # noqa: ANN001 - a float32 -> float32 callable
    """TFLM ``LUTPopulateInt16<float>``: 513 int16 entries over the int16 input range, each sample
    corrected by half the interpolation error at its midpoint; every step in float32 as the C code.

    Args:
        transform: vectorised float32 -> float32 function (e.g. ``exp``).
        input_scale: input scale. input_zp: input zero point.
        output_scale: output scale. output_zp: output zero point.

    Returns:
        int64 array of 513 int16 values.
    """
    f = np.float32
    in_min = f(f(input_scale) * f(-32768 - input_zp))
    in_max = f(f(input_scale) * f(32767 - input_zp))
    out_min = f(f(output_scale) * f(-32768 - output_zp))
    out_max = f(f(output_scale) * f(32767 - output_zp))
    step = f(f(in_max - in_min) / f(512))
    half = f(step / f(2))
    inv = f(f(65536) / f(out_max - out_min))
    i = np.arange(512, dtype=np.float32)
    x0 = (in_min + (i * step).astype(f)).astype(f)
    xm = (x0 + half).astype(f)
    x1 = (in_min + ((i + f(1)) * step).astype(f)).astype(f)
    val, vmid, vnext = transform(x0), transform(xm), transform(x1)
    sample = _roundf(val * inv)
    interp = _roundf(((vnext * inv).astype(f) + sample).astype(f) / f(2))
    mid = _roundf(vmid * inv)
    bias = _roundf((interp - mid).astype(f) / f(2))
    lut = np.clip((sample - bias).astype(f), -32768, 32767).astype(np.int64)
    last = np.clip(_roundf(transform(np.array([in_max], f)) * inv), -32768, 32767).astype(np.int64)
    return np.concatenate([lut, last])


def lut_lookup_int16(v: np.ndarray, lut: np.ndarray) -> np.ndarray:
    """TFLM ``LUTLookup(int16_t)``: linear interpolation between the 513 entries.

    Args:
        v: int16 values (int64 array).
        lut: :func:`lut_populate_int16`.

    Returns:
        int64 array of int16 values.
    """
    v = np.asarray(v, np.int64)
    idx = 256 + (v >> 7)
    off = v & 0x7F
    base = lut[idx]
    slope = lut[np.minimum(idx + 1, 512)] - base
    return qu.wrap(base + ((slope * off + 64) >> 7), 16)


def _expf(x: np.ndarray) -> np.ndarray:
    return np.exp(x.astype(np.float64)).astype(np.float32)  # expf, correctly rounded


def _one_over_one_plus(x: np.ndarray) -> np.ndarray:
    return (np.float32(1) / (np.float32(1) + x).astype(np.float32)).astype(np.float32)


def softmax_int16_params(beta: float, input_scale: float) -> tuple[int, int, np.ndarray, np.ndarray]:
    """TFLM int16 SOFTMAX Prepare: the input multiplier (differences mapped so [-10, 0] spans
    65535 steps) and the exp and 1/(1+x) tables.

    Args:
        beta: the op's beta. input_scale: input scale.

    Returns:
        ``(input_multiplier, input_left_shift, exp_lut, one_over_one_plus_x_lut)``.
    """
    m, ls = quantize_multiplier(float(np.float32(input_scale)) * float(np.float32(beta))
                               / (10.0 / 65535.0))
    rng = 65535
    exp_lut = lut_populate_int16(_expf, float(np.float32(10.0) / np.float32(rng)), 32767,
                                 float(np.float32(2.0) / np.float32(rng)), 0)
    rec_lut = lut_populate_int16(_one_over_one_plus, float(np.float32(1.0) / np.float32(rng)), -32768,
                                 float(np.float32(2.0) / np.float32(rng)), 0)
    return m, ls, exp_lut, rec_lut


def softmax_int16(x: np.ndarray, *, input_multiplier: int, input_left_shift: int,
                  exp_lut: np.ndarray, one_over_one_plus_x_lut: np.ndarray) -> np.ndarray:
    """TFLM ``reference_ops::SoftmaxInt16`` over the last axis (output Q0.15, zero point 0).

    Args:
        x: int16 input (zero point 0).
        input_multiplier: :func:`softmax_int16_params`. input_left_shift: its shift.
        exp_lut: its exp table. one_over_one_plus_x_lut: its reciprocal table.

    Returns:
        int16 array.
    """
    xi = x.astype(np.int64)
    diff = xi - xi.max(axis=-1, keepdims=True)
    sd = qu.multiply_by_quantized_multiplier(diff, input_multiplier, input_left_shift)
    e = lut_lookup_int16(np.clip(sd + 32767, -32768, 32767), exp_lut)
    total = qu.wrap(e.sum(axis=-1, keepdims=True), 32)
    u = total & 0xFFFFFFFF
    hp1 = 32 - np.frompyfunc(lambda v: int(v).bit_length(), 1, 1)(u).astype(np.int64)
    shifted = ((total << (hp1 - 1)) + (1 << 13)) >> 14
    sym = np.clip(shifted - ((1 << 15) + (1 << 16)), -32768, 32767)
    recip = lut_lookup_int16(sym, one_over_one_plus_x_lut)
    rs = 31 - hp1
    res = (e * recip + (np.int64(1) << (rs - 1))) >> rs
    return np.clip(res, 0, 32767).astype(np.int16)


def log_softmax_params(input_scale: float) -> tuple[int, int, int, int, int]:
    """TFLM int8 LOG_SOFTMAX Prepare (``PreprocessLogSoftmaxScalingExp``, beta 1, 5 integer bits).

    Args:
        input_scale: input scale (float32 value).

    Returns:
        ``(input_multiplier, input_left_shift, reverse_scaling_divisor, reverse_scaling_shift,
        diff_min)``; ``reverse_scaling_shift`` is the (non-positive) shift applied with
        ``MultiplyByQuantizedMultiplier``.
    """
    m, ls, _ = softmax_params(1.0, input_scale)
    rev_m, rev_s = quantize_multiplier((1 << (31 - ls)) / float(m))
    return m, ls, rev_m, rev_s, -calculate_input_radius(5, ls)


def log_softmax_int8(x: np.ndarray, *, input_multiplier: int, input_left_shift: int,
                     reverse_scaling_divisor: int, reverse_scaling_shift: int, diff_min: int
                     ) -> np.ndarray:
    """TFLM ``reference_ops::LogSoftmax`` for int8 over the last axis (output scale 16/256, zero
    point 127): exps of the differences to the row maximum summed in Q12.19, their log in Q5.26,
    the differences minus that log requantised to Q4.

    Args:
        x: int8 input.
        input_multiplier: :func:`log_softmax_params`.
        input_left_shift: :func:`log_softmax_params`.
        reverse_scaling_divisor: :func:`log_softmax_params`.
        reverse_scaling_shift: :func:`log_softmax_params`.
        diff_min: :func:`log_softmax_params`.

    Returns:
        int8 array of ``x``'s shape.

    Raises:
        MliError: input not int8.
    """
    require_int8(x, "log_softmax_int8")
    xi = x.astype(np.int64)
    diff = xi - xi.max(axis=-1, keepdims=True)
    in_q5 = qu.wrap(qu.multiply_by_quantized_multiplier(diff, input_multiplier, input_left_shift), 32)
    e = fp.rescale(fp.exp_on_negative_values(in_q5, 5), 0, 12)  # Q0.31 -> Q12.19
    sum_q12 = qu.wrap(np.where(diff >= diff_min, e, 0).sum(axis=-1, keepdims=True), 32)
    log_q5 = fp.log_x_for_x_greater_than_or_equal_to_1(sum_q12, 5, 12)
    shifted = qu.wrap(log_q5 - (1 << 31), 32)
    adjusted = np.maximum(diff_min - 1, qu.multiply_by_quantized_multiplier(
        shifted, reverse_scaling_divisor, reverse_scaling_shift))
    out = qu.rounding_divide_by_pot(qu.wrap(in_q5 - log_q5, 32), 31 - 5 - 4) + 127
    return np.where(diff > adjusted, np.clip(out, -128, 127), -128).astype(np.int8)
