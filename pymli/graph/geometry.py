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

import numpy as np

from ..arith.geometry import conv_out_size, same_padding, transpose_out_size
from ..errors import MliError, Status
from . import args

__all__ = ["Padding", "pair", "pad4", "conv_out_size", "transpose_out_size", "same_padding", "resolve_padding",
           "transpose_same_padding", "transpose_padding_for_output"]

#: padding as users give it: an int (every side), (vertical, horizontal), (top, bottom, left, right),
#: or ``"same"`` / ``"valid"`` (any case)
Padding = int | Sequence[int] | str


def pair(v: int | Sequence[int], name: str = "value", *, what: str = "geometry", lo: int | None = None,
         hi: int | None = None) -> tuple[int, int]:
    """``(height, width)`` from an int (both) or a pair.

    Args:
        v: an int or a pair of ints; name, what: for the error message; lo, hi: inclusive bounds.

    Returns:
        ``(height, width)`` as Python ints.

    Raises:
        MliError: BAD_FUNC_CFG (a ``ValueError``) for anything but an int or a pair of ints in [lo, hi].
    """
    return args.int_pair(v, name, what=what, lo=lo, hi=hi)


def pad4(p: int | Sequence[int], *, what: str = "padding", hi: int | None = None) -> tuple[int, int, int, int]:
    """Numeric padding as ``(top, bottom, left, right)``: an int pads every side, a pair is
    (vertical, horizontal).

    Args:
        p: an int, or 1, 2 or 4 ints, each >= 0 (and <= ``hi``); what: for the error message.

    Returns:
        ``(top, bottom, left, right)`` as Python ints.

    Raises:
        MliError: BAD_FUNC_CFG (a ``ValueError``) for another type, length or a negative value.
    """
    if isinstance(p, (tuple, list, np.ndarray)):
        v = tuple(args.int_list(p, "padding", what=what, length=(1, 2, 4), lo=0, hi=hi))
        if len(v) == 1:
            return v * 4  # type: ignore[return-value]
        if len(v) == 2:
            return v[0], v[0], v[1], v[1]
        return v  # type: ignore[return-value]
    q = args.integer(p, "padding", what=what, lo=0, hi=hi)
    return q, q, q, q


def resolve_padding(padding: Padding, in_hw: tuple[int, int], k_hw: tuple[int, int], stride: tuple[int, int],
                    dilation: tuple[int, int] = (1, 1)) -> tuple[int, int, int, int]:
    """Padding as ``(top, bottom, left, right)`` for a window of ``k_hw`` over an ``in_hw`` map.

    Args:
        padding: see :data:`Padding`.
        in_hw, k_hw, stride, dilation: (height, width) pairs.

    Returns:
        ``(top, bottom, left, right)``: zeros for ``"valid"``, TensorFlow's SAME split for ``"same"``,
        else :func:`pad4` of the numbers.

    Raises:
        MliError: BAD_FUNC_CFG (a ``ValueError``) for an unknown padding name, a bad number of values
            or a negative one.
    """
    if isinstance(padding, str):
        name = padding.strip().lower()
        if name == "valid":
            return 0, 0, 0, 0
        if name == "same":
            t, b = same_padding(in_hw[0], k_hw[0], stride[0], dilation[0])
            l, r = same_padding(in_hw[1], k_hw[1], stride[1], dilation[1])
            return t, b, l, r
        raise MliError(Status.BAD_FUNC_CFG, f"padding {padding!r}: use an int, (top, bottom, left, right), "
                                            "'same' or 'valid'")
    return pad4(padding)


def transpose_same_padding(k: int, stride: int) -> tuple[int, int]:
    """Padding ``(before, after)`` of a transpose convolution whose output is ``in * stride``
    (needs ``k >= stride``; the odd element after).

    Args:
        k: kernel length of the axis (>= 1); stride: its step (>= 1).

    Returns:
        ``(before, after)``: ``max(k - stride, 0)`` split with the odd element after.
    """
    total = max(k - stride, 0)
    return total // 2, total - total // 2


def transpose_padding_for_output(in_size: int, out_size: int, k: int, stride: int, same: bool) -> tuple[int, int]:
    """Padding ``(before, after)`` of a TFLite TRANSPOSE_CONV producing ``out_size`` from ``in_size``.

    TFLite pads as the forward convolution from the output back to the input would: ``n`` =
    ``ceil(out / stride)`` (SAME) or ``(out - k + stride) // stride`` (VALID), total padding
    ``max((n - 1) * stride + k - out, 0)`` with ``before = total // 2``; the rest of the full
    ``(in - 1) * stride + k`` result is cut after (may be negative for inconsistent shapes).

    Args:
        in_size: input length of the axis; out_size: the TFLite output length; k: kernel length;
        stride: step; same: TFLite SAME padding (else VALID).

    Returns:
        ``(before, after)`` as Python ints.
    """
    n = (out_size + stride - 1) // stride if same else (out_size - k + stride) // stride
    total = max((n - 1) * stride + k - out_size, 0)
    before = total // 2
    return before, (in_size - 1) * stride + k - out_size - before
