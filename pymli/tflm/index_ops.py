"""TFLM reference index / data-movement operators on raw values (no requantisation): ARG_MAX /
ARG_MIN, REDUCE_MAX / REDUCE_MIN, DEPTH_TO_SPACE, SPACE_TO_DEPTH, SPACE_TO_BATCH_ND,
BATCH_TO_SPACE_ND, MIRROR_PAD, GATHER_ND, RESIZE_NEAREST_NEIGHBOR, SELECT_V2, REVERSE_V2,
DYNAMIC_UPDATE_SLICE, BROADCAST_ARGS, EMBEDDING_LOOKUP."""

from __future__ import annotations

import math

import numpy as np

from ..errors import MliError, Status

__all__ = ["arg_min_max", "reduce_min_max", "depth_to_space", "space_to_depth",
           "space_to_batch_nd", "batch_to_space_nd", "mirror_pad", "gather_nd",
           "resize_nearest_neighbor", "resize_bilinear_integer", "select_v2", "reverse_v2",
           "dynamic_update_slice", "broadcast_args", "embedding_lookup"]


def arg_min_max(x: np.ndarray, axis: int, *, is_max: bool, out_dtype: np.dtype | type) -> np.ndarray:
    """TFLM ARG_MAX / ARG_MIN: index of the first extreme value along ``axis``.

    Args:
        x: input. axis: reduced axis. is_max: ARG_MAX. out_dtype: int32 / int64.

    Returns:
        indices with ``axis`` removed.
    """
    f = np.argmax if is_max else np.argmin  # first occurrence, as TFLM's strict comparison
    return f(x, axis=axis % x.ndim).astype(out_dtype)


def reduce_min_max(x: np.ndarray, axes: np.ndarray, *, is_max: bool, keep_dims: bool) -> np.ndarray:
    """TFLM REDUCE_MAX / REDUCE_MIN (raw values; TFLM requires equal input and output quantisation).

    Args:
        x: input. axes: reduction axes. is_max: maximum. keep_dims: keep reduced axes.

    Returns:
        the reduction.
    """
    ax = tuple(sorted({int(a) % x.ndim for a in np.asarray(axes).reshape(-1)}))
    return (np.max if is_max else np.min)(x, axis=ax, keepdims=keep_dims)


def depth_to_space(x: np.ndarray, block: int) -> np.ndarray:
    """NHWC DEPTH_TO_SPACE: depth ``(by, bx, c)`` -> spatial blocks."""
    n, h, w, c = x.shape
    oc = c // (block * block)
    return x.reshape(n, h, w, block, block, oc).transpose(0, 1, 3, 2, 4, 5).reshape(
        n, h * block, w * block, oc)


def space_to_depth(x: np.ndarray, block: int) -> np.ndarray:
    """NHWC SPACE_TO_DEPTH: spatial blocks -> depth ``(by, bx, c)``."""
    n, h, w, c = x.shape
    return x.reshape(n, h // block, block, w // block, block, c).transpose(0, 1, 3, 2, 4, 5).reshape(
        n, h // block, w // block, block * block * c)


def space_to_batch_nd(x: np.ndarray, block: np.ndarray, paddings: np.ndarray, *, pad_value: int) -> np.ndarray:
    """SPACE_TO_BATCH_ND (3-D or 4-D, NHWC), padded with ``pad_value``.

    Args:
        x: input (N, H, [W,] C). block: block sizes. paddings: (spatial, 2).
        pad_value: pad value. TFLM micro never initialises it (``SpaceToBatchParams.output_offset``
            in a persistent buffer): the arena's previous content, 0 when fresh.

    Returns:
        (N * prod(block), H', [W',] C).
    """
    b = [int(v) for v in np.asarray(block).reshape(-1)]
    p = np.asarray(paddings, np.int64).reshape(-1, 2)
    xp = np.pad(x, [(0, 0)] + [tuple(r) for r in p.tolist()] + [(0, 0)], constant_values=pad_value)
    n, c = xp.shape[0], xp.shape[-1]
    sp = xp.shape[1:-1]
    shape = [n]
    for s, bb in zip(sp, b):
        shape += [s // bb, bb]
    y = xp.reshape(*shape, c)
    k = len(b)
    order = [2 + 2 * i for i in range(k)] + [0] + [1 + 2 * i for i in range(k)] + [1 + 2 * k]
    return y.transpose(order).reshape(n * math.prod(b), *[s // bb for s, bb in zip(sp, b)], c)


def batch_to_space_nd(x: np.ndarray, block: np.ndarray, crops: np.ndarray) -> np.ndarray:
    """BATCH_TO_SPACE_ND (inverse of :func:`space_to_batch_nd`, then cropped).

    Args:
        x: input (N * prod(block), H, [W,] C). block: block sizes. crops: (spatial, 2).

    Returns:
        (N, H * b - crops, ..., C).
    """
    b = [int(v) for v in np.asarray(block).reshape(-1)]
    cr = np.asarray(crops, np.int64).reshape(-1, 2)
    k = len(b)
    nb = x.shape[0] // math.prod(b)
    sp = x.shape[1:-1]
    c = x.shape[-1]
    y = x.reshape(*b, nb, *sp, c)
    order = [k]
    for i in range(k):
        order += [k + 1 + i, i]
    order += [2 * k + 1]
    y = y.transpose(order).reshape(nb, *[s * bb for s, bb in zip(sp, b)], c)
    sl = [slice(None)] + [slice(int(a), y.shape[1 + i] - int(z)) for i, (a, z) in enumerate(cr)]
    return y[tuple(sl)]


def mirror_pad(x: np.ndarray, paddings: np.ndarray, *, symmetric: bool) -> np.ndarray:
    """MIRROR_PAD: REFLECT (edge not repeated) or SYMMETRIC (edge repeated)."""
    p = np.asarray(paddings, np.int64).reshape(-1, 2)
    return np.pad(x, [tuple(r) for r in p.tolist()], mode="symmetric" if symmetric else "reflect")


def gather_nd(x: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """GATHER_ND: ``indices[..., k]`` index the first ``k`` axes of ``x``.

    Raises:
        MliError: an index out of range (TFLM fails the Invoke).
    """
    idx = np.asarray(indices, np.int64)
    k = idx.shape[-1]
    if (idx < 0).any() or (idx >= np.array(x.shape[:k])).any():
        raise MliError(Status.ARGUMENT_ERROR, "GATHER_ND index out of range")
    return x[tuple(np.moveaxis(idx, -1, 0))]


def _nearest(out_size: int, in_size: int, align: bool, half: bool) -> np.ndarray:
    f = np.float32
    scale = f(in_size - 1) / f(out_size - 1) if align and out_size > 1 else f(in_size) / f(out_size)
    off = f(0.5) if half else f(0.0)
    v = ((np.arange(out_size, dtype=f) + off) * f(scale)).astype(f)
    if align:
        r = np.floor(np.abs(v).astype(np.float64) + 0.5) * np.sign(v)  # TfLiteRound
    else:
        r = np.floor(v.astype(np.float64))
    r = np.minimum(r.astype(np.int64), in_size - 1)
    return np.maximum(r, 0) if half else r


def resize_nearest_neighbor(x: np.ndarray, size: tuple[int, int], *, align_corners: bool,
                            half_pixel_centers: bool) -> np.ndarray:
    """RESIZE_NEAREST_NEIGHBOR (NHWC), TFLM's ``GetNearestNeighbor`` in float32.

    Args:
        x: NHWC input. size: output (h, w). align_corners: option. half_pixel_centers: option.

    Returns:
        NHWC output.
    """
    ys = _nearest(size[0], x.shape[1], align_corners, half_pixel_centers)
    xs = _nearest(size[1], x.shape[2], align_corners, half_pixel_centers)
    return x[:, ys][:, :, xs]


def _cdiv(a: np.ndarray, b: int) -> np.ndarray:
    """C integer division (truncation toward zero) of an int64 array by a positive int."""
    return np.where(a >= 0, a // b, -((-a) // b))


def _interp(n_out: int, n_in: int, align: bool, half: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    s10 = ((1 << 10) * n_in + n_out // 2) // n_out
    if align and n_out > 1:
        s10 = ((1 << 10) * (n_in - 1) + (n_out - 1) // 2) // (n_out - 1)
    v = np.arange(n_out, dtype=np.int64)
    sv = v * s10 + s10 // 2 - (1 << 9) if half else v * s10
    lo = np.maximum(_cdiv(sv, 1 << 10), 0)
    hi = np.minimum(_cdiv(sv + (1 << 10) - 1, 1 << 10), n_in - 1)
    return sv, lo, hi


def resize_bilinear_integer(x: np.ndarray, size: tuple[int, int], *, align_corners: bool,
                            half_pixel_centers: bool) -> np.ndarray:
    """TFLM ``reference_ops::ResizeBilinearInteger`` (int8 / int16 NHWC): 10-bit fixed-point
    coordinates, 20-bit weighted sum, rounded half away from zero (C division).

    Args:
        x: NHWC input. size: output (h, w). align_corners: option. half_pixel_centers: option.

    Returns:
        NHWC output of ``x``'s dtype.
    """
    iy, y0, y1 = _interp(size[0], x.shape[1], align_corners, half_pixel_centers)
    ix, x0, x1 = _interp(size[1], x.shape[2], align_corners, half_pixel_centers)
    fy = (iy - (y0 << 10))[None, :, None, None]
    fx = (ix - (x0 << 10))[None, None, :, None]
    v = x.astype(np.int64)
    ll = v[:, y0][:, :, x0] * ((1 << 10) - fy) * ((1 << 10) - fx)
    lu = v[:, y1][:, :, x0] * fy * ((1 << 10) - fx)
    rl = v[:, y0][:, :, x1] * ((1 << 10) - fy) * fx
    ru = v[:, y1][:, :, x1] * fy * fx
    o = ll + lu + rl + ru
    r = np.where(o > 0, o + (1 << 19), o - (1 << 19))
    return _cdiv(r, 1 << 20).astype(x.dtype)


def select_v2(cond: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """SELECT / SELECT_V2 with broadcasting (raw values)."""
    return np.where(cond.astype(bool), a, b).astype(a.dtype)


def reverse_v2(x: np.ndarray, axes: np.ndarray) -> np.ndarray:
    """TFLM REVERSE_V2: ``x`` reversed along ``axes`` (TFLM requires them contiguous).

    Args:
        x: input of any dtype. axes: int32 axes (negative counts from the end).

    Returns:
        the reversed array.

    Raises:
        MliError: an axis out of range, repeated, or axes not contiguous.
    """
    ax = sorted(int(a) + (x.ndim if int(a) < 0 else 0) for a in np.asarray(axes).reshape(-1))
    if not ax or ax[0] < 0 or ax[-1] >= x.ndim or ax != list(range(ax[0], ax[-1] + 1)):
        raise MliError(Status.ARGUMENT_ERROR, f"REVERSE_V2 axes {ax} for rank {x.ndim}: TFLM takes "
                       "distinct contiguous axes")
    return np.flip(x, axis=tuple(ax)).copy()


def dynamic_update_slice(x: np.ndarray, update: np.ndarray, start: np.ndarray) -> np.ndarray:
    """TFLM DYNAMIC_UPDATE_SLICE: ``x`` with ``update`` written at ``start``, each start index
    clamped into ``[0, x.shape[i] - update.shape[i]]``.

    Args:
        x: operand. update: same dtype and rank, no dimension larger than ``x``'s.
        start: int32 / int64 start indices, one per dimension.

    Returns:
        the updated copy of ``x``.

    Raises:
        MliError: rank, dtype or size mismatch.
    """
    st = np.asarray(start, np.int64).reshape(-1)
    if (update.dtype != x.dtype or update.ndim != x.ndim or st.size != x.ndim
            or any(u > d for u, d in zip(update.shape, x.shape))):
        raise MliError(Status.ARGUMENT_ERROR, f"DYNAMIC_UPDATE_SLICE update {update.shape} "
                       f"{update.dtype} into {x.shape} {x.dtype} at {st.size} indices")
    lo = np.clip(st, 0, np.asarray(x.shape) - np.asarray(update.shape))
    out = x.copy()
    out[tuple(slice(int(b), int(b) + u) for b, u in zip(lo, update.shape))] = update
    return out


def broadcast_args(s1: np.ndarray, s2: np.ndarray) -> np.ndarray:
    """TFLM BROADCAST_ARGS: the broadcast shape of two int32 / int64 shape vectors.

    Args:
        s1: first shape (1-D). s2: second shape (same dtype).

    Returns:
        the broadcast shape, ``s1``'s dtype, length ``max(len(s1), len(s2))``.

    Raises:
        MliError: shapes that do not broadcast (TFLM aborts on them).
    """
    a, b = np.asarray(s1).reshape(-1), np.asarray(s2).reshape(-1)
    n = max(a.size, b.size)
    a1 = np.concatenate([np.ones(n - a.size, a.dtype), a])
    b1 = np.concatenate([np.ones(n - b.size, b.dtype), b])
    if ((a1 != b1) & (a1 != 1) & (b1 != 1)).any():
        raise MliError(Status.ARGUMENT_ERROR, f"BROADCAST_ARGS: {a.tolist()} and {b.tolist()} do "
                       "not broadcast")
    return np.where(a1 == 1, b1, a1).astype(a.dtype)


def embedding_lookup(ids: np.ndarray, values: np.ndarray, *, scale: float | None = None
                     ) -> np.ndarray:
    """TFLM EMBEDDING_LOOKUP: the rows ``values[ids]``; with ``scale`` (int8 values, float32
    output, the hybrid kernel) each row dequantised as ``float(v) * scale`` in float32.

    Args:
        ids: int32 row indices (1-D). values: table, rank >= 2.
        scale: per-tensor float32 scale of an int8 table for a float32 output, else None.

    Returns:
        array of shape ``(len(ids),) + values.shape[1:]``.

    Raises:
        MliError: an index out of range (TFLM's Eval fails).
    """
    idx = np.asarray(ids, np.int64).reshape(-1)
    if ((idx < 0) | (idx >= values.shape[0])).any():
        raise MliError(Status.ARGUMENT_ERROR, f"EMBEDDING_LOOKUP index out of [0, {values.shape[0]})")
    rows = values[idx]
    if scale is None:
        return rows
    return rows.astype(np.float32) * np.float32(scale)  # float32 product as micro_utils Dequantize
