"""Permute and argmax kernels (``kernels/diverse/impl/mli_krn_{permute,argmax}_ref.h``).

Pure functions over NumPy arrays. :func:`argmax` reproduces the C library's selection exactly,
ties included: MLI keeps a min-heap of ``topk`` candidates per slice (an element equal to the
heap's minimum replaces it) and heap-sorts it at the end, so the order among equal values depends
on the history of the heap. :func:`argmax` takes vectorised shortcuts where the answer cannot
depend on that history (slices whose largest values are distinct, found from block maxima), reads
the history of a heap of three off the records and ties before the slice maximum
(:func:`_top3_of_max`, vectorised over the slices), and replays the heap, in the C order, for the
other slices over the elements a screen leaves (a heap of three over many candidates: in closed
form, :func:`_top3_events`; heaps of three and five in local variables, :func:`_replay3` and
``_Heap._feed5``). One long slice of 16-bit values is screened once from the maxima of its segments
(:func:`_topk_1d_segments`). With the optional JIT (:mod:`pymli.kernels._jit`, numba) the heaps of
``topk >= 2`` over int8 / int16 values run compiled instead, element by element in the C order
(:mod:`pymli.kernels._jit_reduce`): the same positions.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from ..tensor import dense_strides
from . import _jit

__all__ = ["permute", "element_offsets", "argmax", "argmax_reference", "heap_topk"]


@functools.lru_cache(maxsize=None)
def _limits(dtype: np.dtype) -> tuple[int, int]:
    """``(min, max)`` of an integer dtype (``np.iinfo`` costs tens of microseconds a call)."""
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def _hits(mask: np.ndarray) -> np.ndarray:
    """``np.flatnonzero(mask)`` without its Python wrapper (about 1 us a call)."""
    return mask.reshape(-1).nonzero()[0]


# Slab size of the blocked transpose in :func:`permute` (an L1 data cache's worth).
_PERMUTE_BLOCK_BYTES = 1 << 15


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
    axes = [int(p) for p in perm[: x.ndim]]
    t = np.transpose(x, axes)
    if out is None:
        if x.ndim < 2 or axes[-1] == x.ndim - 1 or x.nbytes <= _PERMUTE_BLOCK_BYTES:
            return np.ascontiguousarray(t)
        out = np.empty(t.shape, dtype=x.dtype)
    elif x.ndim < 2 or axes[-1] == x.ndim - 1 or x.nbytes <= _PERMUTE_BLOCK_BYTES or np.may_share_memory(x, out):
        out[...] = t  # assignment semantics (overlap-safe, casts as the plain path's store did)
        return out
    # A transpose that moves the innermost axis writes every output row from all over the input:
    # in slabs of the input's first axis (about _PERMUTE_BLOCK_BYTES each) both sides stay in cache.
    k = axes.index(0)
    step = max(1, _PERMUTE_BLOCK_BYTES // max(x[0].nbytes, 1))
    head = (slice(None),) * k
    for i in range(0, x.shape[0], step):
        out[head + (slice(i, i + step),)] = np.transpose(x[i:i + step], axes)
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

    Returns positions into ``values``, largest value first, ties in the order MLI produces.

    Raises:
        ValueError: ``k`` larger than the number of values.
    """
    v = np.asarray(values)
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    if k > v.shape[0]:
        raise ValueError(f"topk {k} > {v.shape[0]} values")
    if k == 1:
        return np.array([_last_max(v)], dtype=np.int64)
    if k < v.shape[0]:
        return np.array(_topk_1d(v, k), dtype=np.int64)
    return _topk_screened(v.reshape(-1, 1), k)[0]


class _Heap:
    """MLI's min-heap of ``k`` (value, position) entries, fed with the elements that can enter it.

    The seeds (the first ``k`` elements) are heapified; a later value enters (replacing the
    minimum at the root, then sifting down with strict comparisons) when it is not smaller than
    the minimum. Once every entry equals the slice maximum ``top``, a later equal value replaces
    the root and the strict sift leaves it there: only the last such value still matters, which
    :meth:`feed` reports instead of going on.
    """

    def __init__(self, val: list[int], pos: list[int], top: int) -> None:
        self.k, self.top = len(val), top
        self.hv, self.hi = list(val), list(pos)
        for i in range(self.k // 2 - 1, -1, -1):
            _sift(self.hv, self.hi, self.k, i)

    def feed(self, pos: list[int], val: list[int]) -> int:
        """Visit candidates in order; returns the index of the first one not visited because the
        heap is all ``top`` (``len(pos)`` when every one was visited).
        """
        if self.k == 5:
            return self._feed5(pos, val)
        hv, hi, k, top = self.hv, self.hi, self.k, self.top
        for j, v in enumerate(val):
            if hv[0] == top:
                return j
            if hv[0] > v:
                continue
            # _sift of v from the root, as a moving hole: the smaller child (the left one on a
            # tie) moves up while it is strictly below v.
            r, c = 0, 1
            while c < k:
                if c + 1 < k and hv[c + 1] < hv[c]:
                    c += 1
                if not hv[c] < v:
                    break
                hv[r], hi[r] = hv[c], hi[c]
                r, c = c, 2 * c + 1
            hv[r], hi[r] = v, pos[j]
        return len(pos)

    def _feed5(self, pos: list[int], val: list[int]) -> int:
        """:meth:`feed` of a heap of five in local variables: the root's children are slots 1 and 2
        (a leaf), slot 1's are slots 3 and 4."""
        h0, h1, h2, h3, h4 = self.hv
        p0, p1, p2, p3, p4 = self.hi
        top, done = self.top, len(pos)
        if h0 == top:
            done = 0
        else:
            for j, v in enumerate(val):
                if v < h0:
                    continue
                if h2 < h1:  # slot 2 is the smaller child
                    if h2 < v:
                        h0, p0, h2, p2 = h2, p2, v, pos[j]
                    else:
                        h0, p0 = v, pos[j]
                elif h1 < v:  # slot 1 moves up, v sifts on from there
                    h0, p0 = h1, p1
                    if h4 < h3:
                        if h4 < v:
                            h1, p1, h4, p4 = h4, p4, v, pos[j]
                        else:
                            h1, p1 = v, pos[j]
                    elif h3 < v:
                        h1, p1, h3, p3 = h3, p3, v, pos[j]
                    else:
                        h1, p1 = v, pos[j]
                else:
                    h0, p0 = v, pos[j]
                if h0 == top:
                    done = j + 1
                    break
        self.hv[:] = h0, h1, h2, h3, h4
        self.hi[:] = p0, p1, p2, p3, p4
        return done

    @property
    def full_of_top(self) -> bool:
        """Whether every entry equals the slice maximum."""
        return self.hv[0] == self.top

    def result(self) -> list[int]:
        """The positions in MLI's output order: heapify again, then heap-sort (largest first)."""
        hv, hi, k = self.hv, self.hi, self.k
        for i in range(k // 2 - 1, -1, -1):
            _sift(hv, hi, k, i)
        for i in range(k - 1, 0, -1):
            hv[0], hv[i] = hv[i], hv[0]
            hi[0], hi[i] = hi[i], hi[0]
            _sift(hv, hi, i, 0)
        return hi


def _replay(pos: list[int], val: list[int], k: int) -> list[int]:
    """MLI's heap run over the elements of a slice that can enter it; positions, largest first.

    ``pos`` (ascending, starting with the ``k`` seeds ``0 .. k-1``) and ``val`` hold those
    elements (every slice maximum among them); every other element is below the heap minimum
    when it is visited.
    """
    if k == 3:
        return _replay3(pos, val)
    heap = _Heap(val[:k], pos[:k], max(val))
    j = k + heap.feed(pos[k:], val[k:])
    if heap.full_of_top:
        last = [p for p, v in zip(pos[j:], val[j:]) if v == heap.top]
        if last:
            heap.hi[0] = last[-1]
    return heap.result()


def _replay3(pos: list[int], val: list[int]) -> list[int]:
    """:func:`_replay` of a heap of three in local variables (``a`` the root, ``b`` / ``c`` its
    children), every candidate visited: an element equal to a heap all of the maximum replaces the
    root and stays there, as :meth:`_Heap.feed`'s shortcut assumes.
    """
    a, b, c = val[:3]
    pa, pb, pc = pos[:3]
    # heapify: the first strictly smallest of (root, left, right) goes to the root
    if b < a:
        if c < b:
            a, c, pa, pc = c, a, pc, pa
        else:
            a, b, pa, pb = b, a, pb, pa
    elif c < a:
        a, c, pa, pc = c, a, pc, pa
    for p, v in zip(pos[3:], val[3:]):
        if v < a:
            continue
        # v replaces the root; the smaller child (the left one on a tie) moves up if below v
        if c < b:
            if c < v:
                a, pa, c, pc = c, pc, v, p
            else:
                a, pa = v, p
        elif b < v:
            a, pa, b, pb = b, pb, v, p
        else:
            a, pa = v, p
    # heap sort: the root swapped with slot 2 and sifted over two entries, then with slot 1
    if b < c:
        return [pc, pb, pa]
    return [pb, pc, pa]


def _topk_1d(v: np.ndarray, k: int) -> list[int]:
    """:func:`_replay` over a whole 1-D slice (``1 < k < n``): 8-bit values (few distinct, the heap
    soon all maximum) through :func:`_topk_1d_growing`, others through :func:`_topk_1d_segments`."""
    if v.dtype.itemsize == 1:
        return _topk_1d_growing(v, k)
    return _topk_1d_segments(v, k)


def _topk_1d_growing(v: np.ndarray, k: int) -> list[int]:
    """:func:`_topk_1d`, screening the slice in growing blocks.

    The first ``k + 1`` blocks go through the exact screen of :func:`_enters`; after them each
    block is screened against the heap minimum reached so far (a lower bound of the minimum at
    every later position), the few survivors are fed to the heap, and the blocks grow 8-fold.
    Once the heap is all slice maximum, only the last later occurrence of it matters (searched
    backwards).
    """
    n = v.shape[0]
    top = int(v.max())
    head = min(n, (k + 1) * _SCREEN_BLOCK)
    first = _hits(_enters(v[:head], k))
    heap = _Heap(v[:k].tolist(), list(range(k)), top)
    pos = first[k:].tolist()
    done, end = heap.feed(pos, v[first[k:]].tolist()), head
    block = 16 * _SCREEN_BLOCK
    while not heap.full_of_top and end < n:
        start, end = end, min(n, end + block)
        cand = _hits(v[start:end] >= heap.hv[0]) + start
        pos = cand.tolist()
        done = heap.feed(pos, v[cand].tolist())
        block *= 8
    if heap.full_of_top:
        # The rest: from the first unvisited candidate, or after the screened range (whose other
        # elements are below the bound, so below the maximum).
        after = pos[done] if done < len(pos) else end
        last = _last_max(v[after:]) if after < n else -1
        if last >= 0 and v[after + last] == top:
            heap.hi[0] = after + last
    return heap.result()


# Segments of :func:`_topk_1d_segments`: (end, length) of the fine ones from the start, then the
# coarse length (a power of two).
_FINE_SEGMENTS = ((64, 8), (1024, 32))
_COARSE_SEGMENT = 1024


@functools.lru_cache(maxsize=64)
def _segments(n: int) -> tuple[np.ndarray, np.ndarray, int, int]:
    """The segments of :func:`_topk_1d_segments` for ``n`` values: their starts, the lengths of the
    fine ones (covering ``[0, f)``, ``f = min(n, 1024)``), ``f`` and the number of whole coarse ones
    after it (a shorter last segment follows when they do not reach ``n``)."""
    f = min(n, _COARSE_SEGMENT)
    starts, a = [], 0
    for end, length in _FINE_SEGMENTS:
        starts += range(a, min(end, f), length)
        a = end
    nfine = len(starts)
    nc = (n - f) // _COARSE_SEGMENT
    starts += range(f, f + nc * _COARSE_SEGMENT, _COARSE_SEGMENT)
    if f + nc * _COARSE_SEGMENT < n:
        starts.append(f + nc * _COARSE_SEGMENT)
    st = np.array(starts, dtype=np.intp)
    st.flags.writeable = False
    lengths = np.diff(np.append(st[:nfine], f))
    lengths.flags.writeable = False
    return st, lengths, f, nc


def _topk_1d_segments(v: np.ndarray, k: int) -> list[int]:
    """:func:`_topk_1d` over one screen of the whole slice, from the maxima of its segments.

    The heap minimum at any position is at least the ``k``-th largest maximum of the segments
    before that position's segment (:func:`_prefix_kth`; the segments short at the start, where
    few maxima are known, see :func:`_segments`): every element not below that bound is a
    candidate (the first ``k`` segments whole, the seeds among them). The fine segments are
    screened element by element, the coarse ones only where their maximum reaches the bound.
    Once the heap is all slice maximum, only the last later candidate equal to it matters.
    """
    n = v.shape[0]
    st, lengths, f, nc = _segments(n)
    nfine = lengths.shape[0]
    smax = np.maximum.reduceat(v, st)
    top = int(smax.max())
    km = _prefix_kth(smax, k, _limits(v.dtype)[0])  # km[j]: the bound of segment j
    parts = [_hits(v[:f] >= np.repeat(km[:nfine], lengths))]
    if nc:
        b = _COARSE_SEGMENT
        bound = km[nfine:nfine + nc]
        hit = _hits(smax[nfine:nfine + nc] >= bound)
        if hit.size:
            at = _hits(v[f:f + nc * b].reshape(nc, b)[hit] >= bound[hit, None])
            parts.append((hit * b + f)[at // b] + at % b)
    end = f + nc * _COARSE_SEGMENT
    if end < n:
        parts.append(_hits(v[end:] >= km[-2]) + end)
    pos = np.concatenate(parts) if len(parts) > 1 else parts[0]
    vals = v[pos]
    heap = _Heap(vals[:k].tolist(), pos[:k].tolist(), top)
    rest = pos[k:].tolist()
    done = heap.feed(rest, vals[k:].tolist())
    if heap.full_of_top and done < len(rest):
        last = _hits(vals[k + done:] == top)
        if last.size:
            heap.hi[0] = rest[done + int(last[-1])]
    return heap.result()


def _slices(x: np.ndarray, axis: int) -> np.ndarray:
    """(slices, elements) view in the C visiting order: one slice per index of ``axis`` (or one)."""
    if axis < 0:
        return x.reshape(1, -1)
    return np.moveaxis(x, axis, 0).reshape(x.shape[axis], -1)


def _columns(x: np.ndarray, axis: int) -> np.ndarray:
    """(elements, slices): the transpose of :func:`_slices`, a view when ``axis`` is the last one."""
    if axis < 0:
        return x.reshape(-1, 1)
    if axis == x.ndim - 1:
        return x.reshape(-1, x.shape[axis])  # (np.moveaxis costs a few microseconds of Python)
    return np.moveaxis(x, axis, -1).reshape(-1, x.shape[axis])


# Block length of argmax's screen (a power of two): the heap minimum at any position of a block is
# at least the k-th largest maximum of the blocks before it.
_SCREEN_BLOCK = 32

# Value types of the compiled heaps (:mod:`pymli.kernels._jit_reduce`).
_JIT_TYPES = (np.dtype(np.int8), np.dtype(np.int16))


def _last_max(v: np.ndarray) -> int:
    """Position of the last occurrence of the maximum of 1-D ``v`` (searched backwards in blocks)."""
    top = v.max()
    end, block = v.shape[0], 256
    while True:
        start = max(end - block, 0)
        hit = _hits(v[start:end] == top)
        if hit.size:
            return start + int(hit[-1])
        end, block = start, block * 4


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

    Raises:
        ValueError: ``topk`` larger than the slice.
    """
    x = np.asarray(x)
    cols = _columns(x, axis)
    n, s = cols.shape
    k = int(topk)
    if k <= 0:
        return np.zeros((s, 0), dtype=np.int32)
    if k > n:
        raise ValueError(f"topk {k} > slice size {n}")
    jit = _jit.compiled("_jit_reduce") if k > 1 and cols.dtype in _JIT_TYPES else None
    if jit is not None:
        # The heap run element by element, compiled (optional; the same positions as below)
        hv = np.empty((s, k), dtype=np.int64)
        idx = np.empty((s, k), dtype=np.int64)
        if s == 1:
            jit.argmax_heap1(cols[:, 0], k, hv, idx)
        else:
            jit.argmax_heaps(cols, k, hv, idx)
    elif k == 1:
        # A one-entry heap: every value not below the kept one replaces it -> last maximum.
        if s == 1:
            idx = np.array([[_last_max(cols[:, 0])]], dtype=np.int64)
        else:
            idx = (n - 1 - np.argmax(cols[::-1], axis=0))[:, None]
    elif s == 1 and k < n:
        idx = np.array([_topk_1d(cols[:, 0], k)], dtype=np.int64)
    else:
        idx = _topk_screened(cols, k)
    return _slice_offsets(x.shape, axis, idx, strides).astype(np.int32)


def _small_index(s: int) -> type:
    """The narrowest integer type for slice numbers ``0 .. s-1`` (NumPy's stable sort of 8- and
    16-bit keys is a radix sort)."""
    return np.uint8 if s <= 1 << 8 else np.uint16 if s <= 1 << 16 else np.int64


def _enters(head: np.ndarray, k: int) -> np.ndarray:
    """Which elements of ``head`` (along axis 0) enter MLI's heap of ``k``: the seeds, and every
    later element not below the heap minimum, the running ``k``-th largest ``K_k`` of the elements
    before it (see :func:`_screen`).
    """
    kr = np.full(head.shape, _limits(head.dtype)[0], dtype=head.dtype)
    np.maximum.accumulate(head[:-1], axis=0, out=kr[1:])
    for _ in range(1, k):
        prev = np.minimum(head[:-1], kr[:-1])
        np.maximum.accumulate(prev, axis=0, out=kr[1:])
    flags = head >= kr
    flags[:k] = True
    return flags


def _block_max(data: np.ndarray, b: int) -> np.ndarray:
    """Maxima of the complete ``b``-row blocks of ``data`` (rows, slices): ``(rows // b, slices)``.

    By halving (``b`` a power of two): elementwise maxima over whole rows run NumPy's vector loops,
    where a reduction over the middle axis (or ``maximum.accumulate``) runs slice by slice.
    """
    nb = data.shape[0] // b
    bmax = data[: nb * b].reshape(nb, b, *data.shape[1:])
    while bmax.shape[1] > 1:
        half = bmax.shape[1] // 2
        bmax = np.maximum(bmax[:, :half], bmax[:, half:])
    return bmax[:, 0]


def _prefix_kth(bmax: np.ndarray, k: int, lowest: int) -> np.ndarray:
    """``km[j]``: the ``k``-th largest of ``bmax[:j]`` along axis 0 (``lowest`` while fewer than ``k``).

    Running k-th largest of a sequence ``b``: ``K_1[j] = max(b[:j])``, ``K_m[j] = max over i < j of
    min(b[i], K_{m-1}[i])`` (the best ``m``-subset ending at ``i``). Returns ``len(bmax) + 1`` rows.
    """
    km = np.full((bmax.shape[0] + 1, *bmax.shape[1:]), lowest, dtype=bmax.dtype)
    np.maximum.accumulate(bmax, axis=0, out=km[1:])
    for _ in range(1, k):
        prev = np.minimum(bmax, km[:-1])
        np.maximum.accumulate(prev, axis=0, out=km[1:])
    return km


def _screen(cols: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Which elements of every column can enter MLI's heap of ``k`` (a superset; the seeds included).

    The heap holds the ``k`` largest values seen so far, so at any position its minimum is at
    least the ``k``-th largest of the maxima of the complete blocks before that position's block
    (``k`` distinct elements reach it); an element below that bound never enters. The running
    ``k``-th largest (:func:`_prefix_kth`) is evaluated on the (short) sequence of block maxima,
    and on the elements themselves over the first ``k`` blocks (where few block maxima are
    known): there it is the heap minimum, and the mask exact.

    Returns:
        ``(mask, final)``: bool array of ``cols``' shape, and per slice a lower bound of the heap
        minimum after the last element (the dtype's minimum where unknown).
    """
    n, s = cols.shape
    nb, b = n // _SCREEN_BLOCK, _SCREEN_BLOCK
    lowest = _limits(cols.dtype)[0]
    mask = np.empty((n, s), dtype=bool)
    # One slice: drop the unit axis (NumPy's loops run over the last axis).
    data, flags = (cols[:, 0], mask[:, 0]) if s == 1 else (cols, mask)
    tail = data.shape[1:]
    blocks = data[: nb * b].reshape(nb, b, *tail)
    if s == 1:
        bmax = np.maximum.reduceat(blocks.reshape(-1), np.arange(0, nb * b, b)) if nb else blocks[:, 0]
    else:
        bmax = _block_max(data, b)
    km = _prefix_kth(bmax, k, lowest)  # km[j]: bound for block j (nb: the tail)
    np.greater_equal(blocks, km[:-1, None], out=flags[: nb * b].reshape(blocks.shape))
    np.greater_equal(data[nb * b:], km[-1], out=flags[nb * b:])
    # The first k blocks: exact (fewer than k block maxima are known there).
    p = min(n, k * b)
    flags[:p] = _enters(data[:p], k)
    mask[:k] = True  # the seeds
    return mask, km[-1].reshape(s)


def _candidates(cols: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The elements of ``mask``, slice-major with positions ascending: ``(pos, slice, value)``."""
    s = cols.shape[1]
    pos, sl = np.divmod(_hits(mask), s)
    if s > 1:
        order = np.argsort(sl.astype(np.int16 if s <= 1 << 15 else np.int64), kind="stable")
        pos, sl = pos[order], sl[order]
    return pos, sl, cols[pos, sl].astype(np.int64)


def _sorted_top(pos: np.ndarray, sl: np.ndarray, vals: np.ndarray, final: np.ndarray,
                k: int) -> tuple[np.ndarray, np.ndarray]:
    """The slices whose ``k`` largest values are distinct and above every other value.

    ``(pos, sl, vals)`` (:func:`_candidates`) hold at least every value not below ``final[slice]``,
    a lower bound of the slice's ``k``-th largest value. Where exactly ``k`` values reach the
    ``k``-th largest ``t`` and they are distinct, MLI's heap holds them at the end and sorts them
    in decreasing order whatever its history.

    Returns:
        ``(idx, ok)``: per slice the positions of the ``k`` largest values (largest first; only
        meaningful where ``ok``), and whether the slice is such a slice.
    """
    s = final.shape[0]
    # The values not below the final bound (every value >= t among them, at least k per slice),
    # by slice and decreasing value; each slice's k + 1 largest (or k and a sentinel).
    top = _hits(vals >= final[sl])
    top = top[np.argsort(sl[top] * (1 << 33) - vals[top])]
    start = np.searchsorted(sl[top], np.arange(s))
    j = start[:, None] + np.arange(k + 1)
    has_next = j[:, k] < np.append(start[1:], top.size)
    j[:, k] = np.where(has_next, j[:, k], j[:, k - 1])
    tv = vals[top[j]]
    tv[:, k] = np.where(has_next, tv[:, k], -(1 << 63))
    ok = np.all(tv[:, 1:] < tv[:, :-1], axis=1)
    return pos[top[j[:, :k]]], ok


def _top3_of_max(cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """MLI's heap of 3 on the slices whose maximum occurs 3 times or more.

    The heap (root = minimum, slots 1 and 2 = the two largest values seen so far, ``M1 >= M2``)
    evolves so: an element ``v > M2`` goes to the slot holding ``M2`` (slot 1 when both slots
    are equal), every other element at most touches the root. Which slot holds the strictly
    larger value (or "equal") therefore changes only at a *record* ``v > M1`` (it becomes the
    slot that held ``M2``, slot 1 after "equal") and at a *tie* ``v == M1 > M2`` (both equal).
    The first occurrence ``t1`` of the slice maximum is a record and lands in the slot of the
    smaller value; the second ``t2`` in the other slot; the third at the root, where every later
    occurrence replaces it. Heap-sorting three equal values outputs slot 1, slot 2, root, so the
    result is ``[t1, t2, last]`` or ``[t2, t1, last]``, decided by the state before ``t1``:
    the seeds' heap, the last tie and the parity of the records after it (a maximum among the
    seeds stays in the slot heapify gives it).

    The occurrences of the maxima come from one scan of the whole array. The state depends only on
    the running ``M1`` (see below), so only the seeds and the elements before ``t1`` not
    below a lower bound of ``M1`` are looked at, along the rows of a transposed copy of the prefix
    before the last ``t1``.

    Args:
        cols: (elements, slices) values, the C visiting order along axis 0 (at least 3 elements).

    Returns:
        ``(idx, ok)``: ``idx[slice]`` the three positions (meaningful where ``ok``) and ``ok``,
        the slices this applies to (the maximum at least three times, not all three seeds).
    """
    n, s = cols.shape
    top = _rows_max(cols)
    t0 = top[0]
    # every maximum, row-major (one scalar compare over the whole array when the maxima agree)
    eq = cols == t0 if bool((top == t0).all()) else _rows_equal(cols, top)
    row, col = np.divmod(_hits(eq), s)
    order = np.argsort(col.astype(_small_index(s)), kind="stable")  # slice-major, rows ascending
    row = row[order]
    count = np.bincount(col, minlength=s)
    end = np.cumsum(count)
    begin = end - count
    t1 = row[begin]
    idx = np.empty((s, 3), dtype=np.int64)
    idx[:, 0] = t1
    idx[:, 1] = row[np.minimum(begin + 1, end - 1)]
    idx[:, 2] = row[end - 1]
    # The seeds' heap (heapify of three, strict comparisons: the smallest goes to the root).
    v0, v1, v2 = cols[0], cols[1], cols[2]
    low = np.minimum(v0, v1)
    small = np.where(v2 < low, 2, np.where(v1 < v0, 1, 0))
    ok = (count >= 3) & (np.minimum(low, v2) != top)
    larger1 = np.where(small == 1, v0, v1) > np.where(small == 2, v0, v2)  # slot 1 > slot 2 after heapify
    # A maximum among the seeds stays in the slot heapify gives it.
    seeded = ok & (t1 < 3)
    swap = seeded & (t1 != np.where(small == 1, 0, 1))
    okr = _hits(ok & ~seeded)
    if okr.size == 0:
        idx[swap, :2] = idx[swap, 1::-1]
        return idx, ok
    # Records and ties depend only on the running maximum M1 (every occurrence of M1 is kept):
    # elements below a lower bound of M1 never matter. The seeds and the later elements before t1
    # not below the maximum of the seeds, then from position q = 32, 256, 2048, ... not below the
    # maximum of the first q elements; screened in place over every slice (the prefix before the
    # last t1 of okr), then ordered slice-major, positions ascending (the first of every slice is
    # position 0).
    span = int(t1[okr].max())
    pre = cols[:span]
    keep = np.empty(pre.shape, dtype=bool)
    np.greater_equal(pre[:32], np.maximum(np.maximum(v0, v1), v2), out=keep[:32])
    q = 32
    while q < span:
        np.greater_equal(pre[q:8 * q], _rows_max(pre[:q]), out=keep[q:8 * q])
        q *= 8
    keep[:3] = True
    flat = _hits(keep)
    pos, sl = np.divmod(flat, s)
    order = np.argsort(sl.astype(_small_index(s)), kind="stable")
    pos, sl = pos[order], sl[order]
    vals = pre.reshape(-1)[flat[order]]
    # Only the running maximum M1 before each element matters: a record v > M1 flips which slot is
    # larger (from "equal" to slot 1); after any v == M1 both slots are equal (a tie when M1
    # occurred once; they were equal already otherwise). Per slice: the last such v, and the parity
    # of the records after it. Values encoded as slice * w + value, so that one running maximum
    # serves every slice (the seeds of a slice lift it above the codes of the slices before).
    lowest, highest = _limits(cols.dtype)
    enc = sl * (highest - lowest + 1) + vals
    m1x = np.maximum.accumulate(enc)
    m1x[1:] = m1x[:-1]
    live = (pos >= 3) & (pos < t1[sl])  # after the seeds, before t1
    record = live & (enc > m1x)
    tie = live & (enc == m1x)
    seg = _hits(pos == 0)  # one segment per slice, in order
    j = np.arange(pos.size)
    last_tie = np.maximum.reduceat(np.where(tie, j, -1), seg)
    odd = np.logical_xor.reduceat(record & (j > last_tie[sl]), seg)  # parity of the records after it
    # Slot 1 ends larger (t1 goes to slot 2) from "equal" or slot 2 after an odd number of
    # records, from slot 1 (the seeds' state, no tie) after an even number.
    swap[okr] = (odd != (larger1 & (last_tie < 0)))[okr]
    idx[swap, :2] = idx[swap, 1::-1]
    return idx, ok


def _top3_events(pos: np.ndarray, sl: np.ndarray, vals: np.ndarray, s: int) -> np.ndarray:
    """MLI's heap of 3 on every slice, from its candidates, in closed form (no replay).

    The heap's root holds the third largest value ``M3`` of the elements visited so far and its
    slots 1 and 2 the two largest ``M1 >= M2``; let ``L`` be the slot holding the strictly larger
    value (0 when they are equal). An element ``v >= M3`` enters: if ``v > M2`` it goes to the
    slot holding ``M2`` (slot 1 when ``L == 0``, else ``3 - L``) and that slot's element moves to
    the root; otherwise it replaces the root. ``L`` changes only at a *record* ``v > M1`` (to
    the slot ``v`` went to) and at a *tie* ``v == M1 > M2`` (to 0). So with ``M1..M3`` before
    every element (running order statistics) and ``L`` from the records since the last tie, the
    slot each element goes to is known at once: each slot ends with the last element sent to it,
    the root with the last entering element, or, if that one went to a slot, with the one sent
    to that slot before it. The heap sort outputs the larger slot (slot 1 when equal), the other
    slot, the root.

    Args:
        pos, sl, vals: the candidates (:func:`_candidates`): slice-major, positions ascending, the
            three seeds ``0, 1, 2`` of every slice included, with every element that can enter
            the heap (an element below the running ``M3`` may be included or not).
        s: the number of slices (every slice has candidates).

    Returns:
        ``(s, 3)`` positions, largest value first, in MLI's order.
    """
    n = pos.size
    seg = np.searchsorted(sl, np.arange(s))  # first candidate (seed 0) of every slice
    v0, v1, v2 = vals[seg], vals[seg + 1], vals[seg + 2]
    # The seeds' heapify (strict comparisons): the first smallest goes to the root.
    small = np.where(v2 < np.minimum(v0, v1), 2, np.where(v1 < v0, 1, 0))
    left = np.where(small == 1, v0, v1)  # slot 1
    right = np.where(small == 2, v0, v2)  # slot 2
    l0 = np.where(left == right, 0, np.where(left > right, 1, 2))
    # Running M1 >= M2 >= M3 before every element, per slice: values encoded as
    # slice * w + (value - lowest + 1) so that one running maximum restarts at every slice (the
    # code of "nothing yet", slice * w, is above every code of the slices before).
    lowest = int(vals.min())
    w = int(vals.max()) - lowest + 2
    base = sl * w
    enc = base + (vals - lowest + 1)
    first = np.zeros(n, dtype=bool)
    first[seg] = True
    run = []
    prev = enc
    for _ in range(3):
        m = np.maximum.accumulate(prev)
        m[1:] = m[:-1]
        np.copyto(m, base, where=first)
        run.append(m)
        prev = np.minimum(enc, m)
    m1, m2, m3 = run
    j = np.arange(n)
    seg_of = seg[sl]
    enters = (pos >= 3) & (enc >= m3)
    to_slot = enters & (enc > m2)
    record = to_slot & (enc > m1)
    tie = to_slot & (enc == m1) & (m1 > m2)
    # L before every element: from the last tie before it (L = 0 there; the seeds' L before
    # any) and the parity of the records since then (a record moves L to the slot of M2).
    tie_before = np.maximum.accumulate(np.where(tie, j, -1))
    tie_before[1:] = tie_before[:-1]
    tied = tie_before >= seg_of
    rec_ex = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(record, out=rec_ex[1:])
    since = np.where(tied, tie_before + 1, seg_of)
    r = rec_ex[j] - rec_ex[since]
    lb = np.where(tied, 0, l0[sl])
    lr = np.where(lb == 0, 2, lb)  # from "equal" the first record goes to slot 1, as from L = 2
    lnow = np.where(r == 0, lb, np.where(r & 1 == 1, 3 - lr, lr))
    target = np.where(lnow == 0, 1, 3 - lnow)
    # The last element sent to each slot, the last entering element, the one before it in its slot.
    last1 = np.maximum.reduceat(np.where(to_slot & (target == 1), j, -1), seg)
    last2 = np.maximum.reduceat(np.where(to_slot & (target == 2), j, -1), seg)
    last = np.maximum.reduceat(np.where(enters, j, -1), seg)
    seed_pos = np.stack([small, np.where(small == 1, 0, 1), np.where(small == 2, 0, 2)], axis=1)
    slot1 = np.where(last1 >= 0, pos[last1], seed_pos[:, 1])
    slot2 = np.where(last2 >= 0, pos[last2], seed_pos[:, 2])
    lt = np.where(last >= 0, target[last], 0)
    went = (last >= 0) & to_slot[last]
    before = np.maximum.reduceat(np.where(to_slot & (target == lt[sl]) & (j < last[sl]), j, -1), seg)
    displaced = np.where(before >= 0, pos[before], np.take_along_axis(seed_pos, lt[:, None], axis=1)[:, 0])
    root = np.where(last < 0, seed_pos[:, 0], np.where(went, displaced, pos[last]))
    # L after the last element: a tie at the end sets 0, otherwise the last element's L moved by
    # a record.
    lend = np.where(last >= 0, np.where(tie[last], 0, np.where(record[last], target[last], lnow[last])), l0)
    return np.where((lend == 2)[:, None], np.stack([slot2, slot1, root], axis=1),
                    np.stack([slot1, slot2, root], axis=1))


# Candidates from which the heap of 3 is read in closed form (:func:`_top3_events`, a fixed cost of
# some 60 NumPy calls) rather than replayed in Python (well under a microsecond per candidate).
_EVENTS_MIN = 1024


def _replay_slices(pos: np.ndarray, sl: np.ndarray, vals: np.ndarray, s: int, k: int) -> np.ndarray:
    """MLI's heap of ``k`` on every slice from its candidates (as :func:`_top3_events` takes them,
    slices numbered ``0 .. s-1``): :func:`_top3_events` for ``k == 3`` and many candidates, else
    :func:`_replay` slice by slice.

    Returns:
        ``(s, k)`` positions, largest value first, in MLI's order.
    """
    if k == 3 and pos.size >= _EVENTS_MIN:
        return _top3_events(pos, sl, vals.astype(np.int64), s)
    bounds = np.searchsorted(sl, np.arange(s + 1)).tolist()
    pos_l, val_l = pos.tolist(), vals.tolist()
    return np.array([_replay(pos_l[bounds[j]:bounds[j + 1]], val_l[bounds[j]:bounds[j + 1]], k)
                     for j in range(s)], dtype=np.int64).reshape(s, k)


def _rows_max(cols: np.ndarray) -> np.ndarray:
    """``cols.max(axis=0)``, halving the rows while more than 64 and even (each step one elementwise
    maximum of two contiguous halves: long loops, where a reduction over the rows of a few columns
    runs one short loop per row)."""
    m = cols
    while m.shape[0] > 64 and m.shape[0] % 2 == 0:
        half = m.shape[0] // 2
        m = np.maximum(m[:half], m[half:])
    return m.max(axis=0)


def _rows_equal(cols: np.ndarray, row: np.ndarray) -> np.ndarray:
    """``cols == row`` (a value per column), compared along long rows of several rows of ``cols`` at
    once (``row`` tiled) where its rows are short."""
    n, s = cols.shape
    reps = 1
    while reps * s < 1024 and n % (2 * reps) == 0:
        reps *= 2
    return (cols.reshape(n // reps, reps * s) == np.tile(row, reps)).reshape(n, s)


def _group_max(cols: np.ndarray, groups: int) -> np.ndarray:
    """Maxima of the row groups ``{g, g + groups, g + 2 * groups, ...}`` of ``cols`` (rows a multiple
    of ``groups``, their quotient a power of two): ``(groups, slices)``, by halving the rows (each
    step one elementwise maximum of two contiguous halves, whatever the slices)."""
    m = cols
    while m.shape[0] > groups:
        half = m.shape[0] // 2
        m = np.maximum(m[:half], m[half:])
    return m


def _topk_of_blocks(cols: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` largest values of every column from the ``k`` row groups with the largest maxima.

    Rows are grouped by their index modulo ``G`` (``n / G`` a power of two, ``G > k``). Where the
    ``k``-th largest group maximum ``K`` is above the next one, every element outside those ``k``
    groups is below ``K``, itself at most the ``k``-th largest value, so the ``k + 1`` largest
    values of the ``k`` groups are those of the column as far as the rule of :func:`_sorted_top`
    goes: where they are strictly decreasing, the ``k`` largest are distinct and alone at the top,
    and MLI's heap outputs them largest first whatever its history.

    Args:
        cols: (elements, slices) int8 / int16 values, C-contiguous, ``n = G * 2**j`` rows.
        k: the number of values per slice.

    Returns:
        ``(idx, ok)``: per column the positions of the ``k`` largest values (largest first;
        meaningful where ``ok``), and whether the column is such a column.
    """
    n, s = cols.shape
    g = _group_count(n, k)
    m = n // g  # rows per group
    slices, groups, rows, within = _block_rule_ranges(n, s, k)
    # Unique int32 keys value * 2**16 + index (values of 8 / 16 bits, indices below 2**16): one
    # sort gives the k + 1 largest values and where each is (the value part: key & -2**16).
    gkeys = _group_max(cols, g).T.astype(np.int32)
    gkeys <<= 16
    gkeys |= groups
    gkeys.sort(axis=1)
    ok = (gkeys[:, -k] & -65536) > gkeys[:, -k - 1]
    # The elements of the k groups, per column: (s, k, m), flat indices (row * s + column).
    grp = (gkeys[:, -k:] & 0xFFFF).astype(np.intp)
    at = (grp * s + slices)[:, :, None] + rows
    keys = cols.reshape(-1)[at.reshape(s, k * m)].astype(np.int32)
    keys <<= 16
    keys |= within
    keys.sort(axis=1)
    top = keys[:, : -k - 2: -1]  # the k + 1 largest, decreasing
    ok &= ((top[:, :-1] & -65536) > top[:, 1:]).all(axis=1)
    j, q = np.divmod(top[:, :k] & 0xFFFF, m)  # which of the k groups, which row of it
    return grp[slices, j] + q * g, ok


@functools.lru_cache(maxsize=64)
def _block_rule_ranges(n: int, s: int, k: int) -> tuple[np.ndarray, ...]:
    """The index ranges of :func:`_topk_of_blocks` for ``n`` rows, ``s`` slices and ``k`` (read-only):
    the slices as a column, the groups (int32), the flat offsets of a group's rows, the positions
    within the ``k`` groups' elements (int32)."""
    g = _group_count(n, k)
    out = (np.arange(s)[:, None], np.arange(g, dtype=np.int32), np.arange(0, n * s, g * s),
           np.arange(k * (n // g), dtype=np.int32))
    for a in out:
        a.flags.writeable = False
    return out


def _group_count(n: int, k: int) -> int:
    """The row groups of :func:`_topk_of_blocks` for ``n`` rows: ``n / 2**j`` for the largest ``j``
    leaving at least ``max(4 * k, 128)`` groups with at most 2**15 values in ``k`` of them (0: none)."""
    g = n
    while g % 2 == 0 and g // 2 >= max(4 * k, 128):
        g //= 2
    return g if g > k and k * (n // g) < 1 << 15 and g < 1 << 15 else 0


# Length of the short segments that replace the first k blocks of :func:`_topk_replay_rows`.
_HEAD_SEGMENT = 8


@functools.lru_cache(maxsize=64)
def _row_segments(h: int, n: int, b: int, head: int) -> np.ndarray:
    """Flat starts of the segments of :func:`_topk_replay_rows` over ``h`` rows of ``n`` (read-only):
    :data:`_HEAD_SEGMENT` long over the first ``head`` of a row, ``b`` long after."""
    starts = np.concatenate([np.arange(0, head, _HEAD_SEGMENT), np.arange(head, n, b)])
    flat = (np.arange(0, h * n, n)[:, None] + starts).reshape(-1)
    flat.flags.writeable = False
    return flat


def _topk_replay_rows(t: np.ndarray, k: int) -> np.ndarray:
    """:func:`_replay` of every row of ``t`` (``(slices, n)``, C-contiguous, ``n`` a multiple of
    :data:`_SCREEN_BLOCK` with more than ``k`` blocks) over a screen in the manner of
    :func:`_screen`, computed along the rows (contiguous loops): every element not below the
    ``k``-th largest maximum of the segments before its own (a lower bound of the heap minimum
    there). The segments are blocks of 32 or 64 (fewer maxima where they fit), the first ``k``
    of them cut into :data:`_HEAD_SEGMENT` (few maxima are known there; the first ``k`` short
    segments, the seeds among them, are kept whole).

    Returns:
        ``(slices, k)`` positions, largest value first, in MLI's order.
    """
    h, n = t.shape
    b = 2 * _SCREEN_BLOCK if n % (2 * _SCREEN_BLOCK) == 0 and n // (2 * _SCREEN_BLOCK) > k else _SCREEN_BLOCK
    head, nf = k * b, k * b // _HEAD_SEGMENT
    smax = np.maximum.reduceat(t.reshape(-1), _row_segments(h, n, b, head))
    km = _prefix_kth(smax.reshape(h, -1).T, k, _limits(t.dtype)[0])  # (segments + 1, h)
    flags = np.empty((h, n), dtype=bool)
    np.greater_equal(t[:, :head], np.repeat(km[:nf].T, _HEAD_SEGMENT, axis=1), out=flags[:, :head])
    np.greater_equal(t[:, head:].reshape(h, -1, b), km[nf:-1].T[:, :, None],
                     out=flags[:, head:].reshape(h, -1, b))
    flat = _hits(flags)  # (np.nonzero of a 2-D mask is several times slower)
    sl, pos = np.divmod(flat, n)
    return _replay_slices(pos, sl, t.reshape(-1)[flat], h, k)


def _topk_screened(cols: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` largest values of every column (``1 < k <= n``), in MLI's heap order.

    For ``k == 3``, several long slices of 8-bit values (whose maximum nearly always repeats) go
    through :func:`_top3_of_max` first. Several slices whose ``k`` largest values are distinct and
    alone at the top are found from their block maxima (:func:`_topk_of_blocks`); when few others
    remain, their heaps are replayed over a screen along their rows (:func:`_topk_replay_rows`);
    when many 16-bit ones remain (ties at the top) and ``k == 3``, they try :func:`_top3_of_max`.
    Otherwise the other slices take the exact screen (:func:`_screen`):
    those whose ``k`` largest values are distinct and alone at the top are sorted
    (:func:`_sorted_top`), the rest replay the heap over their candidates (:func:`_replay_slices`).
    """
    n, s = cols.shape
    if s > 1:
        cols = np.ascontiguousarray(cols)  # one copy: every step below runs along the rows
    idx = np.zeros((s, k), dtype=np.int64)
    rest = np.arange(s)
    if k == 3 and s > 1 and n >= 2 * k * _SCREEN_BLOCK and cols.dtype.itemsize == 1:
        idx, ok3 = _top3_of_max(cols)
        if ok3.all():
            return idx
        rest = _hits(~ok3)
    if (rest.size > 1 and cols.dtype.itemsize <= 2 and n % _SCREEN_BLOCK == 0 and n // _SCREEN_BLOCK > k
            and _group_count(n, k)):
        if rest.size == s:
            idx, ok = _topk_of_blocks(np.ascontiguousarray(cols), k)
            rest = _hits(~ok)
        else:
            top_idx, ok = _topk_of_blocks(np.ascontiguousarray(cols[:, rest]), k)
            idx[rest[ok]] = top_idx[ok]
            rest = rest[~ok]
        if rest.size == 0:
            return idx
        if rest.size * 4 <= s:
            idx[rest] = _topk_replay_rows(np.ascontiguousarray(cols[:, rest].T), k)
            return idx
        if k == 3 and cols.dtype.itemsize == 2 and n >= 2 * k * _SCREEN_BLOCK:
            # Many 16-bit slices with ties at the top: their maxima may repeat as 8-bit ones do.
            top_idx, ok3 = _top3_of_max(cols if rest.size == s else cols[:, rest])
            idx[rest[ok3]] = top_idx[ok3]
            rest = rest[~ok3]
            if rest.size == 0:
                return idx
    sub = cols if rest.size == s else cols[:, rest]
    mask, final = _screen(sub, k)
    pos, sl, vals = _candidates(sub, mask)
    top_idx, ok = _sorted_top(pos, sl, vals, final, k)
    if not ok.all():
        bad = _hits(~ok)
        keep = ~ok[sl]
        top_idx[bad] = _replay_slices(pos[keep], np.searchsorted(bad, sl[keep]), vals[keep], bad.size, k)
    idx[rest] = top_idx
    return idx


def _slice_offsets(shape: Sequence[int], axis: int, idx: np.ndarray, strides: Sequence[int] | None) -> np.ndarray:
    """Memory offsets of positions ``idx[slice, j]`` within the slices of :func:`_slices` (only those)."""
    shape = [int(d) for d in shape]
    st = [int(m) for m in strides] if strides is not None else dense_strides(shape)
    idx = np.asarray(idx, dtype=np.int64)
    dense = st == dense_strides(shape)
    if axis < 0 and dense:
        return idx  # a dense tensor's position in C order is its offset
    if dense and axis == len(shape) - 1:
        return idx * shape[axis] + np.arange(shape[axis], dtype=np.int64)[:, None]  # row-major (rest, axis)
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
