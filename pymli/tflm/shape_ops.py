"""TFLM reference PAD / PADV2, STRIDED_SLICE, SLICE, CONCATENATION: index arithmetic only."""

from __future__ import annotations

import numpy as np

from ..errors import MliError, Status

__all__ = ["pad", "strided_slice", "slice_", "concatenation"]


def pad(x: np.ndarray, paddings: np.ndarray, *, value: int | float) -> np.ndarray:
    """TFLM PAD / PADV2: constant padding (PAD pads with the output zero point).

    Args:
        x: input of any dtype, rank <= 5.
        paddings: int array (rank, 2): before / after per axis.
        value: the pad value (PADV2's constant input, or the zero point).

    Returns:
        padded array of ``x``'s dtype.

    Raises:
        MliError: paddings shape or negative padding.
    """
    p = np.asarray(paddings, np.int64).reshape(-1, 2)
    if p.shape[0] != x.ndim or (p < 0).any():
        raise MliError(Status.BAD_FUNC_CFG, f"paddings {p.tolist()} for shape {x.shape}")
    return np.pad(x, [tuple(r) for r in p.tolist()], constant_values=value)


def strided_slice(x: np.ndarray, begin: np.ndarray, end: np.ndarray, strides: np.ndarray, *,
                  begin_mask: int = 0, end_mask: int = 0, shrink_axis_mask: int = 0,
                  ellipsis_mask: int = 0, new_axis_mask: int = 0,
                  offset: bool = False) -> np.ndarray:
    """TFLM ``reference_ops::StridedSlice`` (``StartForAxis`` / ``StopForAxis`` clamping).

    Args:
        x: input of any dtype.
        begin: int32 (rank,). end: int32 (rank,). strides: int32 (rank,), non-zero.
        begin_mask: bit i: ignore begin[i]. end_mask: bit i: ignore end[i].
        shrink_axis_mask: bit i: take one element and drop axis i.
        ellipsis_mask: unsupported (must be 0), as in TFLM micro.
        new_axis_mask: unsupported (must be 0), as in TFLM micro.
        offset: ``end`` is relative to ``begin``.

    Returns:
        the slice (shrunk axes removed).

    Raises:
        MliError: unsupported masks, zero stride or size mismatch.
    """
    b = np.asarray(begin, np.int64).reshape(-1)
    e = np.asarray(end, np.int64).reshape(-1)
    s = np.asarray(strides, np.int64).reshape(-1)
    if ellipsis_mask or new_axis_mask:
        raise MliError(Status.NOT_SUPPORTED, "ellipsis / new axis masks")
    if not (b.size == e.size == s.size <= x.ndim) or (s == 0).any():
        raise MliError(Status.BAD_FUNC_CFG, f"begin {b} end {e} strides {s} for {x.shape}")
    out = x
    keep = []
    for ax in range(x.ndim):
        dim = x.shape[ax]
        if ax >= b.size:
            keep.append(ax)
            continue
        st = int(s[ax])
        start = int(b[ax])
        if begin_mask >> ax & 1:
            start = 0 if st > 0 else dim - 1
        else:
            start = start + dim if start < 0 else start
            start = min(max(start, 0), dim) if st > 0 else min(max(start, -1), dim - 1)
        if shrink_axis_mask >> ax & 1:
            stop = start + 1
        elif end_mask >> ax & 1:
            stop = dim if st > 0 else -1
        else:
            stop = int(e[ax]) + (int(b[ax]) if offset else 0)
            stop = stop + dim if stop < 0 else stop
            stop = min(max(stop, 0), dim) if st > 0 else min(max(stop, -1), dim - 1)
        idx = np.arange(start, stop, st)
        idx = idx[(idx >= 0) & (idx < dim)]
        out = np.take(out, idx, axis=ax)
        if not shrink_axis_mask >> ax & 1:
            keep.append(ax)
    return out.reshape([out.shape[a] for a in keep])


def slice_(x: np.ndarray, begin: np.ndarray, size: np.ndarray) -> np.ndarray:
    """TFLM SLICE: ``size[i] == -1`` means to the end.

    Args:
        x: input. begin: (rank,) starts. size: (rank,) extents or -1.

    Returns:
        the slice.

    Raises:
        MliError: out-of-range slice.
    """
    b = np.asarray(begin, np.int64).reshape(-1)
    z = np.asarray(size, np.int64).reshape(-1)
    sl = []
    for ax in range(x.ndim):
        st = int(b[ax]) if ax < b.size else 0
        n = int(z[ax]) if ax < z.size else -1
        stop = x.shape[ax] if n == -1 else st + n
        if st < 0 or stop > x.shape[ax] or stop < st:
            raise MliError(Status.BAD_FUNC_CFG, f"slice {st}:{stop} of axis {ax} ({x.shape[ax]})")
        sl.append(slice(st, stop))
    return x[tuple(sl)]


def concatenation(xs: list[np.ndarray], axis: int) -> np.ndarray:
    """TFLM CONCATENATION: the micro kernel copies raw values (it requires every int8 / int16 input
    to share the output's scale and zero point).

    Args:
        xs: inputs of one dtype.
        axis: concatenation axis (negative counts from the end).

    Returns:
        the concatenation.
    """
    return np.concatenate(xs, axis=axis % xs[0].ndim)
