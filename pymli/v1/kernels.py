"""The MLI 1.0 kernels as pure NumPy functions over int64 arrays (no tensors, no cfg structs).

Each returns the values the C kernel stores, computed with exact integer arithmetic and MLI 1.0's
read-outs (:mod:`pymli.v1._arith`). Where 1.0 computes what MLI 2.0 computes (conv2d, depthwise,
fully connected, pooling, relu, eltwise, permute: see docs/mli1.md) the formulas are the same.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ._arith import I64, asr_sat, norm_a40, rnd, rnd_sat, sat
from .tables import Lut1, avepool_mul_shift

__all__ = [
    "relu_limits", "conv2d_chw", "depthwise_conv2d_chw", "fully_connected", "maxpool_chw", "avepool_chw",
    "leaky_relu", "eltwise", "lut_activation", "softmax", "convert", "out_size", "dense_rnn", "rnd_sat32", "bias_init",
    "rnd_sat_from32",
]


def out_size(in_size: int, k: int, pad_a: int, pad_b: int, stride: int) -> int:
    """``CEIL_DIV(in + pad_a + pad_b - k + 1, stride)``."""
    n = in_size + pad_a + pad_b - k + 1
    return -(-n // stride)


def relu_limits(relu_type: int, frac_bits: int, bits: int) -> tuple[int, int]:
    """``mli_prv_get_relu_min_max``: (min, max) of a ReLU type for ``frac_bits`` in a ``bits`` container."""
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if relu_type == 1:
        return 0, hi
    if relu_type == 3:
        return 0, min(6 << frac_bits, hi)
    if relu_type == 2:
        return max(-(1 << frac_bits), lo), min(1 << frac_bits, hi)
    return lo, hi


def _windows(x: np.ndarray, kh: int, kw: int, sh: int, sw: int, pads: tuple[int, int, int, int],
             fill: int, ho: int, wo: int) -> np.ndarray:
    """[C, Ho, Wo, Kh, Kw] windows of a padded CHW map (padding value ``fill``)."""
    pt, pb, pl, pr = pads
    xp = np.pad(x, ((0, 0), (pt, pb), (pl, pr)), constant_values=fill)
    win = sliding_window_view(xp, (kh, kw), axis=(1, 2))
    return win[:, : (ho - 1) * sh + 1: sh, : (wo - 1) * sw + 1: sw]


def bias_init(b: np.ndarray, bias_shift: int, acc40: bool) -> np.ndarray:
    """``mli_prv_init_accu_with_bias``: the bias in the accumulator's format (``in.frac + w.frac``).

    On the 40-bit accumulator (fx16) a saturating left shift by ``bias_shift`` (a truncating right
    shift if negative); on the 32-bit one (fx8, fx8w16d) ``fx_asr_rnd_q31(bias, -bias_shift)``.
    """
    b = np.asarray(b, dtype=I64)
    if acc40:
        return asr_sat(b, -bias_shift, 40)
    return rnd_sat(b, -bias_shift, 32)


def _acc_out(acc: np.ndarray, shift: int, bits: int, relu: tuple[int, int]) -> np.ndarray:
    out = rnd_sat(acc, shift, bits)
    return np.clip(out, relu[0], relu[1])


def conv2d_chw(x: np.ndarray, w: np.ndarray, b: np.ndarray, *, in_frac: int, w_frac: int, b_frac: int,
               out_frac: int, stride: tuple[int, int], pads: tuple[int, int, int, int], relu: int,
               bits: int, acc40: bool = False) -> np.ndarray:
    """2D convolution of MLI 1.0 (CHW).

    ``acc = bias_init(bias) + sum(x * w)`` exactly (the recorded cases never
    leave the 32/40-bit accumulator), then ``sat_bits(rnd(acc, in_frac + w_frac - out_frac))`` and
    the fused ReLU clip with limits from ``out_frac``.

    Args:
        x: int [C, H, W] input.
        w: int [Co, C, Kh, Kw] weights.
        b: int [Co] bias.
        in_frac, w_frac, b_frac, out_frac: fractional bits.
        stride: (stride_h, stride_w).
        pads: (top, bottom, left, right).
        relu: ``mli_relu_type`` value.
        bits: output container bits (8 or 16).
        acc40: the 40-bit accumulator of fx16 (affects only a negative bias shift).

    Returns:
        np.ndarray: int64 [Co, Ho, Wo].
    """
    co, _, kh, kw = w.shape
    ho = out_size(x.shape[1], kh, pads[0], pads[1], stride[0])
    wo = out_size(x.shape[2], kw, pads[2], pads[3], stride[1])
    win = _windows(x.astype(I64), kh, kw, stride[0], stride[1], pads, 0, ho, wo)
    acc = np.einsum("chwij,ocij->ohw", win, w.astype(I64))
    acc = acc + bias_init(b, in_frac + w_frac - b_frac, acc40)[:, None, None]
    return _acc_out(acc, in_frac + w_frac - out_frac, bits, relu_limits(relu, out_frac, bits))


def depthwise_conv2d_chw(x: np.ndarray, w: np.ndarray, b: np.ndarray, *, in_frac: int, w_frac: int,
                         b_frac: int, out_frac: int, stride: tuple[int, int],
                         pads: tuple[int, int, int, int], relu: int, bits: int, acc40: bool = False) -> np.ndarray:
    """Depthwise 2D convolution of MLI 1.0 (CHW, weights [C, 1, Kh, Kw]); see :func:`conv2d_chw`."""
    c, _, kh, kw = w.shape
    ho = out_size(x.shape[1], kh, pads[0], pads[1], stride[0])
    wo = out_size(x.shape[2], kw, pads[2], pads[3], stride[1])
    win = _windows(x.astype(I64), kh, kw, stride[0], stride[1], pads, 0, ho, wo)
    acc = np.einsum("chwij,cij->chw", win, w[:, 0].astype(I64))
    acc = acc + bias_init(b, in_frac + w_frac - b_frac, acc40)[:, None, None]
    return _acc_out(acc, in_frac + w_frac - out_frac, bits, relu_limits(relu, out_frac, bits))


def fully_connected(x: np.ndarray, w: np.ndarray, b: np.ndarray, *, in_frac: int, w_frac: int, b_frac: int,
                    out_frac: int, bits: int, acc40: bool = False) -> np.ndarray:
    """Fully connected layer of MLI 1.0: weights [M, N], input of N elements, bias [M]."""
    acc = w.astype(I64) @ x.reshape(-1).astype(I64)
    acc = acc + bias_init(b, in_frac + w_frac - b_frac, acc40)
    return rnd_sat(acc, in_frac + w_frac - out_frac, bits)


def maxpool_chw(x: np.ndarray, *, kernel: tuple[int, int], stride: tuple[int, int],
                pads: tuple[int, int, int, int]) -> np.ndarray:
    """Max pooling (CHW): the maximum over the window, padding positions excluded."""
    kh, kw = kernel
    ho = out_size(x.shape[1], kh, pads[0], pads[1], stride[0])
    wo = out_size(x.shape[2], kw, pads[2], pads[3], stride[1])
    fill = np.iinfo(np.int64).min
    win = _windows(x.astype(I64), kh, kw, stride[0], stride[1], pads, fill, ho, wo)
    return win.max(axis=(3, 4))


def avepool_chw(x: np.ndarray, *, kernel: tuple[int, int], stride: tuple[int, int],
                pads: tuple[int, int, int, int], bits: int) -> np.ndarray:
    """Average pooling of MLI 1.0 (CHW).

    Over the ``n`` valid elements of each window: ``sat_bits(rnd(sum * mul, shift))`` with
    ``(mul, shift) = avepool_mul_shift(n, Kh * Kw)`` (a 16-bit reciprocal, not a division).
    """
    kh, kw = kernel
    ho = out_size(x.shape[1], kh, pads[0], pads[1], stride[0])
    wo = out_size(x.shape[2], kw, pads[2], pads[3], stride[1])
    win = _windows(x.astype(I64), kh, kw, stride[0], stride[1], pads, 0, ho, wo)
    sums = win.sum(axis=(3, 4))
    ones = np.ones((1,) + x.shape[1:], dtype=I64)
    counts = _windows(ones, kh, kw, stride[0], stride[1], pads, 0, ho, wo).sum(axis=(3, 4))[0]
    out = np.empty_like(sums)
    for n in np.unique(counts):
        mul, shift = avepool_mul_shift(int(n), kh * kw)
        sel = counts == n
        out[:, sel] = rnd_sat(sums[:, sel] * mul, shift, bits)
    return out


def leaky_relu(x: np.ndarray, slope: int, slope_frac: int, bits: int) -> np.ndarray:
    """Leaky ReLU of MLI 1.0: ``max(x, sat(rnd(x * slope, slope_frac)))`` for a slope below one.

    "Below one" is tested on int16 as ``slope < (int16_t)(1 << frac)`` (any ``frac > 15`` counts as
    below one), so a Q15 slope compares with -32768 and takes ``min`` instead (a 1.0 bug, kept).
    """
    prod = rnd_sat(x.astype(I64) * int(slope), slope_frac, 16)
    if bits == 8:
        prod = sat(prod, 8)
    if slope_frac > 15:
        below = True
    else:
        unit = ((1 << slope_frac) + 0x8000) % 0x10000 - 0x8000
        below = slope < unit
    return np.maximum(x, prod) if below else np.minimum(x, prod)


def eltwise(op: str, a: np.ndarray, b: np.ndarray, *, shift: int, bits: int) -> np.ndarray:
    """Element-wise add/sub/min/max/mul of flat vectors (one may have one element: broadcast).

    add/sub saturate to 16 bits and then to the container; mul reads the product out with a
    rounding shift by ``shift = in1_frac + in2_frac - out_frac``.
    """
    a = a.astype(I64).reshape(-1)
    b = b.astype(I64).reshape(-1)
    if op == "add":
        r = sat(sat(a + b, 16), bits)
    elif op == "sub":
        r = sat(sat(a - b, 16), bits)
    elif op == "max":
        r = np.maximum(a, b)
    elif op == "min":
        r = np.minimum(a, b)
    else:
        r = rnd_sat(a * b, shift, bits)
    return r


def lut_activation(x: np.ndarray, lut: Lut1, in_frac: int, bits: int) -> np.ndarray:
    """``mli_prv_activation_lut_fx16`` / ``_fx8``: table look-up with linear interpolation.

    Args:
        x: int values (int8 or int16 range).
        lut: the table.
        in_frac: input fractional bits (may be -1, from softmax).
        bits: 16 (Q15 output) or 8 (Q7 output: the Q15 result rounded by 8 bits).

    Returns:
        np.ndarray: int64 outputs.
    """
    x = x.astype(I64)
    data = lut.data.astype(I64)
    shift_in = in_frac - lut.frac_bits
    preshift = max(shift_in - 15, 0)
    shift_in = min(shift_in, 15)
    if shift_in > 0:
        xs = asr_sat(x, preshift, 16)
        idx = np.clip(sat(asr_sat(xs, shift_in, 16) + lut.offset, 16), 0, lut.length - 2)
        frac = (xs & 0xFFFF) & ((1 << shift_in) - 1)
        res = data[idx]
        diff = sat(res - data[idx + 1], 16)
        out = sat(res - rnd_sat(diff * frac, shift_in, 16), 16)
    else:
        idx = np.clip(sat(asr_sat(x, shift_in, 16) + lut.offset, 16), 0, lut.length - 1)
        out = data[idx]
    if bits == 8:
        out = rnd_sat(out, 8, 8)
    return out


def softmax(x: np.ndarray, in_frac: int, lut: Lut1, bits: int) -> np.ndarray:
    """Softmax of MLI 1.0 over all elements: ``exp(x - max)`` from the table, then a Q-normalised reciprocal."""
    x = x.astype(I64).reshape(-1)
    mx, mn = int(x.max()), int(x.min())
    if mn - mx < -(1 << (bits - 1)):
        d = sat((x >> 1) - (mx >> 1), 16)
        in_frac -= 1
    else:
        d = sat(x - mx, 16)
    d = ((d + (1 << (bits - 1))) % (1 << bits)) - (1 << (bits - 1))  # stored into the container
    e = lut_activation(d, lut, in_frac, bits)
    total = int(e.sum())
    sum_exp = norm_a40(total) + 1
    mnt = int(rnd_sat(np.asarray([total]), 16 - sum_exp, 16)[0])
    recip = int(sat(np.asarray([(1 << 29) // mnt if mnt > 0 else 0]), 16)[0])
    out = rnd_sat(e * recip, 16 - (sum_exp - 30 + bits), 16)
    return sat(out, bits) if bits == 8 else out


def convert(x: np.ndarray, shift: int, in_bits: int, out_bits: int) -> np.ndarray:
    """``mli_hlp_convert_tensor``: ``sat16(rnd(x, shift))`` (saturating left for ``shift < 0``), then ``sat_out``."""
    return sat(rnd_sat(x.astype(I64), shift, 16), out_bits)


def dense_rnn(x: np.ndarray, state: np.ndarray, w: np.ndarray, b: np.ndarray, *, bias_shift: int,
              in_to_state: int, out_shift: int, acc40: bool, bits: int) -> np.ndarray:
    """``rnn_dense_op_fx``: ``W[:, :N] @ x``, shifted by ``in_to_state`` bits, plus ``W[:, N:] @ state``.

    The accumulator starts with the bias (``rnd(bias, -bias_shift)``) and takes the input part; it is
    then shifted right by ``in_to_state = in.frac - prev_out.frac``: truncating on the 40-bit
    accumulator (fx16, ``acc40``), rounding on the 32-bit one (fx8, fx8w16d); then the state part is
    added and the sum read out with a rounding shift by ``out_shift``.

    Args:
        x: int [N] input. state: int [M] previous output. w: int [Mo, N + M]. b: int [Mo].

    Returns:
        np.ndarray: int64 [Mo].
    """
    n = x.size
    w = w.astype(I64)
    acc = bias_init(b, bias_shift, acc40) + w[:, :n] @ x.astype(I64)
    if acc40:
        acc = asr_sat(acc, in_to_state, 40)
    else:
        acc = rnd_sat(acc, in_to_state, 32)
    acc = acc + w[:, n:] @ state.astype(I64)
    return rnd_sat(acc, out_shift, bits)


def rnd_sat32(x: np.ndarray, s: int) -> np.ndarray:
    """``fx_asr_rnd_q31`` (``mli_math_acc_ashift_fx`` on a 32-bit accumulator)."""
    return rnd_sat(x, s, 32)


def rnd_sat_from32(x: np.ndarray, s: int, bits: int) -> np.ndarray:
    """``mli_math_acc_cast_fx`` from a 32-bit accumulator: rounding shift (saturated to 32 bits), then ``bits``."""
    return sat(rnd_sat(x, s, 32), bits)
