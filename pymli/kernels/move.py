"""Data movement as pure NumPy functions (MLI 2.0 ``lib/src/move``, MLI 1.x concat / padding2d).

The MLI move engine reads a source tensor through a virtual view: the source is first extended by
zero padding (``padding_pre`` / ``padding_post`` per source dimension), then cropped (``offset``,
``size``), sub-sampled (``sub_sample_step``) and finally its dimensions are reordered
(``perm_dim[i]`` = source dimension that becomes destination dimension ``i``). For destination
index ``d`` the source coordinate along source dimension ``p = perm[i]`` is::

    s = d[i] * step[p] + offset[p] - pre[p]

and a destination element whose ``s`` falls outside ``[0, shape[p])`` in any dimension is padding.
:func:`move_block` computes that destination block; writing it at ``dst_offset`` with the
destination strides is the caller's job (a kernel never mutates its inputs).

All functions work on raw element containers: the move engine copies memory, it never converts
values between element types.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["move_block", "flat_extent", "raw_elements", "concat", "pad2d"]


def raw_elements(buf: np.ndarray, elem_size: int) -> np.ndarray:
    """A view of the memory of ``buf`` as unsigned elements of ``elem_size`` bytes.

    The move engine copies ``elem_size``-byte elements whatever the NumPy dtype of the buffer
    holding them (C reinterprets the same memory); writes through the view reach ``buf``.

    Args:
        buf: 1-D C-contiguous array (any dtype).
        elem_size: 1, 2 or 4.

    Returns:
        1-D array of dtype ``uint{8*elem_size}`` sharing memory with ``buf`` (trailing bytes that do
        not fill a whole element are left out).
    """
    if buf.ndim != 1 or not buf.flags.c_contiguous:
        raise ValueError("the buffer must be a 1-D contiguous array to alias its memory")
    b = buf.view(np.uint8)
    n = b.shape[0] // elem_size
    return b[: n * elem_size].view(np.dtype(f"u{elem_size}"))


def flat_extent(base: int, shape: Sequence[int], strides: Sequence[int]) -> tuple[int, int]:
    """Smallest and largest flat element index touched by a strided block starting at ``base``."""
    lo = hi = int(base)
    for n, s in zip(shape, strides):
        if n <= 0:
            return base, base - 1  # empty block
        step = (int(n) - 1) * int(s)
        if step >= 0:
            hi += step
        else:
            lo += step
    return lo, hi


def move_block(src: np.ndarray, src_shape: Sequence[int], src_strides: Sequence[int],
               perm: Sequence[int], offset: Sequence[int], step: Sequence[int], pre: Sequence[int],
               write_size: Sequence[int], *, bounds_check: bool, pad_value: int | float = 0,
               copy: bool = True) -> np.ndarray:
    """The destination block of one MLI move, in destination dimension order.

    Args:
        src: 1-D element container of the source memory (element 0 = the tensor's first element).
        src_shape, src_strides: source shape and strides (elements), per source dimension.
        perm: ``perm[i]`` = source dimension read along destination dimension ``i``.
        offset, step, pre: crop start, sub-sample step and leading padding per source dimension.
        write_size: destination block shape (per destination dimension).
        bounds_check: True on MLI's padding path: coordinates outside the source tensor give
            ``pad_value``. False on its no-padding path: every coordinate is read from memory as C
            does, even past the tensor's extent (but never past ``src``).
        pad_value: value of padded elements.
        copy: False to get, when no element is padding, a read-only strided view of ``src`` instead
            of a copy (what a caller assigns at once: NumPy's assignment handles overlapping memory).

    Returns:
        Array of shape ``write_size`` and the dtype of ``src``.

    Raises:
        IndexError: the block would read memory outside ``src``.
    """
    rank = len(write_size)
    w = [int(x) for x in write_size]
    if any(x <= 0 for x in w):
        return np.empty([max(x, 0) for x in w], dtype=src.dtype)
    p = [int(x) for x in perm]
    stp = [int(step[q]) for q in p]
    first = [int(offset[q]) - int(pre[q]) for q in p]  # source coordinate of d = 0
    strides = [int(src_strides[q]) * s for q, s in zip(p, stp)]
    if not bounds_check:
        lo = [0] * rank
        hi = w
    else:
        # s = d*step + first lies in [0, S) for d in [ceil(-first/step), ceil((S - first)/step)).
        lo, hi = [], []
        for i in range(rank):
            size = int(src_shape[p[i]])
            a = max(0, -(first[i] // stp[i]))  # ceil(-first / step)
            b = min(w[i], -((first[i] - size) // stp[i]))  # ceil((size - first) / step)
            lo.append(a)
            hi.append(max(a, b))
    block_shape = [b - a for a, b in zip(lo, hi)]
    full = block_shape == w
    out = None if full else np.full(w, pad_value, dtype=src.dtype)
    if all(n > 0 for n in block_shape):
        base = sum((first[i] + lo[i] * stp[i]) * int(src_strides[p[i]]) for i in range(rank))
        mn, mx = flat_extent(base, block_shape, strides)
        if mn < 0 or mx >= src.shape[0]:
            raise IndexError(f"move reads elements {mn}..{mx} outside the source buffer of {src.shape[0]}")
        it = src.itemsize
        view = np.lib.stride_tricks.as_strided(src[base:], shape=block_shape, strides=[s * it for s in strides],
                                               writeable=False)
        if full:
            return np.array(view) if copy else view
        out[tuple(slice(a, b) for a, b in zip(lo, hi))] = view
    return out


def concat(arrays: Sequence[np.ndarray], axis: int) -> np.ndarray:
    """MLI 1.x ``mli_krn_concat``: join equally shaped arrays (except along ``axis``)."""
    return np.concatenate([np.asarray(a) for a in arrays], axis=axis)


def pad2d(x: np.ndarray, top: int, bottom: int, left: int, right: int, *, layout: str,
          value: np.ndarray | int = 0) -> np.ndarray:
    """MLI 1.x ``mli_krn_padding2d_{chw,hwc}``: add rows/columns of ``value`` around a feature map.

    Args:
        x: feature map, ``[C, H, W]`` (``layout="chw"``) or ``[H, W, C]`` (``layout="hwc"``).
        top, bottom, left, right: rows / columns added on each side.
        layout: ``"chw"`` or ``"hwc"``.
        value: padding value, a scalar or one value per channel.

    Returns:
        The padded map, same dtype.
    """
    x = np.asarray(x)
    if layout == "hwc":
        c = x.shape[2]
        out = np.empty((x.shape[0] + top + bottom, x.shape[1] + left + right, c), dtype=x.dtype)
        out[...] = np.broadcast_to(np.asarray(value, dtype=x.dtype).reshape(-1), (c,)) if np.ndim(value) else value
        out[top: top + x.shape[0], left: left + x.shape[1], :] = x
    elif layout == "chw":
        c = x.shape[0]
        out = np.empty((c, x.shape[1] + top + bottom, x.shape[2] + left + right), dtype=x.dtype)
        out[...] = np.asarray(value, dtype=x.dtype).reshape(-1, 1, 1) if np.ndim(value) else value
        out[:, top: top + x.shape[1], left: left + x.shape[2]] = x
    else:
        raise ValueError(f"layout must be 'chw' or 'hwc', not {layout!r}")
    return out
