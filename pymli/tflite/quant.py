"""TFLite int8 quantisation -> MLI sa8 / sa32 element parameters (offline conversion).

TFLite stores a real ``scale`` (float32) and an integer ``zero_point`` per tensor or per channel.
MLI stores ``scale`` as a 16-bit integer with ``scale_frac_bits``: real = ``scale * 2**-scale_frac_bits``.
"""

from __future__ import annotations

import numpy as np

from ..formats import ElType
from ..models.qparams import QParams
from ..quant import bias_scale, float_to_mli_scale, quantize_values

__all__ = ["float_to_mli_scale", "sa8_qparams", "bias_qparams", "quantize_input", "dequantize_output"]


def sa8_qparams(scale: np.ndarray, zero_point: np.ndarray, dim: int = -1) -> QParams:
    """sa8 parameters from TFLite ``scale`` / ``zero_point`` arrays (per tensor if one value).

    Args:
        scale: float scale(s); zero_point: int zero point(s) (empty: 0); dim: MLI per-axis dimension
            when there are several scales.

    Raises:
        ValueError: a scale MLI cannot represent (see :func:`pymli.quant.float_to_mli_scale`).
    """
    scale = np.atleast_1d(np.asarray(scale, np.float64))
    zp = np.atleast_1d(np.asarray(zero_point, np.int64)) if np.size(zero_point) else np.zeros(1, np.int64)
    pairs = [float_to_mli_scale(s) for s in scale]
    sc = np.array([p[0] for p in pairs], np.int64)
    sfb = np.array([p[1] for p in pairs], np.int64)
    if scale.size == 1 or dim < 0:
        return QParams.sa(int(zp[0]), int(sc[0]), int(sfb[0]))
    if zp.size == 1:
        zp = np.repeat(zp, scale.size)
    return QParams.sa(zp, sc, sfb, dim)


def bias_qparams(in_q: QParams, w_q: QParams) -> QParams:
    """sa32 bias parameters MLI's ``mli_chk_bias_scale_asym`` accepts: scale = in scale x weights scale.

    See :func:`pymli.quant.bias_scale`; TFLite's int32 bias values are in units of
    ``in_scale * w_scale`` already and stay unchanged.
    """
    sc, sfb = bias_scale(int(in_q.scale), int(in_q.scale_frac_bits), w_q.scale, w_q.scale_frac_bits)
    if w_q.dim >= 0:
        return QParams.sa(np.zeros_like(sc), sc, sfb, 0, ElType.SA_32)
    return QParams.sa(0, int(sc[0]), int(sfb[0]), -1, ElType.SA_32)


def quantize_input(x: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """Float input -> int8 as TFLite's reference QUANTIZE does it at the graph boundary.

    ``round(x / scale) + zero_point``: the quotient in float32 (as TFLite computes it), rounded to
    nearest with ties away from zero (C ``round``, exact: :func:`pymli.quant.quantize_values`),
    saturated to int8. This is the offline boundary conversion of the model, not an MLI kernel.

    Args:
        x: float values, any shape; scale, zero_point: the TFLite input tensor's parameters.

    Returns:
        int8 array of ``x``'s shape.
    """
    v = np.asarray(x, np.float32) / np.float32(scale)
    return quantize_values(v, 1.0, int(zero_point), ElType.SA_8)


def dequantize_output(q: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """int8 -> float32 as TFLite's DEQUANTIZE: ``(q - zero_point) * scale`` in float32.

    Returns:
        float32 array of ``q``'s shape.
    """
    return ((np.asarray(q, np.int64) - int(zero_point)).astype(np.float32) * np.float32(scale)).astype(np.float32)
