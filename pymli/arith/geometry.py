"""Output-size formulas of MLI's sliding-window kernels (conv, pooling, transpose conv).

Plain integer arithmetic on Python ints, shared by the checks (``mli_chk_*`` compare the output
shape against these), the kernels and the front ends. One formula per kind of window, written once.
"""

from __future__ import annotations

__all__ = ["effective_kernel", "conv_out_size", "pool_out_size", "transpose_out_size", "same_padding", "ceil_div"]


def effective_kernel(k: int, dilation: int = 1) -> int:
    """Extent of a dilated kernel: ``(k - 1) * dilation + 1``.

    Args:
        k: kernel length along one axis.
        dilation: dilation factor (1: none).

    Returns:
        The number of input samples the kernel spans.
    """
    return (k - 1) * dilation + 1


def conv_out_size(in_size: int, k: int, stride: int, pad_a: int, pad_b: int, dilation: int = 1) -> int:
    """Output length of a convolution axis: ``(in + pads - effective_k) // stride + 1``.

    Args:
        in_size: input length; k: kernel length; stride: step (> 0);
        pad_a, pad_b: padding before and after; dilation: dilation factor.

    Returns:
        The output length (may be <= 0 when the padded input is shorter than the kernel).
    """
    return (in_size + pad_a + pad_b - effective_kernel(k, dilation)) // stride + 1


def pool_out_size(in_size: int, kernel: int, stride: int, pad_before: int, pad_after: int) -> int:
    """Output length of a pooling axis (a convolution axis without dilation).

    Args:
        in_size: input length; kernel: window length; stride: step (> 0);
        pad_before, pad_after: padding.

    Returns:
        ``(in + pads - kernel) // stride + 1``.
    """
    return conv_out_size(in_size, kernel, stride, pad_before, pad_after)


def transpose_out_size(in_size: int, k: int, stride: int, pad_a: int, pad_b: int) -> int:
    """Output length of a transpose convolution axis, as ``mli_chk_transpose_conv2d_hwcn`` expects it.

    Args:
        in_size: input length; k: kernel length; stride: step; pad_a, pad_b: padding.

    Returns:
        ``(in - 1) * stride + k - pad_a - pad_b``.
    """
    return (in_size - 1) * stride + 1 + (k - pad_a - 1) + (k - pad_b - 1) - k + 1


def same_padding(in_size: int, k: int, stride: int, dilation: int = 1) -> tuple[int, int]:
    """TensorFlow ``SAME`` padding of one axis: output ``ceil(in / stride)``, the odd pixel after.

    Args:
        in_size: input length; k: kernel length; stride: step (> 0); dilation: dilation factor.

    Returns:
        (padding before, padding after).
    """
    total = max((ceil_div(in_size, stride) - 1) * stride + effective_kernel(k, dilation) - in_size, 0)
    return total // 2, total - total // 2


def ceil_div(a: int, b: int) -> int:
    """``ceil(a / b)`` for Python ints with ``b > 0`` (exact, no float).

    Args:
        a: numerator; b: positive denominator.

    Returns:
        The smallest integer ``q`` with ``q * b >= a``.
    """
    return -(-a // b)
