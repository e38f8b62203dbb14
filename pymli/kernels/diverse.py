"""Permute and argmax kernels (``kernels/diverse/impl/mli_krn_{permute,argmax}_ref.h``).

Pure functions over NumPy arrays. :func:`argmax` reproduces the C library's selection exactly,
ties included: MLI keeps a min-heap of ``topk`` candidates per slice (an element equal to the
heap's minimum replaces it) and heap-sorts it at the end, so the order among equal values depends
on the history of the heap. :func:`argmax` takes vectorised shortcuts where the answer cannot
depend on that history and replays the heap, in the C order, for the other slices.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from ..tensor import dense_strides

__all__ = ["permute", "element_offsets", "argmax", "argmax_reference", "heap_topk"]


def permute(x: npt.NDArray, perm: Sequence[int], *, out: np.ndarray | None = None) -> np.ndarray:
    """``out[i0, i1, ...] = x[...]`` with ``out.shape[k] = x.shape[perm[k]]`` (a transpose copy).

    Args:
        x: any array; perm: ``perm[k]`` = dimension of ``x`` that becomes dimension ``k``.
        out: optional destination (any strides, may overlap ``x``: NumPy then copies through a
            temporary); written and returned, which saves the intermediate contiguous copy.

    Returns:
        The permuted values (a new C-contiguous array, or ``out``).
    """
    x = np.asarray(x)
    t = np.transpose(x, [int(p) for p in perm[: x.ndim]])
    if out is None:
        return np.ascontiguousarray(t)
    out[...] = t  # assignment semantics (overlap-safe, casts as the plain path's store did)
    return out


def element_offsets(shape: Sequence[int], strides: Sequence[int] | None = None) -> np.ndarray:
    """Memory offset (in elements) of every element of a tensor: ``sum(index[k] * strides[k])``."""
    shape = [int(s) for s in shape]
    if strides is None:
        return np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)
    off = np.zeros(shape, dtype=np.int64)
    for k, (s, m) in enumerate(zip(shape, strides)):
        sh = [1] * len(shape)
        sh[k] = s
        off = off + (np.arange(s, dtype=np.int64) * int(m)).reshape(sh)
    return off


# ---------------------------------------------------------------------------------------- heap
def _sift(hv: list[int], hi: list[int], size: int, root: int) -> None:
    """``heapify``: sift ``root`` down a min-heap of ``size`` entries (strict ``<`` comparisons)."""
    half = size // 2
    while root < half:
        left = 2 * root + 1
        right = left + 1
        small = root
        if left < size and hv[left] < hv[small]:
            small = left
        if right < size and hv[right] < hv[small]:
            small = right
        if small == root:
            return
        hv[root], hv[small] = hv[small], hv[root]
        hi[root], hi[small] = hi[small], hi[root]
        root = small


def heap_topk(values: npt.NDArray[np.integer], k: int) -> np.ndarray:
    """MLI's heap selection of the ``k`` largest of ``values`` (1-D, in the C visiting order).

    Returns positions into ``values``, largest value first, ties in the order MLI produces. The
    first ``k`` values seed the heap; later ones enter when not smaller than the heap minimum.
    As the minimum never decreases, blocks of values are screened against it with NumPy and the
    heap is replayed only for the values that pass.
    """
    v = np.asarray(values)
    n = v.shape[0]
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    if k > n:
        raise ValueError(f"topk {k} > {n} values")
    hv = v[:k].tolist()
    hi = list(range(k))
    for i in range(k // 2 - 1, -1, -1):
        _sift(hv, hi, k, i)
    top = int(v.max())
    pos, block = k, 64
    while pos < n:
        if hv[0] == top:
            # Every entry equals the slice maximum: a later equal value replaces the root and the
            # (strict) sift leaves it there, so only the last such value stays.
            last = np.flatnonzero(v[pos:] == top)
            if last.size:
                hi[0] = pos + int(last[-1])
            break
        end = min(n, pos + block)
        chunk = v[pos:end]
        cand = np.flatnonzero(chunk >= hv[0])
        for c, val in zip((cand + pos).tolist(), chunk[cand].tolist()):
            if hv[0] > val:
                continue
            hv[0], hi[0] = val, c
            _sift(hv, hi, k, 0)
            if hv[0] == top:
                end = c + 1  # resume just after c with the shortcut above
                break
        pos, block = end, min(block * 2, 1 << 16)
    for i in range(k // 2 - 1, -1, -1):
        _sift(hv, hi, k, i)
    for i in range(k - 1, 0, -1):
        hv[0], hv[i] = hv[i], hv[0]
        hi[0], hi[i] = hi[i], hi[0]
        _sift(hv, hi, i, 0)
    return np.asarray(hi, dtype=np.int64)


def _slices(x: np.ndarray, axis: int) -> np.ndarray:
    """(slices, elements) view in the C visiting order: one slice per index of ``axis`` (or one)."""
    if axis < 0:
        return x.reshape(1, -1)
    return np.moveaxis(x, axis, 0).reshape(x.shape[axis], -1)


def argmax(x: npt.NDArray[np.integer], axis: int, topk: int, strides: Sequence[int] | None = None) -> np.ndarray:
    """``mli_krn_argmax``: memory offsets of the ``topk`` largest values, per slice.

    Args:
        x: int8 / int16 values, logical shape (any rank).
        axis: ``axis >= 0``: one slice per index of that dimension (the slice holds every element
            with that index); ``axis < 0``: the whole tensor is one slice.
        topk: how many positions per slice (``1 <= topk <= slice size``; none if ``<= 0``).
        strides: the input's memory strides in elements (dense if omitted): MLI reports
            ``sum(index * stride)``, the element's offset from the first element.

    Returns:
        int32 array ``[slices, topk]``, largest value first; among equal values the order of the
        C library.
    """
    x = np.asarray(x)
    vals = _slices(x, axis)
    s, n = vals.shape
    k = int(topk)
    if k <= 0:
        return np.zeros((s, 0), dtype=np.int32)
    if k > n:
        raise ValueError(f"topk {k} > slice size {n}")
    if k == 1:
        # A one-entry heap: every value not below the kept one replaces it -> last maximum.
        idx = (n - 1 - np.argmax(vals[:, ::-1], axis=1))[:, None]
    elif k < n and vals.dtype == np.int8:
        idx = _topk_by_threshold(vals, k)
    else:
        # Top k+1 of each slice, largest first. Where the k largest are distinct and strictly
        # above the next one, the heap's result is that order whatever its history.
        if k < n:
            part = np.argpartition(vals, n - k - 1, axis=1)[:, n - k - 1:]
        else:
            part = np.broadcast_to(np.arange(n), (s, n))
        pv = np.take_along_axis(vals, part, axis=1).astype(np.int64)
        order = np.argsort(-pv, axis=1, kind="stable")
        part = np.take_along_axis(part, order, axis=1)
        pv = np.take_along_axis(pv, order, axis=1)
        ok = np.all(pv[:, 1:k] < pv[:, : k - 1], axis=1)
        if k < n:
            ok &= pv[:, k - 1] > pv[:, k]
        idx = np.array(part[:, :k])
        for i in np.flatnonzero(~ok).tolist():
            idx[i] = heap_topk(vals[i], k)
    return _slice_offsets(x.shape, axis, idx, strides).astype(np.int32)


def _topk_by_threshold(vals: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` largest int8 values per row (``1 < k < n``), in MLI's heap order.

    A histogram of the 256 codes per row gives each row's k-th largest value ``t``. Where exactly
    ``k`` values reach ``t`` and they are distinct, the heap's result is them in decreasing order
    whatever its history; the other rows replay the heap (:func:`heap_topk`). Same results as the
    partition path of :func:`argmax`, without sorting the slice.
    """
    s, n = vals.shape
    codes = vals.view(np.uint8) ^ np.uint8(0x80)  # value + 128, in [0, 255]
    if s == 1:
        counts = np.bincount(codes.reshape(-1), minlength=256)[None, :]
    else:
        counts = np.bincount((codes + (np.arange(s, dtype=np.intp) * 256)[:, None]).reshape(-1),
                             minlength=256 * s).reshape(s, 256)
    at_least = np.cumsum(counts[:, ::-1], axis=1)  # [r, j]: values >= 255 - j (as codes)
    j = np.argmax(at_least >= k, axis=1)  # exists: the row has n > k values
    thr = (255 - j).astype(np.int16) - 128
    distinct = np.all(counts[:, ::-1] <= 1, axis=1, where=np.arange(256)[None, :] <= j[:, None])
    ok = (at_least[np.arange(s), j] == k) & distinct
    idx = np.empty((s, k), dtype=np.int64)
    ok_rows = np.flatnonzero(ok)
    if ok_rows.size:
        sub = vals[ok_rows]
        pos = np.nonzero(sub >= thr[ok_rows, None].astype(np.int8))[1].reshape(-1, k)
        pv = np.take_along_axis(sub, pos, axis=1)
        order = np.argsort(-pv.astype(np.int16), axis=1)
        idx[ok_rows] = np.take_along_axis(pos, order, axis=1)
    for i in np.flatnonzero(~ok).tolist():
        idx[i] = heap_topk(vals[i], k)
    return idx


def _slice_offsets(shape: Sequence[int], axis: int, idx: np.ndarray, strides: Sequence[int] | None) -> np.ndarray:
    """Memory offsets of positions ``idx[slice, j]`` within the slices of :func:`_slices` (only those)."""
    shape = [int(d) for d in shape]
    st = [int(m) for m in strides] if strides is not None else dense_strides(shape)
    idx = np.asarray(idx, dtype=np.int64)
    if axis < 0:
        rest_shape, rest_st, base = shape, st, np.zeros((idx.shape[0], 1), np.int64)
    else:
        rest_shape = shape[:axis] + shape[axis + 1:]
        rest_st = st[:axis] + st[axis + 1:]
        base = (np.arange(shape[axis], dtype=np.int64) * st[axis])[:, None]
    off = base
    if rest_shape:
        for i, c in enumerate(np.unravel_index(idx, rest_shape)):
            off = off + c * rest_st[i]
    return np.broadcast_to(off, idx.shape)


def argmax_reference(x: npt.NDArray[np.integer], axis: int, topk: int,
                     strides: Sequence[int] | None = None) -> np.ndarray:
    """Slow element-by-element replay of MLI's argmax (every slice through the heap): a test oracle."""
    x = np.asarray(x)
    vals = _slices(x, axis).astype(np.int64)
    offs = _slices(element_offsets(x.shape, strides), axis)
    out = np.zeros((vals.shape[0], max(int(topk), 0)), dtype=np.int32)
    for i in range(vals.shape[0]):
        v = vals[i].tolist()
        k = int(topk)
        if k <= 0:
            continue
        hv, hi = v[:k], list(range(k))
        for j in range(k // 2 - 1, -1, -1):
            _sift(hv, hi, k, j)
        for c in range(k, len(v)):
            if hv[0] > v[c]:
                continue
            hv[0], hi[0] = v[c], c
            _sift(hv, hi, k, 0)
        for j in range(k - 1, 0, -1):
            hv[0], hv[j] = hv[j], hv[0]
            hi[0], hi[j] = hi[j], hi[0]
            _sift(hv, hi, j, 0)
        out[i] = offs[i][hi]
    return out
