"""Tensor conversion kernels (``mli_hlp_convert_tensor``, ``mli_hlp_convert_tensor_safx``).

Pure functions over NumPy arrays. Quantisation parameters come as 1-D vectors: one value for the
whole array, or one per index of ``axis`` (per-axis SA tensors).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ..arith.convert import dequantize_float, quantize_float, requant_params, requantize

__all__ = ["convert_quantized", "quantize", "dequantize"]


def _along(p: npt.ArrayLike, ndim: int, axis: int | None) -> np.ndarray:
    """A parameter vector shaped to broadcast along ``axis`` of an ``ndim``-d array."""
    v = np.asarray(p, dtype=np.int64).reshape(-1)
    if axis is None or axis < 0 or v.size == 1:
        return v.reshape(()) if v.size == 1 else v
    shape = [1] * ndim
    shape[axis] = v.size
    return v.reshape(shape)


def convert_quantized(x: npt.ArrayLike, out_dtype: npt.DTypeLike, *, wide: bool,
                      in_scale: npt.ArrayLike, in_frac: npt.ArrayLike, in_zp: npt.ArrayLike,
                      out_scale: npt.ArrayLike, out_frac: npt.ArrayLike, out_zp: npt.ArrayLike,
                      axis: int | None = None) -> np.ndarray:
    """Requantise integer data from one FX/SA format to another.

    Args:
        x: int8/int16/int32 array of any shape (input container values).
        out_dtype: output container (int8, int16, int32).
        wide: use the 64-bit accumulator path (an SA_32 container on either side).
        in_scale, in_frac, in_zp: input scale (1 for FX), fractional bits, zero point.
        out_scale, out_frac, out_zp: the same for the output.
        axis: the axis the parameter vectors run along (``None``: one value each).

    Returns:
        Array of ``out_dtype``, same shape as ``x``.
    """
    x = np.asarray(x)
    out_dtype = np.dtype(out_dtype)
    scale, shift = requant_params(np.asarray(in_scale, np.int64).reshape(-1), np.asarray(in_frac, np.int64).reshape(-1),
                                  np.asarray(out_scale, np.int64).reshape(-1), np.asarray(out_frac, np.int64).reshape(-1))
    nd = x.ndim
    r = requantize(x, _along(in_zp, nd, axis), _along(scale, nd, axis), _along(shift, nd, axis),
                   _along(out_zp, nd, axis), wide=wide, out_bits=out_dtype.itemsize * 8)
    return r.astype(out_dtype)


def quantize(x: npt.ArrayLike, out_dtype: npt.DTypeLike, *, scale: npt.ArrayLike, frac_bits: npt.ArrayLike,
             zero_point: npt.ArrayLike, axis: int | None = None) -> np.ndarray:
    """float32 -> FX/SA container values, as the C conversion from ``MLI_EL_FP_32`` does.

    Args:
        x: float32 array.
        out_dtype: int8, int16 or int32 (or float32: a plain copy).
        scale, frac_bits, zero_point: output parameters (scale 1 and zero point 0 for FX).
        axis: axis of per-axis parameter vectors.
    """
    x = np.asarray(x, dtype=np.float32)
    out_dtype = np.dtype(out_dtype)
    if out_dtype.kind == "f":
        return x.astype(out_dtype)
    nd = x.ndim
    q = quantize_float(x, _along(scale, nd, axis), _along(frac_bits, nd, axis), _along(zero_point, nd, axis),
                       out_dtype.itemsize * 8)
    return q.astype(out_dtype)


def dequantize(x: npt.ArrayLike, *, scale: npt.ArrayLike, frac_bits: npt.ArrayLike, zero_point: npt.ArrayLike,
               axis: int | None = None) -> np.ndarray:
    """FX/SA container values -> float32, as the C conversion to ``MLI_EL_FP_32`` does."""
    x = np.asarray(x)
    if x.dtype.kind == "f":
        return x.astype(np.float32)
    nd = x.ndim
    return dequantize_float(x.astype(np.int64), _along(scale, nd, axis), _along(frac_bits, nd, axis),
                            _along(zero_point, nd, axis))
