"""TFLite int8 quantisation -> MLI sa8 / sa32 element parameters (offline conversion).

TFLite stores a real ``scale`` (float32) and an integer ``zero_point`` per tensor or per channel.
MLI stores ``scale`` as a 16-bit integer with ``scale_frac_bits``: real = ``scale * 2**-scale_frac_bits``.
"""

from __future__ import annotations

import math

import numpy as np

from ..arith.convert import split_scale
from ..formats import ElType
from ..models.qparams import QParams

__all__ = ["float_to_mli_scale", "sa8_qparams", "bias_qparams"]


def float_to_mli_scale(s: float) -> tuple[int, int]:
    """A positive real scale as MLI's ``(scale, scale_frac_bits)`` pair.

    The mantissa is kept to 15 significant bits: ``scale`` lies in ``[2**14, 2**15)`` (a positive
    int16 with its top value bit set) and ``scale_frac_bits = 14 - floor(log2(s))``.
    Rounding: ``scale = round(s * 2**scale_frac_bits)`` to the nearest integer, **ties away from zero**,
    done exactly (a float64 times a power of two is exact, and the tie test compares the exact
    remainder with 1/2). When rounding reaches ``2**15`` the pair becomes ``(2**14, scale_frac_bits - 1)``.
    The relative error is at most ``2**-15``. ``scale_frac_bits`` must fit MLI's int8 field:
    scales outside about ``[2**-113, 2**14]`` raise ``ValueError``.
    """
    s = float(s)
    if not (math.isfinite(s) and s > 0):
        raise ValueError(f"scale {s!r} is not a positive finite number")
    q, sfb = (int(v) for v in split_scale(s, 16))
    if not -128 <= sfb <= 127:
        raise ValueError(f"scale {s!r} needs scale_frac_bits {sfb}, outside MLI's int8 range")
    return q, sfb


def sa8_qparams(scale: np.ndarray, zero_point: np.ndarray, dim: int = -1) -> QParams:
    """sa8 parameters from TFLite ``scale`` / ``zero_point`` arrays (per tensor if one value)."""
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

    The 30-bit product of the two 16-bit scales is brought back to 15 bits by a right shift with
    rounding half up (integer arithmetic), and the shift is taken off ``scale_frac_bits``; TFLite's int32
    bias values are in units of ``in_scale * w_scale`` already and stay unchanged.
    """
    ws = np.atleast_1d(np.asarray(w_q.scale, np.int64))
    wf = np.atleast_1d(np.asarray(w_q.scale_frac_bits, np.int64))
    prod = int(in_q.scale) * ws
    sh = np.zeros_like(prod)
    for i, p in enumerate(prod.tolist()):
        sh[i] = max(0, int(p).bit_length() - 15)
    sc = np.where(sh > 0, (prod + (np.int64(1) << np.maximum(sh - 1, 0))) >> sh, prod)
    over = sc >= (1 << 15)
    sc = np.where(over, sc >> 1, sc)
    sh = sh + over
    sfb = int(in_q.scale_frac_bits) + wf - sh
    if w_q.dim >= 0:
        return QParams.sa(np.zeros_like(sc), sc, sfb, 0, ElType.SA_32)
    return QParams.sa(0, int(sc[0]), int(sfb[0]), -1, ElType.SA_32)
