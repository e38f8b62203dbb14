"""Arithmetic of MLI's recurrent kernels: RNN dense, LSTM cell and GRU cell.

The recurrent kernels of MLI 2.0.2 combine four families of integer operations, each mirrored
here by a small vectorised helper (the kernels in :mod:`pymli.kernels.recurrent` only orchestrate
them):

* the dense part (``rnn_dense_op`` of ``bricks/impl/mli_krn_rnn_dense_op_ref.h``): one MAC series
  per input, each series rescaled on its own to the intermediate format
  (``ir_rnn_result_requantize``), the partial results added with saturation and cast to the
  output container (``ir_result_cast_relu_store``);
* the quantisation parameter set-up of ``define_quant_params`` / ``adjust_quant_params``
  (``bricks/impl/mli_prv_quant_ref.h``);
* the element-wise products and sums inside the cells (``eltwise_perform_operation`` of
  ``kernels/eltwise/impl/mli_krn_eltwise_ref.h``);
* the LUT-based sigmoid / tanh the cells call on their gates
  (``activation_lut_one_elem_*`` of ``bricks/impl/mli_prv_lut_ref.h``).

All helpers compute in int64 and model the C container widths explicitly (``bits`` arguments);
rounding follows the current platform through :mod:`pymli.arith.rounding`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from ..config import get_platform
from .rounding import add_sat, asl, asr, asr_rnd, sat, sub_sat, wrap

__all__ = [
    "LutTable",
    "bit_length",
    "norm",
    "c_div",
    "norm_cast",
    "mac",
    "fx_bias_term",
    "fx_ir_requantize",
    "sa_in_to_out",
    "sa_out_mul",
    "sa_bias_term",
    "sa_ir_requantize",
    "sa_ir_cast",
    "lut_fx",
    "lut_sa8",
    "eltwise_fx",
    "eltwise_sa8",
    "K_SIGM_OUT",
    "K_TANH_OUT",
]

I64 = np.int64
MAX_FRAC_FX16 = 15
MAX_FRAC_FX8 = 7

# Output quantisation the sa8 sigmoid / tanh give their result (zero point, scale_frac_bits; scale 1).
K_SIGM_OUT = (-128, 8)
K_TANH_OUT = (0, 7)


class LutTable(NamedTuple):
    """The fields of an ``mli_lut`` the activation needs (table as an int64 array)."""

    data: np.ndarray
    in_frac_bits: int
    out_frac_bits: int
    input_offset: int
    length: int


# ---------------------------------------------------------------------------------- basics
def bit_length(v: npt.ArrayLike) -> np.ndarray:
    """Number of significant bits of non-negative int64 values (0 for 0)."""
    v = np.array(v, dtype=I64)
    n = np.zeros_like(v)
    for s in (32, 16, 8, 4, 2, 1):
        m = v >= (I64(1) << s)
        n += np.where(m, s, 0)
        v = np.where(m, v >> s, v)
    return n + (v > 0)


def norm(x: npt.ArrayLike, bits: int = 32) -> np.ndarray:
    """``mli_math_norm_fx<T>``: redundant sign bits of ``x`` as a ``bits``-bit integer (bits-1 for 0)."""
    x = np.asarray(x, dtype=I64)
    return (bits - 1) - bit_length(np.where(x < 0, ~x, x))


def c_div(a: int, b: int) -> int:
    """C integer division (truncation toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def norm_cast(x: int, in_bits: int, out_bits: int) -> tuple[int, int]:
    """``mli_math_norm_cast_fx<in_T, out_T>``: (normalised value cast to ``out_bits``, its shift)."""
    shift = (in_bits - out_bits) - int(norm(x, in_bits))
    val = sat(asr_rnd(x, shift, in_bits), out_bits)
    return int(val), shift


def mac(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Exact dot products ``sum_j x[j] * w[..., j, m]`` over the second-to-last axis of ``w``.

    ``x``: (N,) int; ``w``: (..., N, M) int. Returns int64 (..., M). float64 BLAS is used when
    every partial sum is provably below 2**53 (N * max|x| * max|w|), int64 otherwise.
    """
    x = np.asarray(x, dtype=I64)
    w = np.asarray(w, dtype=I64)
    n = x.shape[0]
    if n == 0:
        return np.zeros(w.shape[:-2] + w.shape[-1:], dtype=I64)
    bound = n * int(np.abs(x).max(initial=0)) * int(np.abs(w).max(initial=0))
    if bound < 2**53:
        return np.matmul(x.astype(np.float64), w.astype(np.float64)).astype(I64)
    return np.einsum("j,...jm->...m", x, w)


# ---------------------------------------------------------------------------------- FX dense
def fx_bias_term(b: npt.ArrayLike, bias_shift: int, acc_bits: int) -> np.ndarray:
    """``bias_additive`` of the FX kernels: the bias brought to the accumulator's format.

    fx16 (int16 bias, 40-bit accumulator, an int64 in the reference build): shift left by
    ``bias_shift`` in 64 bits and truncate to int32 as the C cast does. fx16_fx8_fx8 (int8 bias,
    32-bit accumulator): saturating shift left in 32 bits.
    """
    if acc_bits == 64:
        return wrap(asr_rnd(b, -bias_shift, 64), 32)
    return asr_rnd(b, -bias_shift, 32)


def fx_ir_requantize(acc: npt.ArrayLike, out_shift: int, acc_bits: int) -> np.ndarray:
    """``ir_rnn_result_requantize`` for FX: rounding shift of one series to the output format."""
    if acc_bits == 64:
        out_shift = min(out_shift, 39)
    return asr_rnd(acc, out_shift, acc_bits)


# ---------------------------------------------------------------------------------- SA8 dense
def sa_in_to_out(in_scale: int, in_sfb: int, out_scale: int, out_sfb: int) -> tuple[int, int]:
    """``define_quant_params`` (sa8): the 16-bit in-to-out scale ratio and its shift."""
    n = int(norm(in_scale, 32))
    su = int(asl(in_scale, n, 32))
    su = c_div(su, out_scale)
    nn = int(norm(su, 32))
    ratio = int(sat(asr_rnd(su, 16 - nn, 32), 16))
    shift = in_sfb + n - out_sfb - (16 - nn)
    return ratio, shift


def sa_out_mul(ratio: int, in_to_out_shift: int, w_scale: int, w_sfb: int) -> tuple[int, int]:
    """``adjust_quant_params`` (sa8): output multiplier and shift for one weights scale.

    Outside FULL_ACCU builds the multiplier is normalised to use the whole 32-bit headroom.
    """
    mul = int(ratio) * int(w_scale)
    shift = in_to_out_shift + int(w_sfb)
    if not get_platform().full_accu:
        n = int(norm(mul, 32))
        mul = int(wrap(mul << n, 32))
        shift += n
    return mul, shift


def sa_bias_term(b: npt.ArrayLike) -> np.ndarray:
    """``bias_additive`` (sa32 bias): outside FULL_ACCU the bias keeps only 16 significant bits."""
    b = np.asarray(b, dtype=I64)
    if get_platform().full_accu:
        return b
    s = np.maximum(16 - norm(b, 32), 0)
    return asl(b >> s, s, 32)


def sa_ir_requantize(acc: npt.ArrayLike, mul: npt.ArrayLike, shift: npt.ArrayLike) -> np.ndarray:
    """``ir_rnn_result_requantize`` (sa8): 64-bit product, rounding shift, saturation to int32."""
    prod = np.asarray(acc, dtype=I64) * np.asarray(mul, dtype=I64)
    return sat(asr_rnd(prod, np.minimum(shift, 63), 64), 32)


def sa_ir_cast(acc: npt.ArrayLike, out_zp: int) -> np.ndarray:
    """``ir_result_cast_relu_store`` (sa8): to int16, add the zero point, saturate to int8."""
    return sat(add_sat(sat(acc, 16), out_zp, 16), 8)


# ---------------------------------------------------------------------------------- LUT activations
def _lut_interpolate(x: np.ndarray, lut: LutTable, shift_in: int) -> np.ndarray:
    """``activation_lut_one_elem_interpolate`` after the input conversion (``shift_in > 0``)."""
    idx = add_sat(asr(x, shift_in, 32), lut.input_offset, 32)
    idx = np.clip(idx, 0, lut.length - 2)
    frac = x & ((1 << shift_in) - 1)
    r0 = lut.data[idx]
    diff = wrap(r0 - lut.data[idx + 1], 16)
    corr = sat(asr_rnd(diff * frac, shift_in, 32), 16)
    return wrap(r0 - corr, 16)


def lut_fx(x: npt.ArrayLike, lut: LutTable, in_frac_bits: int, out_bits: int = 16) -> np.ndarray:
    """``mli_prv_activation_lut_fx16/fx8``: the table applied to FX values of ``in_frac_bits``.

    Interpolates linearly when the input is more precise than the table; returns values in
    Q(out_bits-1) (the caller sets the output's frac_bits to 15 or 7).
    """
    x = np.asarray(x, dtype=I64)
    shift_full = in_frac_bits - lut.in_frac_bits
    shift_in = min(shift_full, MAX_FRAC_FX16)
    if shift_in > 0:
        pre = min(max(shift_full - MAX_FRAC_FX16, 0), 15)
        res = _lut_interpolate(asr(x, pre, 32), lut, shift_in)
    else:
        idx = add_sat(asl(x, -shift_in, 32), lut.input_offset, 32)
        res = lut.data[np.clip(idx, 0, lut.length - 1)]
    if out_bits == 16:
        return res
    return sat(asr_rnd(res, 16 - out_bits, 16), out_bits)


def lut_sa8(x: npt.ArrayLike, lut: LutTable, in_zp: int, in_scale: int, in_sfb: int,
            out_zp: int, out_sfb: int) -> np.ndarray:
    """``mli_prv_activation_lut_sa8``: sa8 in, converted to Q(8 + lut.in_frac_bits), sa8 out.

    The output has scale 1, the given zero point and ``out_sfb`` fractional bits.
    """
    in_fb16 = MAX_FRAC_FX16 - (MAX_FRAC_FX8 - lut.in_frac_bits)
    shift_full = in_fb16 - lut.in_frac_bits
    shift_in = min(shift_full, MAX_FRAC_FX16)
    biased = wrap(np.asarray(x, dtype=I64) - in_zp, 16)
    xin = asr_rnd(biased * in_scale, in_sfb - in_fb16, 32)
    if shift_in > 0:
        pre = min(max(shift_full - MAX_FRAC_FX16, 0), 15)
        res = _lut_interpolate(asr(xin, pre, 32), lut, shift_in)
    else:  # not reachable with 8-bit inputs (shift_in is always 8); kept for completeness
        idx = add_sat(asl(xin, -shift_in, 32), lut.input_offset, 32)
        res = lut.data[np.clip(idx, 0, lut.length - 1)]
    return sat(asr_rnd(res, lut.out_frac_bits - out_sfb, 32) + out_zp, 8)


# ---------------------------------------------------------------------------------- eltwise
def eltwise_fx(op: str, a: npt.ArrayLike, b: npt.ArrayLike, fa: int, fb: int, fo: int,
               io_bits: int = 16) -> np.ndarray:
    """``eltwise_perform_operation`` for FX (no conversion): ``op`` is "add", "sub" or "mul"."""
    a = np.asarray(a, dtype=I64)
    b = np.asarray(b, dtype=I64)
    max_shift = 2 * io_bits - 1
    if op == "mul":
        post = min(fa + fb - fo, max_shift)
        return sat(asr_rnd(a * b, post, 64), io_bits)
    pre1 = min(fa - fb, 0)
    pre2 = min(fb - fa, 0)
    post = min(max(fa, fb) - fo, max_shift)
    in1 = asr_rnd(a, pre1, 32)
    in2 = asr_rnd(b, pre2, 32)
    acc = add_sat(in1, in2, 32) if op == "add" else sub_sat(in1, in2, 32)
    return sat(asr_rnd(acc, post, 64), io_bits)


def eltwise_sa8(op: str, a: npt.ArrayLike, b: npt.ArrayLike, qa: tuple[int, int, int],
                qb: tuple[int, int, int], qo: tuple[int, int, int]) -> np.ndarray:
    """``eltwise_perform_operation`` for sa8 (with conversion); ``q* = (zero_point, scale, sfb)``.

    The scale factors and shifts are derived as ``eltwise_prepare_and_run`` does for per-tensor
    quantisation: one 16-bit multiplier for a product, one per operand for a sum or difference.
    """
    za, sa_, fa = (int(v) for v in qa)
    zb, sb, fb = (int(v) for v in qb)
    zo, so, fo = (int(v) for v in qo)
    a = np.asarray(a, dtype=I64)
    b = np.asarray(b, dtype=I64)
    in1 = sub_sat(a, za, 16)
    in2 = sub_sat(b, zb, 16)
    if op == "mul":
        f, sh = norm_cast(sa_ * sb, 32, 32)
        f = c_div(f, so)
        post = fa + fb - fo - sh
        s16, sh = norm_cast(f, 32, 16)
        post -= sh
        sh = max(post - 31, 0) + min(31 + post, 0)
        s16 = int(asr_rnd(s16, sh, 16))
        post -= sh
        acc = in1 * in2
        preshift = min(max(post - (32 - 8 - 3), 0), 3)
        acc16 = sat(asr_rnd(acc, preshift, 32), 16)
        tmp = sat(asr_rnd(acc16 * s16, post - preshift, 32), 16)
        return sat(add_sat(tmp, zo, 16), 8)
    scales = []
    for s, f_ in ((sa_, fa), (sb, fb)):
        v, ns = norm_cast(s, 32, 32)
        v = c_div(v, so)
        pre = -ns + f_ - fo
        s16, ns = norm_cast(v, 32, 16)
        pre -= ns
        sh = max(pre - 23, 0) + min(31 + pre, 0)
        scales.append((int(asr_rnd(s16, sh, 16)), pre - sh))
    (s1, p1), (s2, p2) = scales
    x1 = asr_rnd(in1 * s1, p1, 32)
    x2 = asr_rnd(in2 * s2, p2, 32)
    acc = add_sat(x1, x2, 32) if op == "add" else sub_sat(x1, x2, 32)
    return sat(add_sat(sat(acc, 16), zo, 16), 8)
