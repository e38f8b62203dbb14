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

ViewSpec = tuple[tuple[int, ...], tuple[int, ...], int]

_OTHER, _BUFFER, _RESHAPE, _WHOLE = range(4)  # how view() rebuilds a view (cheapest that applies)


def view_spec(t: Tensor) -> ViewSpec:
    """Shape, byte strides and how to rebuild the view of ``t``'s data array, from a checked ``t.view()``.

    Args:
        t: the tensor.

    Returns:
        ``(shape, strides, how)``: ``how`` says whether the view is the data array itself, the whole
        array reshaped, an array on its buffer, or none of these (``t.view()`` again).

    Raises:
        MliError: what :meth:`Tensor.view` raises.
    """
    v = t.view()
    d: Any = t.data
    if not (d.flags.c_contiguous and d.strides[0] == d.itemsize):
        return v.shape, v.strides, _OTHER
    how = _BUFFER
    # A contiguous view of d's buffer (t.view() is built on it) as large as d covers all of it.
    if v.size == d.size and v.dtype == d.dtype and v.flags.c_contiguous and np.shares_memory(v, d):
        how = _WHOLE if v.shape == d.shape else _RESHAPE
    return v.shape, v.strides, how


def view(t: Tensor, spec: ViewSpec) -> np.ndarray:
    """``t.view()`` as :func:`view_spec` validated it (the data array unchanged since).

    Args:
        t: the tensor; spec: its :func:`view_spec`.

    Returns:
        The view on ``t.data`` (``t.data`` itself when the view is the whole array).
    """
    how = spec[2]
    if how == _WHOLE:
        return t.data
    if how == _RESHAPE:
        return t.data.reshape(spec[0])
    if how == _BUFFER:
        d = t.data
        return np.ndarray(spec[0], d.dtype, d, 0, spec[1])
    return t.view()
