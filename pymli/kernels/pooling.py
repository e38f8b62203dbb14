"""Average and max pooling over HWC feature maps (``kernels/pooling`` of MLI 2.0).

Both kernels see the input through its padded windows: output ``(i, j)`` covers input rows
``i * stride_h - pad_top ... + kernel_h - 1`` and columns ``j * stride_w - pad_left ...``. Padded
positions never take part: max pooling ignores them, average pooling divides by the number of
valid (non-padded) elements of each window. The output size is given (MLI derives the bottom and
right padding from it), so windows that would only cover bottom/right padding never occur.

Window reductions are separable: one pass over ``kernel_w`` strided column slices, one over
``kernel_h`` row slices (loops over kernel taps only).

:func:`maxpool_hwc` and :func:`avepool_hwc` also take a batch ``[N, H, W, C]``: the taps then
slide over axes 1 and 2 of the whole batch in the same passes, and sample ``n`` of the result is
bit-identical to the kernel applied to ``x[n]`` alone (every output element depends on its own
sample's window only; the per-window parameters broadcast over the batch).

:class:`PreparedPool` is a layer's pooling with its parameters derived once per platform, and its
one-shape form (:meth:`PreparedPool.single`) a small map's whole call in one compiled loop nest
(:mod:`pymli.kernels._jit_pool`) or one gather.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ..arith.activation import clamp
from ..arith.geometry import ceil_div
from ..arith.geometry import pool_out_size as out_size
from ..arith.pool import RequantParams, avepool_multiplier, avepool_output
from ..config import Platform, get_platform
from . import _jit
from ._scratch import scratch

__all__ = ["valid_counts", "window_reduce", "avepool_hwc", "maxpool_hwc", "pool_plan", "PreparedPool", "out_size",
           "degenerate", "pool_writes_c_order"]


def valid_counts(in_size: int, out_len: int, kernel: int, stride: int, pad_before: int) -> np.ndarray:
    """Valid (non-padded) input elements of each window along one axis (int64, length ``out_len``)."""
    start = np.arange(out_len, dtype=np.int64) * stride - pad_before
    return np.minimum(start + kernel, in_size) - np.maximum(start, 0)


def _check_rank(x: np.ndarray) -> None:
    """Refuse anything but one HWC map or a batch of them."""
    if x.ndim not in (3, 4):
        raise ValueError(f"pooling input must be [H, W, C] or [N, H, W, C], not {x.ndim}-D")


def window_reduce(x: npt.NDArray[np.integer], kernel: tuple[int, int], stride: tuple[int, int],
                  pad: tuple[int, int], out_hw: tuple[int, int], op: np.ufunc, fill: int,
                  dtype: npt.DTypeLike) -> np.ndarray:
    """Reduce every pooling window of an HWC array (or a batch of them) with ``op``.

    Args:
        x: input, shape ``[H, W, C]`` or ``[N, H, W, C]`` (any strides).
        kernel: (kernel_h, kernel_w).
        stride: (stride_h, stride_w).
        pad: (pad_top, pad_left); the bottom/right extent follows from ``out_hw``.
        out_hw: (out_h, out_w).
        op: binary ufunc applied tap by tap (``np.add`` or ``np.maximum``).
        fill: value of padded positions (neutral for ``op``).
        dtype: accumulation dtype.

    Returns:
        A new ``[out_h, out_w, C]`` (``[N, out_h, out_w, C]`` for a batch) array of ``dtype``.

    Raises:
        ValueError: ``x`` is not 3-D or 4-D.
    """
    return _window_reduce(x, kernel, stride, pad, out_hw, op, fill, dtype, None)


def _window_reduce(x: np.ndarray, kernel: tuple[int, int], stride: tuple[int, int], pad: tuple[int, int],
                   out_hw: tuple[int, int], op: np.ufunc, fill: int, dtype: npt.DTypeLike,
                   result: str | None) -> np.ndarray:
    """:func:`window_reduce`; the padded input and the intermediate live in scratch buffers, and
    so does the result when ``result`` names one (then valid only until the next such call)."""
    _check_rank(x)
    (kh, kw), (sh, sw), (pt, pl), (oh, ow) = kernel, stride, pad, out_hw
    h, w = x.shape[-3:-1]
    lead, c = x.shape[:-3], x.shape[-1]
    hn, wn = (oh - 1) * sh + kh, (ow - 1) * sw + kw  # extent of the padded input actually read
    if pt == 0 and pl == 0 and hn <= h and wn <= w:
        buf = x[..., :hn, :wn, :]
    else:
        buf = scratch("pool padded", (*lead, hn, wn, c), x.dtype)
        buf.fill(fill)
        rows, cols = min(h, hn - pt), min(w, wn - pl)
        buf[..., pt:pt + rows, pl:pl + cols, :] = x[..., :rows, :cols, :]
    part = _reduce_taps(buf, -2, kw, sw, ow, op, dtype, scratch("pool part", (*lead, hn, ow, c), dtype))
    out = np.empty((*lead, oh, ow, c), dtype) if result is None else scratch(result, (*lead, oh, ow, c), dtype)
    return _reduce_taps(part, -3, kh, sh, oh, op, dtype, out)


def _reduce_taps(a: np.ndarray, axis: int, k: int, s: int, n: int, op: np.ufunc, dtype: npt.DTypeLike,
                 out: np.ndarray) -> np.ndarray:
    """``op`` over the ``k`` taps of ``n`` windows with stride ``s`` along ``axis`` of ``a``, in ``dtype``.

    The result is written into ``out`` (of ``dtype``, not overlapping ``a``) and returned.
    """
    span = (n - 1) * s + 1
    index = [slice(None)] * a.ndim
    index[axis] = slice(0, span, s)
    out[...] = a[tuple(index)]  # a widening integer cast (or a copy): values unchanged
    for d in range(1, k):
        index[axis] = slice(d, d + span, s)
        op(out, a[tuple(index)], out=out)  # measured faster than a first op(tap0, tap1, out=out)
    return out


def degenerate(in_h: int, in_w: int, kernel: tuple[int, int], stride: tuple[int, int],
               pads: tuple[int, int, int, int], out_hw: tuple[int, int]) -> bool:
    """Whether MLI's border processing of this geometry reaches outside the output tensor.

    MLI computes the outputs next to each padded side in a separate pass whose extent is
    ``ceil(pad / stride)`` rows or columns. When that exceeds the output (a kernel much wider than
    the input, tiny outputs), the C reference writes past the output tensor's edges.

    Args:
        pads: (top, bottom, left, right) as in the cfg; bottom/right are re-derived from ``out_hw``.
    """
    (kh, kw), (sh, sw), (oh, ow) = kernel, stride, out_hw
    pt, _, pl, _ = pads
    pr = max(ow * sw + kw - sw - in_w - pl, 0)
    pb = max(oh * sh + kh - sh - in_h - pt, 0)
    cdiv = ceil_div
    return bool((pt and (cdiv(pt, sh) > oh or cdiv(pl, sw) > ow)) or (pr and cdiv(pr, sw) > ow)
                or (pb and cdiv(pb, sh) > oh) or (pl and cdiv(pl, sw) > ow))


def _runs(v: np.ndarray) -> list[tuple[int, int, int]]:
    """Runs of equal values: (begin, end, value)."""
    edges = np.flatnonzero(np.diff(v)) + 1
    bounds = [0, *edges.tolist(), len(v)]
    return [(b, e, int(v[b])) for b, e in zip(bounds[:-1], bounds[1:])]


@functools.lru_cache(maxsize=256)
def _count_runs(in_size: int, out_len: int, kernel: int, stride: int,
                pad_before: int) -> tuple[tuple[int, int, int], ...]:
    """:func:`_runs` of :func:`valid_counts` along one axis, cached per geometry."""
    return tuple(_runs(valid_counts(in_size, out_len, kernel, stride, pad_before)))


def maxpool_hwc(x: npt.NDArray[np.integer], *, kernel: tuple[int, int], stride: tuple[int, int],
                pad: tuple[int, int], out_hw: tuple[int, int]) -> np.ndarray:
    """Max pooling (``mli_krn_maxpool_hwc_*``): maximum of the valid elements of each window.

    Args:
        x: int8 / int16 input ``[H, W, C]``, or a batch ``[N, H, W, C]`` pooled in one pass.
        kernel, stride, pad, out_hw: see :func:`window_reduce`.

    Returns:
        ``[out_h, out_w, C]`` (``[N, out_h, out_w, C]``) array of ``x.dtype``; each sample equals
        the kernel applied to it alone.

    Raises:
        ValueError: ``x`` is not 3-D or 4-D.
    """
    lo = -(1 << (8 * x.dtype.itemsize - 1))  # the type's minimum: never beats a valid element
    return _window_reduce(x, kernel, stride, pad, out_hw, np.maximum, lo, x.dtype, None)


def avepool_hwc(x: npt.NDArray[np.integer], *, kernel: tuple[int, int], stride: tuple[int, int],
                pad: tuple[int, int], out_hw: tuple[int, int], base_shift: int,
                requant: RequantParams | None = None, mul16: bool = False) -> np.ndarray:
    """Average pooling (``mli_krn_avepool_hwc_*``) with MLI's reciprocal multiplier arithmetic.

    Args:
        x: int8 (fx8 / sa8) or int16 (fx16) input ``[H, W, C]``, or a batch ``[N, H, W, C]``
            pooled in one pass (one quantisation for the whole batch).
        kernel, stride, pad, out_hw: see :func:`window_reduce`.
        base_shift: ``in_frac_bits - out_frac_bits`` for fx; ignored for sa8.
        requant: sa8 input-to-output requantisation (``define_requant_params``); ``None`` for fx.
        mul16: AVEPOOL_16BIT_MUL build (sa8 multiplier kept on 16 bits instead of 8).

    Returns:
        ``[out_h, out_w, C]`` (``[N, out_h, out_w, C]``) array of ``x.dtype``; each sample equals
        the kernel applied to it alone.

    Raises:
        ValueError: ``x`` is not 3-D or 4-D.
    """
    _check_rank(x)
    h, w = x.shape[-3:-1]
    (kh, kw), (sh, sw), (pt, pl), (oh, ow) = kernel, stride, pad, out_hw
    bits = x.dtype.itemsize * 8
    # |x| <= 2**(bits-1) per element: the sum of n taps needs bits + log2(n) bits.
    taps = kh * kw
    sdt = np.int16 if taps < (1 << (16 - bits)) else np.int32 if taps < (1 << (32 - bits)) else np.int64
    sums = _window_reduce(x, kernel, stride, pad, out_hw, np.add, 0, sdt, "pool sums")
    acc_bits = 32 if bits == 8 else 64  # mli_acc32_t for 8-bit data, mli_acc40_t (int64) for 16-bit
    shift0 = requant.shift if requant is not None else base_shift
    offset = requant.offset if requant is not None else 0
    scale = requant.scale if requant is not None else None
    rows = _count_runs(h, oh, kh, sh, pt)
    cols = _count_runs(w, ow, kw, sw, pl)
    fast = _avepool_output_float(sums, rows, cols, shift0, scale, offset, mul16, acc_bits, bits, x.dtype)
    if fast is not None:
        return fast
    out = np.empty(sums.shape, dtype=x.dtype)
    for r0, r1, nr in rows:
        for c0, c1, nc in cols:
            mul, shift = avepool_multiplier(nr * nc, shift0, scale, mul16)
            out[..., r0:r1, c0:c1, :] = avepool_output(sums[..., r0:r1, c0:c1, :], mul, shift, offset, acc_bits,
                                                       bits, sum_bound=nr * nc << (bits - 1))
    return out


_PARAMS: dict[tuple, tuple[np.ndarray, np.ndarray] | None] = {}


def _window_params(rows: Sequence[tuple[int, int, int]], cols: Sequence[tuple[int, int, int]], shift0: int,
                   scale: int | None, offset: int, mul16: bool, acc_bits: int, bits: int,
                   round_up: bool) -> tuple[np.ndarray, np.ndarray] | None:
    """Per-window ``mul * 2**-shift`` and ``half * 2**-shift`` (float32 or float64), cached: arrays
    ``[out_h, out_w, 1]``, or two scalars when every window has the same size.

    None when some window's arithmetic leaves the range where C's accumulator neither wraps nor
    saturates, or where the float type cannot hold ``|mul * sum| + half`` exactly: the caller then
    takes the integer path. Cached per geometry, quantisation and rounding mode.
    """
    key = (tuple(rows), tuple(cols), shift0, scale, offset, mul16, acc_bits, bits, round_up)
    if key in _PARAMS:
        return _PARAMS[key]
    top = (1 << (acc_bits - 1)) - 1
    oh, ow = rows[-1][1], cols[-1][1]
    factor = np.empty((oh, ow, 1))
    addend = np.empty((oh, ow, 1))
    widest = 0
    result: tuple[np.ndarray, np.ndarray] | None = None
    for r0, r1, nr in rows:
        for c0, c1, nc in cols:
            mul, shift = avepool_multiplier(nr * nc, shift0, scale, mul16)
            if not 0 < shift < acc_bits:
                break
            half = 1 << (shift - 1)
            prod = abs(mul) * (nr * nc << (bits - 1))  # bound of |mul * sum|
            if prod + abs(offset << shift) + half > top:
                break  # C's accumulator could wrap or saturate: integer path
            # ROUND_UP adds the offset after the floor; CONVERGENT must round the biased value
            # (ties go to even and the offset changes the parity), so it needs the bias too.
            widest = max(widest, prod + half if round_up else prod + abs(offset << shift))
            factor[r0:r1, c0:c1] = np.ldexp(float(mul), -shift)
            addend[r0:r1, c0:c1] = np.ldexp(float(half), -shift) if round_up else 0.0
        else:
            continue
        break
    else:
        # After the scaling |y| <= widest / 2: below 2**23 (2**52); with ROUND_UP the offset added
        # after the floor then stays exact.
        if widest < 1 << 24 and abs(offset) < 1 << 22:
            result = (factor.astype(np.float32), addend.astype(np.float32))
        elif widest < 1 << 53 and abs(offset) < 1 << 51:
            result = (factor, addend)
        if result is not None and len(rows) == len(cols) == 1:
            result = (result[0][0, 0, 0], result[1][0, 0, 0])  # one window size: scalars broadcast faster
    if len(_PARAMS) >= 64:
        _PARAMS.clear()
    _PARAMS[key] = result
    return result


def _avepool_output_float(sums: np.ndarray, rows: Sequence[tuple[int, int, int]],
                          cols: Sequence[tuple[int, int, int]],
                          shift0: int, scale: int | None, offset: int, mul16: bool, acc_bits: int, bits: int,
                          out_dtype: np.dtype) -> np.ndarray | None:
    """:func:`pymli.arith.pool.avepool_output` for every window at once, in floats; None if unsafe.

    Exactness: where ``|mul * sum| + |offset << shift| + 2**(shift-1)`` fits the accumulator
    (checked per window from the largest possible sum), C's 32/40-bit arithmetic neither wraps
    nor saturates, so with ``bias = offset << shift`` the output is
    ``offset + floor((mul * sum + half) / 2**shift)`` (ROUND_UP; the bias is a multiple of
    ``2**shift``) or ``rint((mul * sum + bias) / 2**shift)`` with ties to even (CONVERGENT). The
    float type (float32 below ``2**24``, else float64 below ``2**53``) holds the numerator
    exactly, the scaling by ``2**-shift`` is exact, so ``floor`` / ``rint`` give those integers
    exactly, and adding the (bounded) offset is exact too; the clip is the output saturation.
    """
    round_up = get_platform().round_up
    p = _window_params(rows, cols, shift0, scale, offset, mul16, acc_bits, bits, round_up)
    if p is None:
        return None
    factor, addend = p
    y = scratch("pool float", sums.shape, factor.dtype)
    y[...] = sums
    y *= factor
    return _float_finish(y, addend, offset, round_up, bits, out_dtype)


def _float_finish(y: np.ndarray, addend: np.ndarray, offset: int, round_up: bool, bits: int,
                  out_dtype: npt.DTypeLike, out: np.ndarray | None = None, saturate: bool = True) -> np.ndarray:
    """The rest of :func:`_avepool_output_float` on ``y = sums * factor`` (modified in place); the
    result as a new ``out_dtype`` array, or written into ``out`` (its values are integers).
    ``saturate=False`` leaves out the final clip (for a caller that proved it changes nothing)."""
    if round_up:
        y += addend
        np.floor(y, out=y)
        if offset:
            y += y.dtype.type(offset)  # exact: |y| < 2**(f-1), |offset| < 2**(f-2) (f = mantissa bits)
    else:
        if offset:
            y += y.dtype.type(offset)  # exact: |mul * sum + bias| < 2**f, so is the scaled sum
        np.rint(y, out=y)
    if saturate:
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        clamp(y, y.dtype.type(lo), y.dtype.type(hi), out=y)
    if out is None:
        return y.astype(out_dtype)
    out[...] = y
    return out


_GATHER_MAX = 4096  # a pool_plan gathers every tap at once up to this many gathered elements


def pool_plan(kind: str, in_hwc: tuple[int, int, int], dtype: npt.DTypeLike, *, kernel: tuple[int, int],
              stride: tuple[int, int], pad: tuple[int, int], out_hw: tuple[int, int], base_shift: int = 0,
              requant: RequantParams | None = None, mul16: bool = False) -> Callable[[np.ndarray], np.ndarray]:
    """:func:`maxpool_hwc` (``kind`` "max") or :func:`avepool_hwc` ("ave") of one geometry, with
    everything that does not depend on the values prepared once, for calls under the current
    platform (as a memoised capi plan is called).

    From its second call on, a small map gathers every tap of every window with one precomputed
    index array (padded positions read one extra element holding the reduction's neutral value),
    reduces over the taps, and (average) scales the sums with the per-window parameters of the
    float route of :func:`avepool_hwc`, whose exactness bounds it shares; anything else calls the
    functions above. Results are those functions' results.

    Args:
        kind: "max" or "ave".
        in_hwc: the input's shape ``(H, W, C)``; dtype: its container dtype (int8 / int16).
        kernel, stride, pad, out_hw, base_shift, requant, mul16: as :func:`avepool_hwc`.

    Returns:
        ``compute(x, out=None)``: ``x`` an ``in_hwc`` array; the ``[out_h, out_w, C]`` result of
        ``x``'s dtype, or ``out`` (that shape and dtype; it may overlap ``x``) holding it.
    """
    geo = dict(kernel=kernel, stride=stride, pad=pad, out_hw=out_hw)

    def general(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        if kind == "max":
            res = maxpool_hwc(x, **geo)  # type: ignore[arg-type]
        else:
            res = avepool_hwc(x, **geo, base_shift=base_shift, requant=requant, mul16=mul16)  # type: ignore[arg-type]
        if out is None:
            return res
        out[...] = res
        return out

    h, w, c = in_hwc
    (kh, kw), (_, _), (_, _), (oh, ow) = kernel, stride, pad, out_hw
    if kh * kw * oh * ow * c > _GATHER_MAX or min(h, w, c, oh, ow) < 1:
        return general
    gather: list[Callable[[np.ndarray, np.ndarray | None], np.ndarray] | None] = [None]
    calls = [0]
    round_up = get_platform().round_up

    def compute(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        g = gather[0]
        if g is None:
            calls[0] += 1
            if calls[0] > 1:  # a one-off call does not pay for the index
                g = gather[0] = _gather_pool(kind, in_hwc, np.dtype(dtype), kernel, stride, pad, out_hw, base_shift,
                                             requant, mul16, round_up) or general
            else:
                return general(x, out)
        return g(x, out)

    return compute


def _gather_index(in_hwc: tuple[int, int, int], kernel: tuple[int, int], stride: tuple[int, int],
                  pad: tuple[int, int], out_hw: tuple[int, int]) -> np.ndarray:
    """Where every tap of every window reads a flattened ``in_hwc`` map: ``[kh * kw, oh, ow, C]`` intp
    offsets, ``H * W * C`` (one past the map) for padded positions."""
    h, w, c = in_hwc
    (kh, kw), (sh, sw), (pt, pl), (oh, ow) = kernel, stride, pad, out_hw
    # Window (i, j) tap (a, b) reads row i * sh - pt + a, column j * sw - pl + b
    r = (np.arange(oh) * sh - pt)[:, None] + np.arange(kh)[None, :]  # [oh, kh]
    q = (np.arange(ow) * sw - pl)[:, None] + np.arange(kw)[None, :]  # [ow, kw]
    rr = r.T[:, None, :, None, None]  # [kh, 1, oh, 1, 1]
    qq = q.T[None, :, None, :, None]  # [1, kw, 1, ow, 1]
    inside = (rr >= 0) & (rr < h) & (qq >= 0) & (qq < w)
    flat = (rr * w + qq) * c + np.arange(c)
    return np.where(inside, flat, h * w * c).reshape(kh * kw, oh, ow, c).astype(np.intp)


def _gather_pool(kind: str, in_hwc: tuple[int, int, int], dt: np.dtype, kernel: tuple[int, int],
                 stride: tuple[int, int], pad: tuple[int, int], out_hw: tuple[int, int], base_shift: int,
                 requant: RequantParams | None, mul16: bool,
                 round_up: bool) -> Callable[[np.ndarray, np.ndarray | None], np.ndarray] | None:
    """The one-gather form of :func:`pool_plan` (None where the float route of average pooling is not exact)."""
    h, w, c = in_hwc
    (kh, kw), (sh, sw), (pt, pl), (oh, ow) = kernel, stride, pad, out_hw
    bits = dt.itemsize * 8
    finish = None
    if kind == "ave":
        rows, cols = _count_runs(h, oh, kh, sh, pt), _count_runs(w, ow, kw, sw, pl)
        shift0 = requant.shift if requant is not None else base_shift
        offset = requant.offset if requant is not None else 0
        p = _window_params(rows, cols, shift0, requant.scale if requant is not None else None, offset, mul16,
                           32 if bits == 8 else 64, bits, round_up)
        if p is None:
            return None
        factor, addend = p
        saturate = True  # decided below, once the index is known

        def finish(y: np.ndarray, out: np.ndarray | None) -> np.ndarray:
            y *= factor  # the sums (float64, exact) times 2**-shift * mul: exact (see _window_params)
            return _float_finish(y, addend, offset, round_up, bits, dt, out, saturate)
    n = h * w * c
    idx = _gather_index(in_hwc, kernel, stride, pad, out_hw)
    if finish is not None:
        # Each output is a monotonic function of its window's sum (floor / rint of a fixed multiple
        # plus constants), so its extremes come from windows full of the type's minimum or maximum:
        # when those stay in range, the output saturation never acts and is left out.
        valid = np.add.reduce(idx != n, axis=0).astype(np.float64)
        ends = [_float_finish(valid * (factor * v), addend, offset, round_up, bits, np.float64, None, False)
                for v in (float(-(1 << (bits - 1))), float((1 << (bits - 1)) - 1))]
        saturate = not all(-(1 << (bits - 1)) <= float(e.min()) and float(e.max()) <= (1 << (bits - 1)) - 1
                           for e in ends)
    neutral = -(1 << (bits - 1)) if kind == "max" else 0  # never beats a valid element / adds nothing
    ext = np.empty(n + 1, dt)
    ext[n] = neutral
    body = ext[:n].reshape(h, w, c)
    busy = threading.Lock()  # the kept buffer serves one call at a time (a memoised capi plan is shared)

    def reduce(buf: np.ndarray, buf_body: np.ndarray, x: np.ndarray, out: np.ndarray | None) -> np.ndarray:
        buf_body[...] = x
        g = buf[idx]
        if finish is None:
            return np.maximum.reduce(g, axis=0, out=out)
        # Sums of at most 2**12 values below 2**15 in magnitude: exact in float64.
        return finish(np.add.reduce(g, axis=0, dtype=np.float64), out)

    def compute(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        if busy.acquire(False):
            try:
                return reduce(ext, body, x, out)
            finally:
                busy.release()
        own = np.empty(n + 1, dt)  # another thread holds the kept buffer: a buffer of this call's own
        own[n] = neutral
        return reduce(own, own[:n].reshape(h, w, c), x, out)

    return compute


_SINGLE_GATHER_MAX = 1 << 13
""":meth:`PreparedPool.single` without the JIT takes the one-gather form of :func:`pool_plan` for one map up
to this many gathered elements (measured: no gain beyond)."""

_LUT_MAX = 1 << 18
"""The compiled average pooling of :meth:`PreparedPool.single` tabulates at most this many (sum, window
size) outputs; beyond that (int16 inputs with large windows) the NumPy forms run."""

_COMPILED_MAX_WORK = 1 << 17
""":meth:`PreparedPool.single` runs the compiled loop nest up to this many window taps (outputs times
kernel size) per call; beyond that the separable NumPy passes are as fast or faster (measured)."""

_MAX_FORMS = 8
"""Forms (platform, JIT switch) kept per input shape of :meth:`PreparedPool.single`."""


class PreparedPool:
    """:func:`maxpool_hwc` (``kind`` "max") or :func:`avepool_hwc` ("ave") of one geometry and
    quantisation, for repeated calls (a model's pooling layer): everything that does not depend on the
    values is derived once per platform and, with :meth:`single`, once per input shape.

    Calls compute what those functions compute under the platform in force (its rounding and its
    AVEPOOL_16BIT_MUL option, read on every call).
    """

    def __init__(self, kind: str, *, kernel: tuple[int, int], stride: tuple[int, int], pad: tuple[int, int],
                 out_hw: tuple[int, int], base_shift: int = 0,
                 requant: RequantParams | Callable[[], RequantParams] | None = None,
                 mul16: bool | None = None) -> None:
        """Args:
            kind: "max" or "ave".
            kernel, stride, pad, out_hw, base_shift: as :func:`avepool_hwc`.
            requant: sa8 requantisation, or a function deriving it under the platform in force (called
                once per platform: ``requant_params`` rounds); None for fx (and max pooling).
            mul16: the AVEPOOL_16BIT_MUL option; None: the platform's (``avepool_16bit_mul``).

        Raises:
            ValueError: ``kind`` is neither "max" nor "ave".
        """
        if kind not in ("max", "ave"):
            raise ValueError(f"pooling kind must be 'max' or 'ave', not {kind!r}")
        self.kind = kind
        self.geo = {"kernel": tuple(kernel), "stride": tuple(stride), "pad": tuple(pad), "out_hw": tuple(out_hw)}
        self._base_shift, self._requant, self._mul16 = base_shift, requant, mul16
        self._arith: dict[int, tuple[Platform, RequantParams | None, bool]] = {}

    def _args(self, p: Platform) -> tuple[RequantParams | None, bool]:
        """(requantisation, mul16) of platform ``p`` (in force), derived on first use."""
        a = self._arith.get(id(p))
        if a is None or a[0] is not p:  # the entry holds the platform: its id cannot be reused meanwhile
            if len(self._arith) >= _MAX_FORMS:
                self._arith.clear()
            rq = self._requant() if callable(self._requant) else self._requant
            mul16 = p.avepool_16bit_mul if self._mul16 is None else self._mul16
            a = self._arith[id(p)] = (p, rq, mul16)
        return a[1], a[2]

    def __call__(self, x: npt.NDArray[np.integer]) -> np.ndarray:
        """The pooling of ``x`` (``[H, W, C]`` or a batch ``[N, H, W, C]``), as :func:`maxpool_hwc` /
        :func:`avepool_hwc`.

        Args:
            x: int8 / int16 input.

        Returns:
            a new array of ``x``'s dtype.

        Raises:
            ValueError: ``x`` is not 3-D or 4-D.
        """
        if self.kind == "max":
            return maxpool_hwc(x, **self.geo)  # type: ignore[arg-type]
        rq, mul16 = self._args(get_platform())
        return avepool_hwc(x, **self.geo, base_shift=self._base_shift, requant=rq,  # type: ignore[arg-type]
                           mul16=mul16)

    def single(self, shape: tuple[int, ...], dtype: npt.DTypeLike) -> Callable[[np.ndarray], np.ndarray] | None:
        """The pooling for repeated calls on inputs of one shape (a model's step): ``f(x)`` returns what
        ``self(x)`` returns, with the per-call work in one compiled call (the JIT, up to
        :data:`_COMPILED_MAX_WORK` window taps: :mod:`._jit_pool`) or the one-gather form of :func:`pool_plan`
        (one small map), prepared per platform and JIT switch on first use; larger calls take ``self``, as
        do calls on other inputs.

        Args:
            shape: the input's shape, ``(H, W, C)`` or ``(N, H, W, C)``. dtype: its dtype.

        Returns:
            ``f``, or None for inputs other than int8 / int16 or empty shapes.
        """
        shape, dt = tuple(int(v) for v in shape), np.dtype(dtype)
        if dt not in (np.dtype(np.int8), np.dtype(np.int16)) or len(shape) not in (3, 4) or min(shape) < 1:
            return None
        forms: dict[tuple[int, bool], tuple[Platform, Callable[[np.ndarray], np.ndarray]]] = {}
        last: list = [(None, None, None)]  # (platform, JIT switch, form), replaced as one (threads)
        platform, on = get_platform, _jit.is_on

        def f(x: np.ndarray) -> np.ndarray:
            p, jit = platform(), on()
            lp, ljit, lform = last[0]
            if p is lp and jit is ljit and x.shape == shape and x.dtype is dt:
                return lform(x)
            if x.shape != shape or x.dtype != dt:
                return self(x)
            got = forms.get((id(p), jit))
            if got is None or got[0] is not p:
                if len(forms) >= _MAX_FORMS:
                    forms.clear()
                got = forms[(id(p), jit)] = (p, self._form(p, jit, shape, dt))
            last[0] = (p, jit, got[1])
            return got[1](x)
        return f

    def _form(self, p: Platform, jit: bool, shape: tuple[int, ...], dt: np.dtype
              ) -> Callable[[np.ndarray], np.ndarray]:
        """:meth:`single`'s computation for inputs of ``shape`` and ``dt`` under platform ``p`` (in force)."""
        four = shape if len(shape) == 4 else (1,) + shape
        (oh, ow), c = self.geo["out_hw"], shape[-1]
        out_shape = shape[:-3] + (oh, ow, c)
        (kh, kw) = self.geo["kernel"]
        work = four[0] * oh * ow * c * kh * kw
        mod = _jit.compiled("_jit_pool") if jit and work <= _COMPILED_MAX_WORK else None
        run = None if mod is None else self._compiled(mod, p, four, dt)
        if run is not None:
            o4, empty = (four[0], oh, ow, c), np.empty
            if len(shape) == 4:
                def compiled(x: np.ndarray) -> np.ndarray:
                    out = empty(o4, dt)
                    run(x, out)
                    return out
                return compiled

            def compiled3(x: np.ndarray) -> np.ndarray:
                out = empty(o4, dt)
                run(x.reshape(four), out)
                return out[0]
            return compiled3
        if four[0] == 1 and work <= _SINGLE_GATHER_MAX:
            table = self._table(p, four[1], four[2], dt) if self.kind == "ave" else None
            if table is not None:
                return self._looked_up(four[1:], dt, table, out_shape)
            rq, mul16 = self._args(p)
            g = _gather_pool(self.kind, four[1:], dt, self.geo["kernel"], self.geo["stride"],  # type: ignore[arg-type]
                             self.geo["pad"], self.geo["out_hw"], self._base_shift, rq, mul16,  # type: ignore[arg-type]
                             p.round_up)
            if g is not None:
                lock = threading.Lock()  # the gather's input buffer is the form's own: one call at a time

                def gathered(x: np.ndarray) -> np.ndarray:
                    out = np.empty(out_shape, dt)
                    with lock:
                        g(x, out.reshape(oh, ow, c))
                    return out
                return gathered
        return self

    def _looked_up(self, hwc: tuple[int, ...], dt: np.dtype, table: tuple[np.ndarray, np.ndarray],
                   out_shape: tuple[int, ...]) -> Callable[[np.ndarray], np.ndarray]:
        """The average of one ``hwc`` map as one gather of every tap, the sums, one table lookup
        (:meth:`_table`: the outputs of the integer output stage)."""
        lut, base = table
        h, w, c = hwc
        n = h * w * c
        g = self.geo
        idx = _gather_index((h, w, c), g["kernel"], g["stride"], g["pad"], g["out_hw"])  # type: ignore[arg-type]
        ext = np.zeros(n + 1, dt)  # the map, and a 0 read by the padded taps
        body = ext[:n].reshape(h, w, c)
        base3 = base[:, :, None]
        lock = threading.Lock()  # the map's buffer is the form's own: one call at a time

        def looked_up(x: np.ndarray) -> np.ndarray:
            with lock:
                body[...] = x
                g = ext[idx]
            s = np.add.reduce(g, axis=0, dtype=np.int64)  # exact
            s += base3
            return lut.take(s).reshape(out_shape)
        return looked_up

    def _table(self, p: Platform, h: int, w: int, dt: np.dtype) -> tuple[np.ndarray, np.ndarray] | None:
        """The average's output of every possible window sum under platform ``p`` (in force) for an
        ``h x w`` map of ``dt``: ``(lut, base)``, output ``(i, j)`` being ``lut[base[i, j] + sum]``
        (``base``: ``[out_h, out_w]`` int64); None beyond :data:`_LUT_MAX` entries."""
        (kh, kw), (sh, sw), (pt, pl), (oh, ow) = (self.geo[k] for k in ("kernel", "stride", "pad", "out_hw"))
        bits = dt.itemsize * 8
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        counts = valid_counts(h, oh, kh, sh, pt)[:, None] * valid_counts(w, ow, kw, sw, pl)[None, :]
        sizes = np.unique(counts)
        if int(np.abs(sizes).sum()) * (hi - lo) + sizes.size > _LUT_MAX:
            return None
        rq, mul16 = self._args(p)
        shift0 = rq.shift if rq is not None else self._base_shift
        offset = rq.offset if rq is not None else 0
        tables, starts, at = [], [], 0
        for k in sizes.tolist():
            # every possible sum of k valid elements (0 for a window without any) through the integer
            # output stage of avepool_hwc, with its multiplier and shift for windows of k elements
            mul, shift = avepool_multiplier(k, shift0, rq.scale if rq is not None else None, mul16)
            first = min(k * lo, 0)
            sums = np.arange(first, max(k * hi, 0) + 1, dtype=np.int64)
            tables.append(avepool_output(sums, mul, shift, offset, 32 if bits == 8 else 64, bits,
                                         sum_bound=abs(k) << (bits - 1)).astype(dt))
            starts.append(at - first)
            at += sums.size
        base = np.ascontiguousarray(np.array(starts, np.int64)[np.searchsorted(sizes, counts)])
        return np.concatenate(tables), base

    def _compiled(self, mod: Any, p: Platform, four: tuple[int, ...], dt: np.dtype
                  ) -> Callable[[np.ndarray, np.ndarray], None] | None:
        """``run(x, out)``: the loop nest of :mod:`._jit_pool` on a ``four``-shaped input, writing ``out``;
        None where the average's table would exceed :data:`_LUT_MAX` entries."""
        (kh, kw), (sh, sw), (pt, pl), (oh, ow) = (self.geo[k] for k in ("kernel", "stride", "pad", "out_hw"))
        _, h, w, _ = four
        if self.kind == "max":
            lo = -(1 << (dt.itemsize * 8 - 1))  # the padded positions' value: never beats a valid element
            geo = np.array([kh, kw, sh, sw, pt, pl, lo], np.int64)
            entry = mod.max_entry(dt)

            def run_max(x: np.ndarray, out: np.ndarray) -> None:
                entry(x, geo, out)
            return run_max
        table = self._table(p, h, w, dt)
        if table is None:
            return None
        lut, base = table
        geo = np.array([kh, kw, sh, sw, pt, pl], np.int64)
        entry = mod.ave_entry(dt, dt)

        def run_ave(x: np.ndarray, out: np.ndarray) -> None:
            entry(x, geo, base, lut, out)
        return run_ave


# ----------------------------------------------------------------------------------------------
# Degenerate geometries: replay MLI's border passes literally.
# ----------------------------------------------------------------------------------------------

class _Frame:
    """A (possibly rotated) view of an HWC tensor: first-element offset, sizes, element strides."""

    __slots__ = ("ptr", "height", "width", "row", "col")

    def __init__(self, ptr: int, height: int, width: int, row: int, col: int) -> None:
        self.ptr, self.height, self.width, self.row, self.col = ptr, height, width, row, col

    def rotated(self, quarter_turns: int) -> "_Frame":
        """``mli_prv_rotate_tensor_private<n>``: turn the frame counter-clockwise."""
        f = _Frame(self.ptr, self.height, self.width, self.row, self.col)
        if quarter_turns == 1:
            f.ptr += self.col * (self.width - 1)
            f.height, f.width, f.row, f.col = self.width, self.height, -self.col, self.row
        elif quarter_turns == 2:
            f.ptr += self.col * (self.width - 1) + self.row * (self.height - 1)
            f.row, f.col = -self.row, -self.col
        elif quarter_turns == 3:
            f.ptr += self.row * (self.height - 1)
            f.height, f.width, f.row, f.col = self.width, self.height, self.col, -self.row
        return f


def pool_writes_c_order(in_buf: np.ndarray, in_strides: tuple[int, int], in_hwc: tuple[int, int, int],
                        out_strides: tuple[int, int], *, kind: str, kernel: tuple[int, int],
                        stride: tuple[int, int], pad: tuple[int, int], out_hw: tuple[int, int],
                        base_shift: int = 0, requant: RequantParams | None = None,
                        mul16: bool = False, fixed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """The stores of MLI's pooling loops, in order, as (element offsets, values) pairs.

    Used for geometries where :func:`degenerate` is true: MLI's border passes then cover rows or
    columns outside the output tensor (and may reuse a neighbour's window clipping), so the output
    buffer receives stores that no per-window formula describes. Offsets are relative to the
    output's first element and may fall outside the output tensor; the caller applies the stores
    that land inside the output buffer, in order.

    Args:
        in_buf: the input buffer (1-D, from the tensor's first element); stores may read any of it.
        in_strides, out_strides: (row, column) element strides of input and output.
        in_hwc: input (height, width, channels).
        kind: ``"ave"`` or ``"max"``.
        fixed: kernel size of a ``_k2x2`` / ``_k3x3`` specialisation (0: generic).
        Others: as :func:`avepool_hwc`.
    """
    (kh, kw), (sh, sw), (pt, pl), (oh, ow) = kernel, stride, pad, out_hw
    h_in, w_in, ch = in_hwc
    bits = in_buf.dtype.itemsize * 8
    acc_bits = 32 if bits == 8 else 64
    shift0 = requant.shift if requant is not None else base_shift
    offset = requant.offset if requant is not None else 0
    scale = requant.scale if requant is not None else None
    pr = ow * sw + kw - sw - w_in - pl
    pb = oh * sh + kh - sh - h_in - pt
    if pr < 0:
        w_in, pr = w_in + pr, 0
    if pb < 0:
        h_in, pb = h_in + pb, 0
    chan = np.arange(ch, dtype=np.int64)
    writes: list[tuple[np.ndarray, np.ndarray]] = []

    def load(offs: np.ndarray) -> np.ndarray:
        idx = offs[:, None] + chan[None, :]
        inside = (idx >= 0) & (idx < in_buf.shape[0])
        return np.where(inside, in_buf[np.clip(idx, 0, in_buf.shape[0] - 1)].astype(np.int64), 0)

    def store(fi: _Frame, fo: _Frame, in_off: int, out_off: int, rows: int, cols: int,
              mul: int, shift: int) -> None:
        rr, cc = np.meshgrid(np.arange(max(rows, 0)), np.arange(max(cols, 0)), indexing="ij")
        offs = (in_off + fi.row * rr + fi.col * cc).reshape(-1)
        vals = load(offs) if offs.size else np.zeros((0, ch), np.int64)
        if kind == "max":
            v = load(np.array([in_off], np.int64))[0]
            if vals.size:
                v = np.maximum(v, vals.max(axis=0))
        else:
            v = avepool_output(vals.sum(axis=0) if vals.size else np.zeros(ch, np.int64), mul, shift, offset,
                               acc_bits, bits)
        writes.append((out_off + chan, v))

    def params(count: int) -> tuple[int, int]:
        return avepool_multiplier(count, shift0, scale, mul16) if kind == "ave" else (0, 0)

    def border(fi: _Frame, fo: _Frame, area: tuple[int, int, int, int], s_w: int, s_h: int, p_t: int,
               p_l: int, k_h: int, k_w: int) -> None:
        rb, re, cb, ce = area
        comp_l = comp_t = rows = cols = mul = shift = 0
        for r in range(rb, re):
            c = cb
            while c < min(cb + k_w, ce):
                comp_l = -min(c * s_w - p_l, 0)
                comp_r = -min(fi.width - (c * s_w - p_l + k_w), 0)
                comp_t = -min(r * s_h - p_t, 0)
                comp_b = -min(fi.height - (r * s_h - p_t + k_h), 0)
                rows, cols = k_h - comp_t - comp_b, k_w - comp_r - comp_l
                mul, shift = params(rows * cols)
                store(fi, fo, fi.ptr + fi.row * (r * s_h - p_t + comp_t) + fi.col * (c * s_w - p_l + comp_l),
                      fo.ptr + fo.row * r + fo.col * c, rows, cols, mul, shift)
                c += 1
            if fixed:
                cols = fixed
            for c in range(c, ce):  # MLI keeps the clipping of the last column computed above
                store(fi, fo, fi.ptr + fi.row * (r * s_h - p_t + comp_t) + fi.col * (c * s_w - p_l + comp_l),
                      fo.ptr + fo.row * r + fo.col * c, rows, cols, mul, shift)

    cdiv = ceil_div

    fin = _Frame(0, h_in, w_in, in_strides[0], in_strides[1])
    fout = _Frame(0, oh, ow, out_strides[0], out_strides[1])
    rb, re = cdiv(pt, sh), cdiv(h_in + pt - kh + 1, sh)
    cb, ce = cdiv(pl, sw), cdiv(w_in + pl - kw + 1, sw)
    if re > rb and ce > cb and h_in >= kh and w_in >= kw:
        mul, shift = params(kh * kw)
        for r in range(rb, re):
            for c in range(cb, ce):
                store(fin, fout, fin.row * (r * sh - pt) + fin.col * (c * sw - pl),
                      fout.row * r + fout.col * c, kh, kw, mul, shift)
    if pt or pl or pb or pr:
        if pt:
            border(fin, fout, (0, cdiv(pt, sh), 0, max(cdiv(pl, sw), ow - cdiv(pr, sw))), sw, sh, pt, pl, kh, kw)
        if pr:
            border(fin.rotated(1), fout.rotated(1), (0, cdiv(pr, sw), 0, oh - cdiv(pb, sh)), sh, sw, pr, pt, kw, kh)
        if pb:
            border(fin.rotated(2), fout.rotated(2), (0, cdiv(pb, sh), 0, ow - cdiv(pl, sw)), sw, sh, pb, pr, kh, kw)
        if pl:
            border(fin.rotated(3), fout.rotated(3), (0, cdiv(pl, sw), 0, oh - cdiv(pt, sh)), sh, sw, pl, pb, kw, kh)
    return writes
