"""TFLM reference QUANTIZE (float32 -> int, int -> int requantisation) and DEQUANTIZE."""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..errors import MliError, Status
from ..kernels import _jit
from . import quant_util as qu
from .quant_util import quantize_multiplier

__all__ = ["affine_quantize", "prepare_affine_quantize", "requantize_params", "requantize", "dequantize"]


def affine_quantize(x: np.ndarray, *, scale: float, zero_point: int,
                    out_dtype: np.dtype | type) -> np.ndarray:
    """TFLM ``reference_ops::AffineQuantize``: ``round(x / float32(scale)) + zp`` in float32, ties
    away from zero, clamped to the output type.

    Args:
        x: float32 input.
        scale: output scale (float32 value).
        zero_point: output zero point.
        out_dtype: int8 / int16 / int32.

    Returns:
        array of ``out_dtype``.

    Raises:
        MliError: input not float32.
    """
    if x.dtype != np.float32:
        raise MliError(Status.TYPE_MISMATCH, f"quantize input {x.dtype}")
    q = (x / np.float32(scale)).astype(np.float32)
    r = np.where(q >= 0, np.floor(q.astype(np.float64) + 0.5), -np.floor(-q.astype(np.float64) + 0.5))
    # exact: a float32 plus 0.5 is exact in float64
    info = np.iinfo(np.dtype(out_dtype))
    r = np.clip(r, -2.0**62, 2.0**62).astype(np.int64)
    v = qu.wrap(r, 32) + int(zero_point)
    return np.clip(v, info.min, info.max).astype(out_dtype)


def prepare_affine_quantize(*, scale: float, zero_point: int, out_dtype: np.dtype | type
                            ) -> Callable[[np.ndarray], np.ndarray]:
    """:func:`affine_quantize` with its constants bound and fewer NumPy calls (the same values).

    Ties away from zero as ``trunc(q + copysign(0.5, q))`` in float64 (exact: a float32 plus 0.5 is
    exact in float64; for ``q >= 0`` it is ``floor(q + 0.5)``, for ``q < 0`` ``ceil(q - 0.5)``, which is
    ``-floor(-q + 0.5)``), then the same clamp to ``[-2**62, 2**62]``, int32 wrap, zero point and clamp; with
    the JIT on, one compiled call (:func:`pymli.kernels._jit_requant.quantize_f32`, the same values).

    Args:
        scale: output scale (float32 value). zero_point: output zero point. out_dtype: int8 / int16 / int32.

    Returns:
        ``quantize(x) -> array`` of ``out_dtype`` (float32 input; MliError otherwise, as :func:`affine_quantize`).
    """
    s = np.float32(scale)
    od = np.dtype(out_dtype)
    info = np.iinfo(od)
    lo, hi, zp = int(info.min), int(info.max), int(zero_point)

    def quantize(x: np.ndarray) -> np.ndarray:
        if x.dtype != np.float32:
            raise MliError(Status.TYPE_MISMATCH, f"quantize input {x.dtype}")
        jit = _jit.compiled("_jit_requant")
        if jit is not None:  # one compiled call, the same values
            out = np.empty(x.shape, od)
            jit.quantize_f32(x.reshape(-1), s, out.reshape(-1), zp, lo, hi)
            return out
        q = np.divide(x, s, dtype=np.float32).astype(np.float64)
        if type(q) is not np.ndarray:  # a 0-d input: an array for the in-place steps
            q = np.array(q)
        q += np.copysign(0.5, q)
        np.trunc(q, out=q)
        np.maximum(q, -2.0**62, out=q)
        np.minimum(q, 2.0**62, out=q)
        v = qu.wrap32_inplace(q.astype(np.int64))
        v += zp
        np.maximum(v, lo, out=v)
        np.minimum(v, hi, out=v)
        return v.astype(od)
    return quantize


def requantize_params(input_scale: float, output_scale: float) -> tuple[int, int]:
    """TFLM QUANTIZE Prepare for an integer input: ``QuantizeMultiplier(double(si) / double(so))``."""
    return quantize_multiplier(float(np.float32(input_scale)) / float(np.float32(output_scale)))


def requantize(x: np.ndarray, *, input_zp: int, output_zp: int, multiplier: int, shift: int,
               out_dtype: np.dtype | type) -> np.ndarray:
    """TFLM ``reference_ops::Requantize`` (int8 / int16 / int32 among each other).

    Args:
        x: integer input.
        input_zp: input zero point. output_zp: output zero point.
        multiplier: :func:`requantize_params`. shift: its shift.
        out_dtype: output dtype.

    Returns:
        array of ``out_dtype``.
    """
    od = np.dtype(out_dtype)
    if x.dtype == np.int8 and od == np.uint8 and input_zp + 128 == output_zp \
            and multiplier == 1 << 30 and shift == 1:
        return (x.view(np.uint8) ^ 0x80).astype(np.uint8)
    v = qu.wrap(x.astype(np.int64) - input_zp, 32)
    out = qu.wrap(qu.multiply_by_quantized_multiplier(v, multiplier, shift) + output_zp, 32)
    info = np.iinfo(od)
    return np.clip(out, info.min, info.max).astype(od)


def dequantize(x: np.ndarray, *, scale: float, zero_point: int) -> np.ndarray:
    """TFLM ``reference_ops::Dequantize``: ``float(double(scale) * (x - zp))``.

    Args:
        x: int8 / int16 / int32 input.
        scale: input scale (float32 value, used as a double).
        zero_point: input zero point.

    Returns:
        float32 array.
    """
    return (float(np.float32(scale)) * (x.astype(np.int64) - zero_point).astype(np.float64)
            ).astype(np.float32)
