"""TFLM reference MEAN / SUM (int8, int16) and AVERAGE_POOL_2D / MAX_POOL_2D (int8, int16)."""

from __future__ import annotations

from typing import Callable

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..kernels import _jit
from . import quant_util as qu
from .conv import conv_out_geometry
from .quant_util import quantize_multiplier

__all__ = ["mean_sum_params", "mean_or_sum", "prepare_mean_or_sum", "average_pool", "max_pool"]


def mean_sum_params(input_scale: float, output_scale: float) -> tuple[int, int]:
    """TFLM MEAN / SUM Prepare: ``QuantizeMultiplier(double(si) / double(so))``."""
    return quantize_multiplier(float(np.float32(input_scale)) / float(np.float32(output_scale)))


def mean_or_sum(x: np.ndarray, axes: np.ndarray, *, input_zp: int, output_zp: int, multiplier: int,
                shift: int, keep_dims: bool, compute_sum: bool = False) -> np.ndarray:
    """TFLM ``QuantizedMeanOrSum`` with an int32 accumulator.

    For MEAN the multiplier is divided by the element count ``n``: ``k = min(floor(log2 n), 32,
    31 + shift)``, ``multiplier = (multiplier << k) // n``, ``shift -= k``.

    Args:
        x: int8 / int16 input.
        axes: reduction axes (negative allowed, repeats ignored).
        input_zp: input zero point. output_zp: output zero point.
        multiplier: :func:`mean_sum_params`. shift: its shift.
        keep_dims: keep reduced axes with extent 1.
        compute_sum: SUM instead of MEAN.

    Returns:
        the reduction in ``x``'s dtype.
    """
    ax = tuple(sorted({int(a) % x.ndim for a in np.asarray(axes).reshape(-1)}))
    n = int(np.prod([x.shape[a] for a in ax])) if ax else 1
    s = qu.wrap(x.astype(np.int64).sum(axis=ax, keepdims=keep_dims), 32)
    m, sh = int(multiplier), int(shift)
    if not compute_sum and n > 0:
        k = min(n.bit_length() - 1, 32, 31 + sh)
        m = qu.wrap(np.int64((m << k) // n), 32).item()
        sh = sh - k
    shifted = qu.wrap(s - input_zp * n, 32)
    out = qu.multiply_by_quantized_multiplier(shifted, m, sh) + output_zp
    info = np.iinfo(x.dtype)
    return np.clip(out, info.min, info.max).astype(x.dtype)


def prepare_mean_or_sum(shape: tuple[int, ...], dtype: np.dtype, axes: np.ndarray, *, input_zp: int,
                        output_zp: int, multiplier: int, shift: int, keep_dims: bool, compute_sum: bool = False
                        ) -> Callable[[np.ndarray], np.ndarray]:
    """:func:`mean_or_sum` for inputs of one shape and constant axes: the axes, the element count and the
    count-divided multiplier derived once, a call doing the sum and the requantisation (the same values).

    The int32 accumulator wraps modulo 2**32 whatever the order of its terms: one wrap of the exact int64
    sum minus ``input_zp * n``, skipped where ``n * max|x - zp|`` stays in the int32 range.

    Args:
        shape: the input's shape. dtype: int8 or int16.
        axes: reduction axes (negative allowed, repeats ignored).
        input_zp: input zero point. output_zp: output zero point.
        multiplier: :func:`mean_sum_params`. shift: its shift.
        keep_dims: keep reduced axes with extent 1.
        compute_sum: SUM instead of MEAN.

    Returns:
        ``reduce(x) -> array`` of ``dtype``.
    """
    nd = len(shape)
    ax = tuple(sorted({int(a) % nd for a in np.asarray(axes).reshape(-1)}))
    n = int(np.prod([shape[a] for a in ax])) if ax else 1
    m, sh = int(multiplier), int(shift)
    if not compute_sum and n > 0:
        k = min(n.bit_length() - 1, 32, 31 + sh)
        m = qu.wrap(np.int64((m << k) // n), 32).item()
        sh = sh - k
    info = np.iinfo(dtype)
    lo, hi, zp_n, ozp = int(info.min), int(info.max), int(input_zp) * n, int(output_zp)
    wrap = n * (max(info.max - input_zp, input_zp - info.min)) >= 1 << 31

    # the compiled step (one call, the same values) where the reduced axes of extent above 1 form one block:
    # the input as (before, reduced, after), the output as (before, after); multiplier and shift as its
    # mbqm32 takes them
    big = [a for a in range(nd) if shape[a] != 1]
    red = [a for a in big if a in ax]
    block = not red or big.index(red[-1]) - big.index(red[0]) == len(red) - 1
    jit_ok = block and 0 <= m < 1 << 31 and sh >= -31
    if red:
        n_a = int(np.prod(shape[:red[0]], dtype=np.int64))
        n_b = int(np.prod(shape[red[-1] + 1:], dtype=np.int64))
    else:
        n_a, n_b = int(np.prod(shape, dtype=np.int64)), 1
    shape3 = (n_a, n, n_b) if red else (n_a, 1, 1)
    out_shape = tuple(1 if a in ax else shape[a] for a in range(nd)) if keep_dims else \
        tuple(shape[a] for a in range(nd) if a not in ax)
    shape = tuple(shape)

    def reduce_(x: np.ndarray) -> np.ndarray:
        jit = _jit.compiled("_jit_requant") if jit_ok and x.shape == shape else None
        if jit is not None:
            out = np.empty(out_shape, dtype)
            jit.mean3(x.reshape(shape3), out.reshape(shape3[0], shape3[2]), zp_n, m, sh, ozp, lo, hi)
            return out
        acc = x.sum(axis=ax, keepdims=keep_dims, dtype=np.int64)
        if type(acc) is not np.ndarray:  # a sum over every axis: a 0-d array, for the in-place steps
            acc = np.array(acc)
        if zp_n:
            acc -= zp_n
        return qu.requantize_clamp(acc, m, sh, ozp, lo, hi, dtype, wrap)
    return reduce_


def _pool_windows(x: np.ndarray, k: tuple[int, int], stride: tuple[int, int], same: bool
                  ) -> tuple[np.ndarray, np.ndarray]:
    (oh, ow), (ph, pw) = conv_out_geometry(same, x.shape[1:3], k, stride)
    n, h, w, c = x.shape
    need_h = (oh - 1) * stride[0] + k[0]
    need_w = (ow - 1) * stride[1] + k[1]
    xp = np.zeros((n, max(need_h, ph + h), max(need_w, pw + w), c), np.int64)
    valid = np.zeros(xp.shape[1:3], bool)
    xp[:, ph:ph + h, pw:pw + w] = x
    valid[ph:ph + h, pw:pw + w] = True
    v = sliding_window_view(xp, k, axis=(1, 2))[:, ::stride[0], ::stride[1]][:, :oh, :ow]
    m = sliding_window_view(valid, k)[::stride[0], ::stride[1]][:oh, :ow]
    return v, m  # (N, OH, OW, C, KH, KW), (OH, OW, KH, KW)


def average_pool(x: np.ndarray, *, k: tuple[int, int], stride: tuple[int, int], same: bool,
                 act_min: int, act_max: int) -> np.ndarray:
    """TFLM ``reference_integer_ops::AveragePool``: sum over the in-image taps, divided by their
    count rounding half away from zero (C division), clamped.

    Args:
        x: int8 / int16 NHWC input.
        k: filter (h, w). stride: (h, w). same: SAME padding.
        act_min: clamp low. act_max: clamp high.

    Returns:
        pooled NHWC array of ``x``'s dtype.
    """
    v, m = _pool_windows(x, k, stride, same)
    acc = (v * m[None, :, :, None]).sum(axis=(-2, -1))
    cnt = m.sum(axis=(-2, -1))[None, :, :, None].astype(np.int64)
    num = np.where(acc > 0, acc + cnt // 2, acc - cnt // 2)
    q = np.where(num >= 0, num // cnt, -((-num) // cnt))
    return np.clip(q, act_min, act_max).astype(x.dtype)


def max_pool(x: np.ndarray, *, k: tuple[int, int], stride: tuple[int, int], same: bool,
             act_min: int, act_max: int) -> np.ndarray:
    """TFLM ``reference_integer_ops::MaxPool``: maximum over the in-image taps, clamped.

    Args and Returns as :func:`average_pool`.
    """
    v, m = _pool_windows(x, k, stride, same)
    lo = np.iinfo(x.dtype).min
    mx = np.where(m[None, :, :, None], v, lo).max(axis=(-2, -1))
    return np.clip(mx, act_min, act_max).astype(x.dtype)
