"""numba-compiled per-slice reductions (argmax's heap, l2_normalize), loaded through
:func:`pymli.kernels._jit.compiled` (only when numba is installed: an optional dependency).

Like :mod:`pymli.kernels._jit_numba`: ``nopython``, ``nogil``, ``cache=True`` and no ``fastmath``; all
arithmetic is on integers (int64, or int32 where the caller proves every value fits). Each function
takes NumPy's results for the same inputs bit for bit (the callers in :mod:`pymli.kernels.diverse`
and :mod:`pymli.kernels.transform` say why; ``tests/kernels/test_jit_reduce.py`` compares them).
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["argmax_heap1", "argmax_heaps", "l2_factors", "l2_sums", "scale_slices", "softmax_exp", "warm_up"]

_JIT = {"nogil": True, "cache": True, "fastmath": False, "boundscheck": False}

# argmax's screen for one slice: a block of this many values whose maximum is below the heap
# minimum cannot change the heap (its maximum is a vectorised reduction; 64 measured 3x slower).
_BLOCK = 256


@numba.njit(inline="always", **_JIT)
def _max(w):  # pragma: no cover - compiled
    """The maximum of a non-empty 1-D array (a loop from index 0: LLVM vectorises it, where indices
    not provably non-negative keep the wrap-around of negative indices and a scalar loop)."""
    m = w[0]
    for c in range(1, w.shape[0]):
        m = max(m, w[c])
    return m


@numba.njit(inline="always", **_JIT)
def _any_ge(row, thr):  # pragma: no cover - compiled
    """Whether any ``row[s] >= thr[s]`` (one vectorised pass, as :func:`_max`)."""
    hit = False
    for s in range(row.shape[0]):
        hit |= row[s] >= thr[s]
    return hit


@numba.njit(inline="always", **_JIT)
def _sift(hv, hi, s, size, root):  # pragma: no cover - compiled
    """``heapify`` of ``diverse._sift``: sift ``root`` down the min-heap ``hv[s, :size]`` (positions in
    ``hi[s]``), strict ``<`` comparisons, the left child first."""
    half = size // 2
    while root < half:
        left = 2 * root + 1
        right = left + 1
        small = root
        if hv[s, left] < hv[s, small]:
            small = left
        if right < size and hv[s, right] < hv[s, small]:
            small = right
        if small == root:
            return
        v, p = hv[s, root], hi[s, root]
        hv[s, root], hi[s, root] = hv[s, small], hi[s, small]
        hv[s, small], hi[s, small] = v, p
        root = small


@numba.njit(inline="always", **_JIT)
def _enter(hv, hi, s, k, v, pos):  # pragma: no cover - compiled
    """An element not below the heap minimum replaces the root and sifts down."""
    hv[s, 0] = v
    hi[s, 0] = pos
    _sift(hv, hi, s, k, 0)


@numba.njit(inline="always", **_JIT)
def _sort(hv, hi, ns, k):  # pragma: no cover - compiled
    """MLI's output order of every heap: the root swapped with the last entry, the rest sifted."""
    for s in range(ns):
        for i in range(k - 1, 0, -1):
            v, p = hv[s, 0], hi[s, 0]
            hv[s, 0], hi[s, 0] = hv[s, i], hi[s, i]
            hv[s, i], hi[s, i] = v, p
            _sift(hv, hi, s, i, 0)


@numba.njit(**_JIT)
def argmax_heaps(cols, k, hv, hi):  # pragma: no cover - compiled
    """MLI's argmax heap of every slice: ``cols`` is (elements, slices) in the C visiting order
    (any strides), ``1 <= k <= elements``; ``hv`` / ``hi`` are (slices, k) int64 scratch.

    Per slice (as ``diverse.argmax_reference``): the first ``k`` elements are heapified, every later
    element not below the root replaces it and sifts down, then the heap is sorted (root swapped
    with the last entry, sift of the rest), leaving ``hi[s]`` the positions, largest value first.
    A row none of whose values reaches its slice's root is skipped after one vector compare.
    """
    n, ns = cols.shape
    for s in range(ns):
        for j in range(k):
            hv[s, j] = cols[j, s]
            hi[s, j] = j
        for r in range(k // 2 - 1, -1, -1):
            _sift(hv, hi, s, k, r)
    thr = np.empty(ns, dtype=cols.dtype)  # the roots, in the values' type (a vector compare)
    for s in range(ns):
        thr[s] = hv[s, 0]
    for c in range(k, n):
        if _any_ge(cols[c], thr):
            for s in range(ns):
                v = cols[c, s]
                if v >= thr[s]:
                    _enter(hv, hi, s, k, v, c)
                    thr[s] = hv[s, 0]
    _sort(hv, hi, ns, k)


@numba.njit(**_JIT)
def argmax_heap1(v, k, hv, hi):  # pragma: no cover - compiled
    """:func:`argmax_heaps` of one slice ``v`` (1-D, any stride); ``hv`` / ``hi`` are (1, k) int64.

    Blocks of :data:`_BLOCK` values whose maximum is below the root are skipped. Once every entry
    equals the slice maximum, a later equal value replaces the root and the strict sift leaves it
    there: only the last one matters (searched backwards), as in ``diverse._replay``.
    """
    n = v.shape[0]
    top = _max(v)
    for j in range(k):
        hv[0, j] = v[j]
        hi[0, j] = j
    for r in range(k // 2 - 1, -1, -1):
        _sift(hv, hi, 0, k, r)
    j = k
    while j < n and hv[0, 0] != top:
        e = min(j + _BLOCK, n)
        c = j if _max(v[j:e]) >= hv[0, 0] else e
        while c < e:
            if v[c] >= hv[0, 0]:
                _enter(hv, hi, 0, k, v[c], c)
                if hv[0, 0] == top:
                    break
            c += 1
        j = min(c + 1, e)
    if hv[0, 0] == top:
        for c in range(n - 1, j - 1, -1):
            if v[c] == top:
                hi[0, 0] = c
                break
    _sort(hv, hi, 1, k)


@numba.njit(**_JIT)
def l2_sums(x, zp, acc):  # pragma: no cover - compiled
    """``acc[a, b] = sum over i of (x[a, i, b] - zp)**2`` of the (A, N, B) array ``x`` (int8 / int16,
    C-contiguous): the sums of squares of its A * B slices along the middle axis, exact in int64
    (each square at most 2**30; the caller bounds the slice length)."""
    na, nn, nb = x.shape
    for a in range(na):
        if nb == 1:
            t = np.int64(0)
            for i in range(nn):
                v = np.int64(x[a, i, 0]) - zp
                t += v * v
            acc[a, 0] = t
            continue
        for b in range(nb):
            acc[a, b] = 0
        for i in range(nn):
            for b in range(nb):
                v = np.int64(x[a, i, b]) - zp
                acc[a, b] += v * v


@numba.njit(**_JIT)
def l2_factors(total, table, up, base, inv, shift):  # pragma: no cover - compiled
    """The per-slice factor and shift of ``transform._l2_factors`` from the sums of squares ``total``
    (non-negative int64 below 2**62, any shape, C-contiguous; ``inv`` / ``shift`` int64 of the same shape).

    ``norm_shift = 48 - norm64(t)`` is ``bitlength(t) - 15`` (also for 0), made even upwards;
    ``sum_cast = min(asr_rnd(t, norm_shift, 64), 32767)`` (a left shift of ``t < 2**15`` when
    ``norm_shift <= 0``, exact; ROUND_UP adds half, ROUND_CONVERGENT rounds a tie to even; ``t`` is
    not negative); ``inv = table[sum_cast]``, ``shift = base + (norm_shift + 8) // 2``
    (``base = lut.out_frac_bits - out_shift``).

    Returns:
        Whether every ``inv`` lies in ``[-2**15, 2**15)`` and every shift is at least 1 (the bounds
        of :func:`scale_slices`).
    """
    t_all, inv_all, shift_all = total.reshape(-1), inv.reshape(-1), shift.reshape(-1)
    ok = True
    for j in range(t_all.shape[0]):
        t = t_all[j]
        e = 0
        for step in (32, 16, 8, 4, 2, 1):
            if (t >> (e + step - 1)) != 0:
                e += step
        ns = e - 15
        ns += ns & 1
        if ns <= 0:
            c = t << -ns
        elif up:
            c = (t + (np.int64(1) << (ns - 1))) >> ns
        else:
            half = np.int64(1) << (ns - 1)
            c = t >> ns
            if (t & half) != 0 and ((c & 1) != 0 or (t & (half - 1)) != 0):
                c += 1
        v = table[min(c, 32767)]
        sh = base + ((ns + 8) >> 1)
        inv_all[j] = v
        shift_all[j] = sh
        ok = ok and -32768 <= v <= 32767 and sh >= 1
    return ok


@numba.njit(**_JIT)
def softmax_exp(x, table, e, total):  # pragma: no cover - compiled
    """Softmax's exponentials of the (A, N, B) array ``x`` (int8 / int16, C-contiguous) along the
    middle axis: ``e[a, i, b] = table[(max - x[a, i, b]) mod 2**bits]`` (``max`` of the slice ``(a, b)``,
    the difference in the unsigned type of ``x``'s width, as ``transform._max_distance``) and
    ``total[a, b]`` their sum in int64 (exact: at most ``n * 2**15``; the caller wraps it to C's int32).
    """
    na, nn, nb = x.shape
    mask = (1 << (8 * x.itemsize)) - 1
    if nb == 1:
        x2, e2 = x.reshape(na, nn), e.reshape(na, nn)
        for a in range(na):
            xr, er = x2[a], e2[a]
            top = np.int64(_max(xr))
            t = np.int64(0)
            for i in range(nn):
                v = table[(top - np.int64(xr[i])) & mask]
                er[i] = v
                t += v
            total[a, 0] = t
        return
    m = np.empty(nb, dtype=np.int64)
    for a in range(na):
        for b in range(nb):
            m[b] = x[a, 0, b]
            total[a, b] = 0
        for i in range(1, nn):  # row by row: the inner loops run along memory
            for b in range(nb):
                m[b] = max(m[b], np.int64(x[a, i, b]))
        for i in range(nn):
            for b in range(nb):
                v = table[(m[b] - np.int64(x[a, i, b])) & mask]
                e[a, i, b] = v
                total[a, b] += v


@numba.njit(inline="always", **_JIT)
def _rnd32(p, n, up):  # pragma: no cover - compiled
    """``asr_rnd(p, n, 32)`` of an int32 ``p`` for ``1 <= n <= 30`` when ``p + 2**(n - 1)`` fits int32:
    ``(p + half) >> n`` (ROUND_UP) or the tie to the even neighbour (ROUND_CONVERGENT)."""
    one = np.int32(1)
    half = one << (n - one)
    if up:
        return (p + half) >> n
    q = p >> n
    if (p & half) != 0 and ((q & one) != 0 or (p & (half - one)) != 0):
        q += one
    return q


@numba.njit(**_JIT)
def scale_slices(x, zp, inv, shift, up, lo, hi, out):  # pragma: no cover - compiled
    """``out[a, i, b] = clip(asr_rnd(inv[a, b] * (x[a, i, b] - zp), shift[a, b], 32), lo, hi)`` of the
    (A, N, B) arrays ``x`` and ``out`` (same index, so ``out`` may be ``x`` itself); ``up``: ROUND_UP,
    else ROUND_CONVERGENT. The last step of l2_normalize and of softmax (``zp = 0``).

    int32 arithmetic, exact as in ``arith.lut.scale_round_sat`` (the caller proves ``|x - zp| <= 2**15``,
    ``|inv| <= 2**15`` and ``shift >= 1``): a shift of 31 or more gives 0 (``inv`` zeroed), others are
    at most 30, so the product and the rounding add stay within int32.
    """
    na, nn, nb = x.shape
    r = np.empty((na, nb), dtype=np.int32)
    sh = np.empty((na, nb), dtype=np.int32)
    for a in range(na):
        for b in range(nb):
            r[a, b] = 0 if shift[a, b] >= 31 else np.int32(inv[a, b])
            sh[a, b] = min(shift[a, b], 30)
    z = np.int32(zp)
    l32, h32 = np.int32(lo), np.int32(hi)
    for a in range(na):
        if nb == 1:
            ri, n = r[a, 0], sh[a, 0]
            for i in range(nn):
                q = _rnd32((np.int32(x[a, i, 0]) - z) * ri, n, up)
                out[a, i, 0] = min(max(q, l32), h32)
            continue
        for i in range(nn):
            for b in range(nb):
                q = _rnd32((np.int32(x[a, i, b]) - z) * r[a, b], sh[a, b], up)
                out[a, i, b] = min(max(q, l32), h32)


def warm_up() -> None:
    """Compile (or load from numba's cache) the argument types :mod:`pymli.kernels.diverse` and
    :mod:`pymli.kernels.transform` pass, as :func:`pymli.kernels._jit.warm_up` asks of each
    compiled-kernel module: int8 and int16 values; argmax's columns C-ordered, F-ordered (an axis
    before the last) and strided, its one slice contiguous and strided; l2_normalize's and softmax's
    C-contiguous (A, N, B) arrays with their read-only tables."""
    for dt in (np.int8, np.int16):
        x = np.zeros((4, 4), dt)
        hv, hi = np.empty((4, 2), np.int64), np.empty((4, 2), np.int64)
        for cols in (x, np.asfortranarray(x), x[:, ::2]):
            argmax_heaps(cols, 2, hv[: cols.shape[1]], hi[: cols.shape[1]])
        for v in (x[0], x[:, 0]):
            argmax_heap1(v, 2, hv[:1], hi[:1])
        x3 = np.zeros((1, 2, 2), dt)
        total, inv, shift = (np.zeros((1, 2), np.int64) for _ in range(3))
        l2_sums(x3, 0, total)
        inv_table = np.zeros(1 << 15, np.int64)
        inv_table.flags.writeable = False
        l2_factors(total, inv_table, True, 0, inv, shift)
        shift[:] = 1
        lo, hi_ = int(np.iinfo(dt).min), int(np.iinfo(dt).max)
        scale_slices(x3, 0, inv, shift, True, lo, hi_, np.empty_like(x3))
        exp_table = np.zeros(1 << (8 * x3.itemsize), dt)
        exp_table.flags.writeable = False
        softmax_exp(x3, exp_table, np.empty_like(x3), total)
