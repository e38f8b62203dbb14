"""Output geometry and padding of windowed operations, written once for every front end.

Sizes per spatial axis (height or width):

* convolution / pooling: ``out = (in + pad_a + pad_b - ((k - 1) * dilation + 1)) // stride + 1``
  (:func:`conv_out_size`, the formula of :mod:`pymli.kernels.convolution`);
* transpose convolution: ``out = (in - 1) * stride + k - pad_a - pad_b`` (:func:`transpose_out_size`);
* TensorFlow ``SAME``: ``out = ceil(in / stride)``, the total padding split with the extra element
  after (:func:`same_padding`); ``VALID``: no padding.

Padding is always handed to MLI as ``(top, bottom, left, right)``; :func:`pad4` accepts the short
forms users write.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..arith.geometry import conv_out_size, same_padding, transpose_out_size

__all__ = ["Padding", "pair", "pad4", "conv_out_size", "transpose_out_size", "same_padding", "resolve_padding",
           "transpose_same_padding", "transpose_padding_for_output"]

#: padding as users give it: an int (every side), (vertical, horizontal), (top, bottom, left, right),
#: or ``"same"`` / ``"valid"`` (any case)
Padding = int | Sequence[int] | str


def pair(v: int | Sequence[int]) -> tuple[int, int]:
    """``(height, width)`` from an int (both) or a pair.

    Raises:
        ValueError: a sequence that is not of length 2.
    """
    if isinstance(v, (tuple, list)):
        if len(v) != 2:
            raise ValueError(f"{list(v)}: an int or (height, width) expected")
        return int(v[0]), int(v[1])
    return int(v), int(v)  # type: ignore[arg-type]


def pad4(p: int | Sequence[int]) -> tuple[int, int, int, int]:
    """Numeric padding as ``(top, bottom, left, right)``: an int pads every side, a pair is
    (vertical, horizontal).

    Raises:
        ValueError: a sequence of length other than 1, 2 or 4.
    """
    if isinstance(p, (tuple, list)):
        v = tuple(int(i) for i in p)
        if len(v) == 1:
            return v * 4  # type: ignore[return-value]
        if len(v) == 2:
            return v[0], v[0], v[1], v[1]
        if len(v) == 4:
            return v  # type: ignore[return-value]
        raise ValueError(f"padding {v}: give 1, 2 or 4 values")
    q = int(p)  # type: ignore[arg-type]
    return q, q, q, q


def resolve_padding(padding: Padding, in_hw: tuple[int, int], k_hw: tuple[int, int], stride: tuple[int, int],
                    dilation: tuple[int, int] = (1, 1)) -> tuple[int, int, int, int]:
    """Padding as ``(top, bottom, left, right)`` for a window of ``k_hw`` over an ``in_hw`` map.

    Args:
        padding: see :data:`Padding`.
        in_hw, k_hw, stride, dilation: (height, width) pairs.

    Raises:
        ValueError: an unknown padding name or a bad number of values.
    """
    if isinstance(padding, str):
        name = padding.lower()
        if name == "valid":
            return 0, 0, 0, 0
        if name == "same":
            t, b = same_padding(in_hw[0], k_hw[0], stride[0], dilation[0])
            l, r = same_padding(in_hw[1], k_hw[1], stride[1], dilation[1])
            return t, b, l, r
        raise ValueError(f"padding {padding!r}: use an int, (top, bottom, left, right), 'same' or 'valid'")
    return pad4(padding)


def transpose_same_padding(k: int, stride: int) -> tuple[int, int]:
    """Padding ``(before, after)`` of a transpose convolution whose output is ``in * stride``
    (needs ``k >= stride``; the odd element after)."""
    total = max(k - stride, 0)
    return total // 2, total - total // 2


def transpose_padding_for_output(in_size: int, out_size: int, k: int, stride: int, same: bool) -> tuple[int, int]:
    """Padding ``(before, after)`` of a TFLite TRANSPOSE_CONV producing ``out_size`` from ``in_size``.

    TFLite pads as the forward convolution from the output back to the input would: ``n`` =
    ``ceil(out / stride)`` (SAME) or ``(out - k + stride) // stride`` (VALID), total padding
    ``max((n - 1) * stride + k - out, 0)`` with ``before = total // 2``; the rest of the full
    ``(in - 1) * stride + k`` result is cut after (may be negative for inconsistent shapes).
    """
    n = (out_size + stride - 1) // stride if same else (out_size - k + stride) // stride
    total = max((n - 1) * stride + k - out_size, 0)
    before = total // 2
    return before, (in_size - 1) * stride + k - out_size - before
