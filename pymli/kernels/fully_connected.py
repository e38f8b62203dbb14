"""Fully connected layer of MLI (``kernels/common/mli_krn_fully_connected``) as a pure NumPy function.

``out[o] = requant(sum_i (x[i] - in_zp) * w[i, o] + bias[o])`` with the accumulator, bias and
requantisation of the C reference (see :mod:`pymli.arith.requant`). The dot products are an exact
matrix product (float BLAS within its exactness bound, int64 beyond). As in C, the weights
zero-point additives (``-w_zp * sum(x) + in_zp * w_zp * N``) are summed apart and added to the
accumulator with saturation.
"""

from __future__ import annotations

import numpy as np

from ..arith.requant import add_bias, wrap_acc
from .convolution import (
    FxQuant,
    Sa8Quant,
    _eff_offset,
    _max_abs,
    container_bound,
    exact_matmul,
    finish,
)

__all__ = ["fully_connected"]

I64 = np.int64


def fully_connected(x: np.ndarray, w: np.ndarray, bias: np.ndarray, q: FxQuant | Sa8Quant,
                    bounds: tuple[int, int]) -> np.ndarray:
    """``mli_krn_fully_connected_*``.

    Args:
        x: (N_in,) or (..., N_in) input values (container integers). Leading axes are a batch
            (each row is one independent call).
        w: (N_in, M_out) weights.
        bias: (M_out,) bias.
        q: :class:`FxQuant` or :class:`Sa8Quant` (for the ``_ext_bias`` variant pass ``in_zp = 0``).
        bounds: fused-ReLU clamp.

    Returns:
        int64 output values, shape (..., M_out).
    """
    x = np.asarray(x)
    if isinstance(q, Sa8Quant):
        a, b = _eff_offset(q.in_zp), _eff_offset(q.w_zp)
        xb = container_bound(x, a)
        xc = x.astype(np.int16 if xb < (1 << 15) else I64) - a if a else x
    else:
        a = b = 0
        xc, xb = x, container_bound(x)
    # The input is small next to the weights: scanning it can tighten the bound enough for a
    # single float32 product; the weights keep their container bound.
    if xc.size <= w.size // 8:
        # _max_abs works in Python ints: np.abs of an int16 -32768 would wrap to -32768.
        xb = min(xb, _max_abs(xc))
    acc, bound = exact_matmul(xc, w, xb, container_bound(w))
    if b:
        bound = None  # type: ignore[assignment]
        # in_additive + zp_additive: a separate 32-bit sum added with saturation.
        n = x.shape[-1]
        other = wrap_acc(-b * np.asarray(x, dtype=I64).sum(axis=-1, keepdims=True) + q.in_zp * q.w_zp * n, 32)
        acc = add_bias(wrap_acc(acc, 32), other, 32)
    return finish(acc, bias, q, bounds, bound)
