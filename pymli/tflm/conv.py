"""TFLM reference CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED and TRANSPOSE_CONV (integer, per channel).

int8 (int32 bias, input/output offsets) and 16x8 (int16 activations, int8 weights, int64 or int32
bias, no offsets) as ``reference_integer_ops`` computes them. Accumulation: the products are summed
exactly (float64 BLAS: ``|x - zp| <= 2**16``, ``|w| <= 2**7``, so every partial sum stays below
``2**53`` for fewer than ``2**30`` terms), then wrapped to the C accumulator width (int32 or int64).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import numpy.typing as npt
from numpy.lib.stride_tricks import sliding_window_view

from ..errors import MliError, Status
from ..kernels import _jit
from . import quant_util as qu
from .common import compute_out_size, compute_padding

__all__ = [
    "conv_out_geometry",
    "requantize_acc",
    "conv2d",
    "depthwise_conv2d",
    "fully_connected",
    "transpose_conv",
    "batch_matmul",
    "prepare_mac",
]

I64 = npt.NDArray[np.int64]


def conv_out_geometry(same: bool, in_hw: tuple[int, int], k_hw: tuple[int, int],
                      stride: tuple[int, int], dilation: tuple[int, int] = (1, 1)
                      ) -> tuple[tuple[int, int], tuple[int, int]]:
    """Output extent and leading padding of a convolution, as TFLM's ``ComputePaddingHeightWidth``.

    Args:
        same: SAME padding if True, VALID otherwise.
        in_hw: input (height, width).
        k_hw: filter (height, width).
        stride: (stride_h, stride_w).
        dilation: (dilation_h, dilation_w).

    Returns:
        ``((out_h, out_w), (pad_top, pad_left))``.
    """
    oh = compute_out_size(same, in_hw[0], k_hw[0], stride[0], dilation[0])
    ow = compute_out_size(same, in_hw[1], k_hw[1], stride[1], dilation[1])
    ph = compute_padding(stride[0], dilation[0], in_hw[0], k_hw[0], oh)[0]
    pw = compute_padding(stride[1], dilation[1], in_hw[1], k_hw[1], ow)[0]
    return (oh, ow), (ph, pw)


def requantize_acc(acc: I64, multiplier: npt.ArrayLike, shift: npt.ArrayLike, *, output_zp: int,
                   act_min: int, act_max: int, acc_bits: int) -> I64:
    """Accumulator -> output: TFLM's ``MultiplyByQuantizedMultiplier`` (int32 or int64 overload),
    plus the output zero point, clamped.

    Args:
        acc: int64 accumulators (already wrapped to ``acc_bits``), channel last.
        multiplier: per-channel (or scalar) Q0.31 multipliers.
        shift: per-channel (or scalar) shifts.
        output_zp: output zero point (0 on the 16x8 paths, which do not add it).
        act_min: lower clamp.
        act_max: upper clamp.
        acc_bits: 32 (int32 accumulator overload) or 64 (int64 overload).

    Returns:
        int64 array of clamped output values.
    """
    if acc_bits == 64:
        r = qu.multiply_by_quantized_multiplier_int64(acc, multiplier, shift)
    else:
        r = qu.multiply_by_quantized_multiplier(acc, multiplier, shift)
    return np.clip(r + output_zp, act_min, act_max)


def _check_int(name: str, a: np.ndarray, dtypes: tuple[str, ...]) -> None:
    if np.asarray(a).dtype.name not in dtypes:
        raise MliError(Status.TYPE_MISMATCH, f"{name}: dtype {np.asarray(a).dtype} not in {dtypes}")


def _acc_bits(x: np.ndarray, bias: np.ndarray | None) -> int:
    if x.dtype == np.int16:
        return 64 if bias is None or bias.dtype == np.int64 else 32
    return 32


def _windows(xs: np.ndarray, k_hw: tuple[int, int], stride: tuple[int, int],
             dilation: tuple[int, int], out_hw: tuple[int, int], pad: tuple[int, int]) -> np.ndarray:
    """(N, OH, OW, KH, KW, C) float64 windows of zero-padded ``xs`` (N, H, W, C)."""
    n, h, w, c = xs.shape
    eh = (k_hw[0] - 1) * dilation[0] + 1
    ew = (k_hw[1] - 1) * dilation[1] + 1
    need_h = (out_hw[0] - 1) * stride[0] + eh
    need_w = (out_hw[1] - 1) * stride[1] + ew
    xp = np.zeros((n, max(need_h, pad[0] + h), max(need_w, pad[1] + w), c), np.float64)
    xp[:, pad[0]:pad[0] + h, pad[1]:pad[1] + w, :] = xs
    v = sliding_window_view(xp, (eh, ew), axis=(1, 2))  # N, H', W', C, eh, ew
    v = v[:, ::stride[0], ::stride[1]][:, :out_hw[0], :out_hw[1], :, ::dilation[0], ::dilation[1]]
    return v.transpose(0, 1, 2, 4, 5, 3)



def _add_bias_requantize(acc: np.ndarray, bias: np.ndarray | None, bits: int, multiplier: npt.ArrayLike,
                         shift: npt.ArrayLike, output_zp: int, act_min: int, act_max: int,
                         dtype: npt.DTypeLike) -> np.ndarray:
    """The common tail of TFLM's MAC kernels: add the bias, wrap to the ``bits``-wide accumulator,
    requantise per channel, clamp, cast to ``dtype``."""
    if bias is not None:
        acc = acc + np.asarray(bias, np.int64)
    acc = qu.wrap(acc, bits)
    out = requantize_acc(acc, multiplier, shift, output_zp=output_zp, act_min=act_min, act_max=act_max,
                         acc_bits=bits)
    return out.astype(dtype)

def conv2d(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, *, input_zp: int, output_zp: int,
           multiplier: npt.ArrayLike, shift: npt.ArrayLike, act_min: int, act_max: int,
           stride: tuple[int, int] = (1, 1), dilation: tuple[int, int] = (1, 1),
           same: bool = False) -> np.ndarray:
    """TFLM ``reference_integer_ops::ConvPerChannel`` (int8, and 16x8 with int64 or int32 bias).

    Args:
        x: int8 or int16 input, NHWC, shape (N, H, W, Cin).
        w: int8 filter, OHWI, shape (Cout, KH, KW, Cin / groups).
        bias: int32 (int8 path; int32 or int64 on the 16x8 path) bias of shape (Cout,), or None.
        input_zp: input zero point (ignored on the 16x8 path, as TFLM does).
        output_zp: output zero point (ignored on the 16x8 path).
        multiplier: per-channel multipliers, shape (Cout,) or scalar.
        shift: per-channel shifts.
        act_min: clamp low.
        act_max: clamp high.
        stride: (h, w).
        dilation: (h, w).
        same: SAME padding if True, VALID otherwise.

    Returns:
        output of ``x``'s dtype, NHWC (N, OH, OW, Cout).

    Raises:
        MliError: wrong dtypes or channel counts.
    """
    _check_int("input", x, ("int8", "int16"))
    _check_int("filter", w, ("int8",))
    if x.ndim != 4 or w.ndim != 4 or x.shape[3] % w.shape[3]:
        raise MliError(Status.SHAPE_MISMATCH, f"conv input {x.shape} / filter {w.shape}")
    wide = x.dtype == np.int16
    izp = 0 if wide else int(input_zp)
    ozp = 0 if wide else int(output_zp)
    cout, kh, kw, cin_g = w.shape
    groups = x.shape[3] // cin_g
    if cout % groups:
        raise MliError(Status.SHAPE_MISMATCH, f"{cout} filters for {groups} groups")
    acc = _conv2d_acc(x.astype(np.int64) - izp, w, stride, dilation, same)
    return _add_bias_requantize(acc, bias, _acc_bits(x, bias), multiplier, shift, ozp, act_min, act_max,
                                x.dtype)


def _conv2d_acc(xs: np.ndarray, w: np.ndarray, stride: tuple[int, int], dilation: tuple[int, int],
                same: bool) -> np.ndarray:
    """:func:`conv2d`'s exact int64 sums of ``xs`` (the input minus its zero point, NHWC) and ``w``."""
    cout, kh, kw, cin_g = w.shape
    groups = xs.shape[3] // cin_g
    out_hw, pad = conv_out_geometry(same, xs.shape[1:3], (kh, kw), stride, dilation)
    win = _windows(xs, (kh, kw), stride, dilation, out_hw, pad)
    n = xs.shape[0]
    fpg = cout // groups
    acc = np.empty((n, out_hw[0], out_hw[1], cout), np.int64)
    wf = w.astype(np.float64)
    for g in range(groups):  # one matmul per group (groups is 1 for an ordinary convolution)
        wg = win[..., g * cin_g:(g + 1) * cin_g].reshape(n, out_hw[0], out_hw[1], -1)
        acc[..., g * fpg:(g + 1) * fpg] = np.rint(
            wg @ wf[g * fpg:(g + 1) * fpg].reshape(fpg, -1).T).astype(np.int64)
    return acc


def depthwise_conv2d(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, *, input_zp: int,
                     output_zp: int, multiplier: npt.ArrayLike, shift: npt.ArrayLike, act_min: int,
                     act_max: int, depth_multiplier: int = 1, stride: tuple[int, int] = (1, 1),
                     dilation: tuple[int, int] = (1, 1), same: bool = False) -> np.ndarray:
    """TFLM ``reference_integer_ops::DepthwiseConvPerChannel`` (int8; 16x8 with int64 bias).

    Output channel ``c * depth_multiplier + m`` reads input channel ``c``.

    Args:
        x: int8 / int16 input NHWC (N, H, W, Cin).
        w: int8 filter (1, KH, KW, Cin * depth_multiplier).
        bias: bias (Cout,) int32 / int64, or None.
        input_zp: input zero point (ignored for int16).
        output_zp: output zero point (ignored for int16).
        multiplier: per-channel multipliers (Cout,).
        shift: per-channel shifts (Cout,).
        act_min: clamp low.
        act_max: clamp high.
        depth_multiplier: channels per input channel.
        stride: (h, w).
        dilation: (h, w).
        same: SAME padding if True.

    Returns:
        output (N, OH, OW, Cout) in ``x``'s dtype.

    Raises:
        MliError: wrong dtypes or shapes.
    """
    _check_int("input", x, ("int8", "int16"))
    _check_int("filter", w, ("int8",))
    cin = x.shape[3]
    if x.ndim != 4 or w.ndim != 4 or w.shape[0] != 1 or w.shape[3] != cin * depth_multiplier:
        raise MliError(Status.SHAPE_MISMATCH, f"depthwise input {x.shape} / filter {w.shape} "
                       f"/ depth multiplier {depth_multiplier}")
    wide = x.dtype == np.int16
    izp = 0 if wide else int(input_zp)
    ozp = 0 if wide else int(output_zp)
    acc = _depthwise_acc(x.astype(np.int64) - izp, w, depth_multiplier, stride, dilation, same)
    return _add_bias_requantize(acc, bias, _acc_bits(x, bias), multiplier, shift, ozp, act_min, act_max,
                                x.dtype)


def _depthwise_acc(xs: np.ndarray, w: np.ndarray, depth_multiplier: int, stride: tuple[int, int],
                   dilation: tuple[int, int], same: bool) -> np.ndarray:
    """:func:`depthwise_conv2d`'s exact int64 sums of ``xs`` (the input minus its zero point) and ``w``."""
    kh, kw = w.shape[1:3]
    out_hw, pad = conv_out_geometry(same, xs.shape[1:3], (kh, kw), stride, dilation)
    win = _windows(xs, (kh, kw), stride, dilation, out_hw, pad)
    win = np.repeat(win, depth_multiplier, axis=-1)  # N, OH, OW, KH, KW, Cout
    return np.rint(np.einsum("nhwabc,abc->nhwc", win, w[0].astype(np.float64))).astype(np.int64)


def fully_connected(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, *, input_zp: int,
                    output_zp: int, multiplier: npt.ArrayLike, shift: npt.ArrayLike, act_min: int,
                    act_max: int) -> np.ndarray:
    """TFLM ``reference_integer_ops::FullyConnected`` (per tensor or per channel).

    Both the int8 and 16x8 paths add the input and output offsets here; the accumulator is int32
    for int8 and for a 16x8 int32 bias, else int64 (16x8 with an int64 bias or none; then the int64
    multiplier overload).

    Args:
        x: int8 / int16 input; flattened to (batches, accum_depth) with
            ``accum_depth = w.shape[-1]``.
        w: int8 weights (Cout, accum_depth).
        bias: (Cout,) int32 / int64, or None.
        input_zp: input zero point.
        output_zp: output zero point.
        multiplier: scalar or (Cout,) multipliers.
        shift: scalar or (Cout,) shifts.
        act_min: clamp low.
        act_max: clamp high.

    Returns:
        (batches, Cout) in ``x``'s dtype.

    Raises:
        MliError: wrong dtypes or sizes.
    """
    _check_int("input", x, ("int8", "int16"))
    _check_int("filter", w, ("int8",))
    depth = w.shape[-1]
    if w.ndim != 2 or x.size % depth:
        raise MliError(Status.SHAPE_MISMATCH, f"FC input {x.shape} / weights {w.shape}")
    xs = x.reshape(-1, depth).astype(np.float64) - float(input_zp)
    acc = np.rint(xs @ w.astype(np.float64).T).astype(np.int64)
    return _add_bias_requantize(acc, bias, _acc_bits(x, bias), multiplier, shift, int(output_zp), act_min, act_max, x.dtype)


def transpose_conv(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, *, output_hw: tuple[int, int],
                   input_zp: int, output_zp: int, multiplier: npt.ArrayLike, shift: npt.ArrayLike,
                   act_min: int, act_max: int, stride: tuple[int, int] = (1, 1),
                   same: bool = False) -> np.ndarray:
    """TFLM ``reference_integer_ops::TransposeConv`` (int8 with int32 scratch; 16x8 with int64).

    Every input pixel scatters ``x * w`` into the output at ``in * stride - pad + k``; taps outside
    the output are dropped. The padding is TFLM's for the output/input extents.

    Args:
        x: int8 / int16 input NHWC (N, H, W, Cin).
        w: int8 filter OHWI (Cout, KH, KW, Cin).
        bias: (Cout,) int32 / int64 or None.
        output_hw: output (height, width), from the op's output_shape input.
        input_zp: input zero point (ignored for int16).
        output_zp: output zero point (ignored for int16).
        multiplier: per-channel multipliers.
        shift: per-channel shifts.
        act_min: clamp low.
        act_max: clamp high.
        stride: (h, w).
        same: SAME padding if True.

    Returns:
        (N, OH, OW, Cout) in ``x``'s dtype.

    Raises:
        MliError: wrong dtypes or shapes.
    """
    _check_int("input", x, ("int8", "int16"))
    _check_int("filter", w, ("int8",))
    if x.ndim != 4 or w.ndim != 4 or w.shape[3] != x.shape[3]:
        raise MliError(Status.SHAPE_MISMATCH, f"transpose conv input {x.shape} / filter {w.shape}")
    wide = x.dtype == np.int16
    izp = 0 if wide else int(input_zp)
    ozp = 0 if wide else int(output_zp)
    acc = _transpose_acc(x.astype(np.float64) - izp, w, output_hw, stride, same)
    bits = 64 if wide and (bias is None or bias.dtype == np.int64) else 32
    acc = qu.wrap(acc, bits)
    if bias is not None:
        acc = qu.wrap(acc + np.asarray(bias, np.int64), bits)
    out = requantize_acc(acc, multiplier, shift, output_zp=ozp, act_min=act_min, act_max=act_max,
                         acc_bits=bits)
    return out.astype(x.dtype)


def _transpose_acc(xs: np.ndarray, w: np.ndarray, output_hw: tuple[int, int], stride: tuple[int, int],
                   same: bool) -> np.ndarray:
    """:func:`transpose_conv`'s exact int64 sums of ``xs`` (float64 input minus its zero point) and ``w``."""
    n, h, wd, _ = xs.shape
    cout, kh, kw, _ = w.shape
    oh, ow = output_hw
    # TFLM: padding from the output extent (as "input") and the input extent (as "output")
    ph = compute_padding(stride[0], 1, oh, kh, h)[0] if same else 0
    pw = compute_padding(stride[1], 1, ow, kw, wd)[0] if same else 0
    fh = max((h - 1) * stride[0] + kh, ph + oh)
    fw = max((wd - 1) * stride[1] + kw, pw + ow)
    full = np.zeros((n, fh, fw, cout), np.int64)
    wf = w.astype(np.float64)
    for a in range(kh):  # one matmul per filter tap
        for b in range(kw):
            contrib = np.rint(xs @ wf[:, a, b, :].T).astype(np.int64)  # N, H, W, Cout
            full[:, a:a + (h - 1) * stride[0] + 1:stride[0],
                 b:b + (wd - 1) * stride[1] + 1:stride[1], :] += contrib
    return full[:, ph:ph + oh, pw:pw + ow, :]


def batch_matmul(lhs: np.ndarray, rhs: np.ndarray, *, adj_x: bool, adj_y: bool, lhs_zp: int,
                 rhs_zp: int, output_zp: int, multiplier: int, shift: int) -> np.ndarray:
    """TFLM BATCH_MATMUL (int8 with int32 accumulation, int16 with int64), batch broadcasting.

    Args:
        lhs: int8 / int16 (..., M, K) (or (..., K, M) with ``adj_x``).
        rhs: same dtype (..., K, N) (or (..., N, K) with ``adj_y``).
        adj_x: transpose the last two axes of ``lhs``. adj_y: same for ``rhs``.
        lhs_zp: lhs zero point. rhs_zp: rhs zero point. output_zp: output zero point.
        multiplier: ``QuantizeMultiplier(double(float32(s_l * s_r)) / double(s_o))``. shift: its shift.

    Returns:
        (..., M, N) in the inputs' dtype.

    Raises:
        MliError: dtype mismatch.
    """
    if lhs.dtype != rhs.dtype or lhs.dtype not in (np.int8, np.int16):
        raise MliError(Status.TYPE_MISMATCH, f"BATCH_MATMUL {lhs.dtype} x {rhs.dtype}")
    a = lhs.astype(np.float64) - lhs_zp
    b = rhs.astype(np.float64) - rhs_zp
    if adj_x:
        a = np.swapaxes(a, -1, -2)
    if adj_y:
        b = np.swapaxes(b, -1, -2)
    acc = np.rint(a @ b).astype(np.int64)  # exact: |products| <= 2**32, fewer than 2**20 terms
    if lhs.dtype == np.int16:
        r = qu.multiply_by_quantized_multiplier_int64(acc, multiplier, shift)
    else:
        r = qu.multiply_by_quantized_multiplier(qu.wrap(acc, 32), multiplier, shift)
    info = np.iinfo(lhs.dtype)
    return np.clip(r + output_zp, info.min, info.max).astype(lhs.dtype)


MATRIX_MAX = 1 << 16
"""A prepared MAC operator (:func:`prepare_mac`) keeps its accumulator's matrix up to this many entries."""


def _output_stage(multiplier: np.ndarray, shift: np.ndarray, bits: int, output_zp: int, act_min: int,
                  act_max: int, dtype: np.dtype) -> Callable[[np.ndarray], np.ndarray] | None:
    """:func:`requantize_acc` (then the cast to ``dtype``) with its per-element constants derived once, in
    place on the int64 accumulators (their last axis the constants' length); None where that function
    takes a case this form leaves out (a shift of 32 or more, a multiplier of INT32_MIN, an int64 overload
    shift above 14)."""
    m = np.asarray(multiplier, np.int64)
    sh = np.asarray(shift, np.int64)
    lo, hi, ozp = int(act_min), int(act_max), int(output_zp)
    if bits == 64:
        red = np.where(m < 0x7FFF0000, (m + (1 << 15)) >> 16, np.int64(0x7FFF))
        total = 15 - sh
        if (total < 1).any():
            return None
        rnd = np.int64(1) << (total - 1)

        def scale(acc: np.ndarray) -> np.ndarray:
            acc *= red
            acc += rnd
            acc >>= total
            return qu.wrap32_inplace(acc)
    else:
        left, right = np.maximum(sh, 0), np.maximum(-sh, 0)
        if (right >= 32).any() or (m == -(1 << 31)).any():
            return None
        any_left, all_right = bool(left.any()), bool((right > 0).all())
        half = (np.int64(1) << right) >> 1
        some_right = right > 0
        # multipliers above 2**30 and right shifts: both roundings as one shift (see
        # pymli.tflm.quant_util.mbqm_inplace): floor((x*m + 2**30 + (half - [x < 0]) * 2**31) / 2**(31+e))
        fused = all_right and bool((m > (1 << 30)).all())
        nudge, total = (np.int64(1) << 30) + (half << 31), 31 + right

        def scale(acc: np.ndarray) -> np.ndarray:
            if any_left:
                acc <<= left
                qu.wrap32_inplace(acc)
            acc *= m  # SaturatingRoundingDoublingHighMul without its INT32_MIN * INT32_MIN case
            if fused:
                t = acc >> 63
                t <<= 31
                acc += t
                acc += nudge
                acc >>= total
                return acc
            acc += 1 << 30
            acc >>= 31
            neg = acc < 0  # RoundingDivideByPOT: ties away from zero
            if not all_right:
                neg &= some_right
            acc += half
            acc -= neg
            acc >>= right
            return acc

    def stage(acc: np.ndarray) -> np.ndarray:
        acc = scale(acc)
        if ozp:
            acc += ozp
        np.maximum(acc, lo, out=acc)
        np.minimum(acc, hi, out=acc)
        return acc.astype(dtype)
    return stage


def _gather_form(mat: np.ndarray, nch: int) -> tuple[np.ndarray, np.ndarray, float]:
    """The matrix ``mat`` (n_in, C) of :func:`prepare_mac` as :func:`pymli.kernels._jit_requant.mac_gather`
    takes it: per block of ``G`` consecutive columns (within one output position's ``nch`` channels) the
    rows that any of them reads (ascending, padded with rows of zero weights to the longest block) and the
    block's weights there. ``G``: 1 or the divisor of ``nch`` (8 or more: the compiled sums vectorise along
    a block) of the lowest cost per column, ``T_G * (0.08 + 3 / G)`` against ``0.63 * T_1`` (``T_G``: the
    longest block's row count; ns per term measured here).

    Returns:
        ``(idx, w, ns)``: (B, T) uint32 rows, (B, T, G) int32 weights (``B * G = C``), the estimated time of
        the sums per sample in ns.
    """
    nz = mat != 0
    n_in, n_cols = mat.shape

    def rows(g: int) -> int:
        return max(int(nz.reshape(n_in, -1, g).any(2).sum(0).max(initial=0)), 1)
    g, cost = 1, 0.63 * rows(1)
    for d in range(8, nch + 1):
        if nch % d == 0 and rows(d) * (0.08 + 3 / d) < cost:
            g, cost = d, rows(d) * (0.08 + 3 / d)
    t = rows(g)
    blocks = mat.reshape(n_in, -1, g)
    order = np.argsort(~nz.reshape(n_in, -1, g).any(2), axis=0, kind="stable")[:t]  # (T, B)
    w = np.take_along_axis(blocks, order[:, :, None], 0)  # (T, B, G)
    return (np.ascontiguousarray(order.T, np.uint32), np.ascontiguousarray(w.transpose(1, 0, 2), np.int32),
            cost * n_cols)


def _dense_pays(n_in: int, n_cols: int, gather_ns: float) -> bool:
    """Whether :func:`prepare_mac`'s compiled step takes the float64 matrix product (BLAS; ~0.12 ns per
    matrix entry and ~1.6 us more per call than :func:`_gather_form`'s sums, measured here) over the sparse
    sums estimated at ``gather_ns``: matrices whose columns read most of the input."""
    return 1600 + 0.12 * n_in * n_cols < gather_ns


def prepare_mac(acc: Callable[[np.ndarray], np.ndarray], x_shape: tuple[int, ...], x_dtype: np.dtype,
                out_shape: tuple[int, ...], *, input_zp: int, bias: np.ndarray | None, bits: int,
                multiplier: npt.ArrayLike,
                shift: npt.ArrayLike, output_zp: int, act_min: int, act_max: int
                ) -> Callable[[np.ndarray], np.ndarray] | None:
    """A small convolution-like operator prepared as one sparse matrix product: its accumulators are a linear
    map of the input minus its zero point, whose matrix is ``acc`` (the kernel's own exact sums) of the basis
    vectors; the zero point and the bias become one correction per output element, the output stage's
    constants are derived once (:func:`_output_stage`). With the JIT on, one compiled call per step
    (:func:`pymli.kernels._jit_requant.mac_gather`: the matrix's nonzero entries per output, int64 sums, the
    output stage; :func:`_gather_form`), or for a dense matrix (:func:`_dense_pays`) the float64 matrix
    product and the compiled output stage (:func:`~pymli.kernels._jit_requant.mac_stage`); with the JIT off
    the float64 product and the NumPy output stage.

    Exact: each matrix entry is one filter tap (``|w| <= 2**7``) or a sum of a few, and the products' sums
    are checked below ``2**53`` here, so the float64 product is the integer sum (and the int64 sums cannot
    overflow); the int32 accumulator wraps modulo 2**32 whatever the order of its terms (one wrap of the
    exact sum), skipped where the sums' bound stays in the int32 range.

    Args:
        acc: ``acc(xs) -> int64 accumulators`` of float64 inputs ``xs`` (N, ...) (the input minus its zero point).
        x_shape: the input's shape (its leading axis the batch). x_dtype: int8 or int16.
        out_shape: the output's shape (the matrix's size is checked before the probe).
        input_zp: the zero point the kernel subtracts (0 on the 16x8 paths).
        bias: the constant bias (channel last) or None.
        bits: the accumulator's width (32 or 64).
        multiplier: per-channel multipliers. shift: per-channel shifts.
        output_zp: the zero point added (0 on the 16x8 paths). act_min: clamp low. act_max: clamp high.

    Returns:
        ``mac(x) -> output`` for inputs of ``x_shape[1:]`` per sample (any batch), or None (a matrix over
        :data:`MATRIX_MAX` entries or none, sums that could leave float64's exact range, an output stage case left
        out).
    """
    per = tuple(x_shape[1:])
    n_in = int(np.prod(per, dtype=np.int64))
    n_out = int(np.prod(out_shape[1:], dtype=np.int64))
    if not 0 < n_in * n_out <= MATRIX_MAX:  # the probe's batch is n_in samples of n_out sums
        return None
    probe = acc(np.eye(n_in, dtype=np.float64).reshape((n_in,) + per))
    out_per = probe.shape[1:]
    mat = probe.reshape(n_in, -1)
    if not 0 < mat.size <= MATRIX_MAX or not out_per or out_per[-1] != np.size(multiplier):
        return None
    col = np.abs(mat).sum(0)
    x_max = (1 << (8 * np.dtype(x_dtype).itemsize - 1)) + abs(int(input_zp))
    if int(col.max()) * x_max >= 1 << 53:
        return None
    nch = out_per[-1]
    reps = mat.shape[1] // nch
    corr = -int(input_zp) * mat.sum(0)
    if bias is not None:
        corr = corr + np.tile(np.asarray(bias, np.int64).reshape(-1), reps)
    wrap = bits == 32 and (int(col.max(initial=0)) * x_max + int(np.abs(corr).max(initial=0)) >= 1 << 31)
    m_all = np.tile(np.broadcast_to(np.asarray(multiplier, np.int64), (nch,)), reps)
    s_all = np.tile(np.broadcast_to(np.asarray(shift, np.int64), (nch,)), reps)
    dt = np.dtype(x_dtype)
    stage = _output_stage(m_all, s_all, bits, output_zp, act_min, act_max, dt)
    if stage is None:
        return None
    matf = mat.astype(np.float64)
    matf.flags.writeable = False
    # the compiled step (:func:`pymli.kernels._jit_requant.mac_gather`, the same values) takes multipliers in
    # [0, 2**31) (the stage above has refused the cases its mbqm32 / mbqm64 would not compute: shifts,
    # INT32_MIN) and the matrix as its nonzero entries (int32: each one tap or a sum of a few)
    jit_ok = bool((m_all >= 0).all()) and bool((m_all < 1 << 31).all()) and int(np.abs(mat).max()) < 1 << 31
    idx, wts, gather_ns = _gather_form(mat, nch)
    chan = np.stack([corr, m_all, s_all]).astype(np.int64)
    par = np.array([bits == 64, output_zp, act_min, act_max, n_in], np.int64)
    n_cols = mat.shape[1]

    def numpy_step(x: np.ndarray) -> np.ndarray:
        n = x.shape[0]
        a = np.matmul(x.reshape(n, n_in), matf).astype(np.int64)
        a += corr
        return stage(qu.wrap32_inplace(a) if wrap else a).reshape((n,) + out_per)

    if _dense_pays(n_in, n_cols, gather_ns):
        def dense(x: np.ndarray) -> np.ndarray:
            jit = _jit.compiled("_jit_requant") if jit_ok else None
            if jit is None:
                return numpy_step(x)
            n = x.shape[0]
            out = np.empty((n,) + out_per, dt)
            jit.mac_stage(np.matmul(x.reshape(n, n_in), matf), chan, par, out.reshape(n, n_cols))
            return out
        return dense
    entry: list = []  # the compiled step's native entry (:func:`pymli.kernels._jit.entry`), made on its first call
    empty, on = np.empty, _jit.is_on if jit_ok else (lambda: False)
    one_in, one_out = (1,) + per, (1,) + out_per

    def compiled_step() -> Callable[..., object] | None:
        mod = _jit.compiled("_jit_requant")
        if mod is None:
            return None
        entry.append(_jit.entry(mod, "mac_gather", np.zeros(one_in, dt), idx, wts, chan, par, np.empty(one_out, dt)))
        return entry[0]

    def mac(x: np.ndarray) -> np.ndarray:
        # the native entry takes exactly its arrays' types: a C-contiguous input of dt, x_shape[1:] per sample
        s = x.shape
        if on() and x.dtype is dt and (s == one_in or s[1:] == per) and x.flags.c_contiguous:
            step = entry[0] if entry else compiled_step()
            if step is not None:
                out = empty(one_out if s[0] == 1 else s[:1] + out_per, dt)
                step(x, idx, wts, chan, par, out)
                return out
        return numpy_step(x)
    return mac
