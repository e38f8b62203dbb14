"""Views of a planned capi function (see :mod:`pymli.checks.entry`, "the memo").

A planner validates a tensor's view once (:func:`view_spec`, which runs :meth:`Tensor.view` with
all its checks) and keeps only its shape and byte strides; the runner rebuilds the view from the
tensor's current data array (:func:`view`), whose identity, dtype, length and strides the memo's
snapshot guarantees unchanged. No array is kept by the plan.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import Tensor

__all__ = ["ViewSpec", "view_spec", "view"]

ViewSpec = tuple[tuple[int, ...], tuple[int, ...], bool]


def view_spec(t: Tensor) -> ViewSpec:
    """Shape, byte strides and contiguity of ``t``'s data array, from a checked ``t.view()``.

    Args:
        t: the tensor.

    Returns:
        ``(shape, strides, direct)``; ``direct`` when the view can be built on ``data``'s buffer.

    Raises:
        MliError: what :meth:`Tensor.view` raises.
    """
    v = t.view()
    d: Any = t.data
    return v.shape, v.strides, bool(d.flags.c_contiguous and d.strides[0] == d.itemsize)


def view(t: Tensor, spec: ViewSpec) -> np.ndarray:
    """``t.view()`` as :func:`view_spec` validated it (the data array unchanged since).

    Args:
        t: the tensor; spec: its :func:`view_spec`.

    Returns:
        The view on ``t.data``.
    """
    if spec[2]:
        d = t.data
        return np.ndarray(spec[0], d.dtype, d, 0, spec[1])
    return t.view()
