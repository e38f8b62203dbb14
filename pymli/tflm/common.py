"""Shared TFLM parameter derivations: activation ranges, SAME/VALID padding, dtype limits."""

from __future__ import annotations

import math

import numpy as np

from ..errors import MliError, Status

__all__ = [
    "dtype_range",
    "require_int8",
    "activation_range",
    "compute_out_size",
    "compute_padding",
    "tflite_round",
    "ACT_NONE",
    "ACT_RELU",
    "ACT_RELU_N1_TO_1",
    "ACT_RELU6",
]

ACT_NONE, ACT_RELU, ACT_RELU_N1_TO_1, ACT_RELU6 = 0, 1, 2, 3


def require_int8(x: np.ndarray, what: str) -> None:
    """Refuse a kernel input that is not int8.

    Args:
        x: the input array.
        what: the kernel's name, for the message.

    Raises:
        MliError: TYPE_MISMATCH when ``x`` is not int8.
    """
    if x.dtype != np.int8:
        raise MliError(Status.TYPE_MISMATCH, f"{what} input {x.dtype}")


def dtype_range(dtype: np.dtype | type | str) -> tuple[int, int]:
    """``(min, max)`` of an integer dtype.

    Args:
        dtype: a NumPy integer dtype (int8, int16, int32, ...).

    Returns:
        the inclusive range as Python ints.
    """
    info = np.iinfo(np.dtype(dtype))
    return int(info.min), int(info.max)


def tflite_round(v: float) -> int:
    """``TfLiteRound`` / ``std::round``: nearest, ties away from zero.

    Args:
        v: a finite float.

    Returns:
        the rounded value as a Python int.
    """
    f = math.floor(abs(v))
    n = f + 1 if abs(v) - f >= 0.5 else f
    return int(n) if v >= 0 else -int(n)


def activation_range(act: int, scale: float, zero_point: int,
                     dtype: np.dtype | type | str) -> tuple[int, int]:
    """TFLM ``CalculateActivationRangeQuantized``: the clamp of a fused activation.

    The bounds are ``zero_point + round(v / scale)`` computed in float32 (``Quantize`` in
    kernel_util.cc), intersected with the dtype range.

    Args:
        act: TFLite ``ActivationFunctionType`` (0 none, 1 RELU, 2 RELU_N1_TO_1, 3 RELU6; others
            give the full range, as TFLM does).
        scale: output scale (float32 value).
        zero_point: output zero point.
        dtype: output dtype.

    Returns:
        ``(act_min, act_max)``.
    """
    qmin, qmax = dtype_range(dtype)
    s = np.float32(scale)

    def q(v: float) -> int:
        return int(zero_point) + tflite_round(float(np.float32(v) / s))

    if act == ACT_RELU:
        return max(qmin, q(0.0)), qmax
    if act == ACT_RELU6:
        return max(qmin, q(0.0)), min(qmax, q(6.0))
    if act == ACT_RELU_N1_TO_1:
        return max(qmin, q(-1.0)), min(qmax, q(1.0))
    return qmin, qmax


def compute_out_size(same: bool, size: int, filt: int, stride: int, dilation: int = 1) -> int:
    """TFLM ``ComputeOutSize`` for SAME (``same=True``) or VALID padding.

    Args:
        same: SAME padding if True, VALID otherwise.
        size: input extent.
        filt: filter extent.
        stride: stride.
        dilation: dilation rate.

    Returns:
        the output extent.
    """
    eff = (filt - 1) * dilation + 1
    if same:
        return (size + stride - 1) // stride
    return (size + stride - eff) // stride


def compute_padding(stride: int, dilation: int, size: int, filt: int, out: int) -> tuple[int, int]:
    """TFLM ``ComputePaddingWithOffset``: ``(padding, offset)`` before the first element.

    Args:
        stride: stride.
        dilation: dilation rate.
        size: input extent.
        filt: filter extent.
        out: output extent.

    Returns:
        ``(padding, offset)``: padding at the start; the total is ``2 * padding + offset``.
    """
    eff = (filt - 1) * dilation + 1
    total = max((out - 1) * stride + eff - size, 0)
    return total // 2, total % 2
