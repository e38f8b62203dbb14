"""Average and max pooling over HWC feature maps (``kernels/pooling`` of MLI 2.0).

Both kernels see the input through its padded windows: output ``(i, j)`` covers input rows
``i * stride_h - pad_top ... + kernel_h - 1`` and columns ``j * stride_w - pad_left ...``. Padded
positions never take part: max pooling ignores them, average pooling divides by the number of
valid (non-padded) elements of each window. The output size is given (MLI derives the bottom and
right padding from it), so windows that would only cover bottom/right padding never occur.

Window reductions are separable: one pass over ``kernel_w`` strided column slices, one over
``kernel_h`` row slices (loops over kernel taps only).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ..arith.pool import RequantParams, avepool_multiplier, avepool_output

__all__ = ["valid_counts", "window_reduce", "avepool_hwc", "maxpool_hwc", "out_size", "degenerate"]


def out_size(in_size: int, kernel: int, stride: int, pad_before: int, pad_after: int) -> int:
    """Output length of a pooling axis: ``(in + pads - kernel) // stride + 1``."""
    return (in_size + pad_before + pad_after - kernel) // stride + 1


def valid_counts(in_size: int, out_len: int, kernel: int, stride: int, pad_before: int) -> np.ndarray:
    """Valid (non-padded) input elements of each window along one axis (int64, length ``out_len``)."""
    start = np.arange(out_len, dtype=np.int64) * stride - pad_before
    return np.minimum(start + kernel, in_size) - np.maximum(start, 0)


def window_reduce(x: npt.NDArray[np.integer], kernel: tuple[int, int], stride: tuple[int, int],
                  pad: tuple[int, int], out_hw: tuple[int, int], op: np.ufunc, fill: int,
                  dtype: npt.DTypeLike) -> np.ndarray:
    """Reduce every pooling window of an HWC array with ``op`` (``np.add`` or ``np.maximum``).

    Args:
        x: input, shape ``[H, W, C]`` (any strides).
        kernel: (kernel_h, kernel_w).
        stride: (stride_h, stride_w).
        pad: (pad_top, pad_left); the bottom/right extent follows from ``out_hw``.
        out_hw: (out_h, out_w).
        op: binary ufunc applied tap by tap.
        fill: value of padded positions (neutral for ``op``).
        dtype: accumulation dtype.

    Returns:
        ``[out_h, out_w, C]`` array of ``dtype``.
    """
    (kh, kw), (sh, sw), (pt, pl), (oh, ow) = kernel, stride, pad, out_hw
    h, w, c = x.shape
    hn, wn = (oh - 1) * sh + kh, (ow - 1) * sw + kw  # extent of the padded input actually read
    if pt == 0 and pl == 0 and hn <= h and wn <= w:
        buf = x[:hn, :wn]
    else:
        buf = np.full((hn, wn, c), fill, dtype=x.dtype)
        rows, cols = min(h, hn - pt), min(w, wn - pl)
        buf[pt:pt + rows, pl:pl + cols] = x[:rows, :cols]
    wspan, hspan = (ow - 1) * sw + 1, (oh - 1) * sh + 1
    part = buf[:, 0:wspan:sw].astype(dtype)
    for dx in range(1, kw):
        op(part, buf[:, dx:dx + wspan:sw], out=part)
    res = part[0:hspan:sh].copy() if kh > 1 else part[0:hspan:sh]
    for dy in range(1, kh):
        op(res, part[dy:dy + hspan:sh], out=res)
    return res


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
    cdiv = lambda a, b: -(-a // b)  # noqa: E731
    return bool((pt and (cdiv(pt, sh) > oh or cdiv(pl, sw) > ow)) or (pr and cdiv(pr, sw) > ow)
                or (pb and cdiv(pb, sh) > oh) or (pl and cdiv(pl, sw) > ow))


def _runs(v: np.ndarray) -> list[tuple[int, int, int]]:
    """Runs of equal values: (begin, end, value)."""
    edges = np.flatnonzero(np.diff(v)) + 1
    bounds = [0, *edges.tolist(), len(v)]
    return [(b, e, int(v[b])) for b, e in zip(bounds[:-1], bounds[1:])]


def maxpool_hwc(x: npt.NDArray[np.integer], *, kernel: tuple[int, int], stride: tuple[int, int],
                pad: tuple[int, int], out_hw: tuple[int, int]) -> np.ndarray:
    """Max pooling (``mli_krn_maxpool_hwc_*``): maximum of the valid elements of each window.

    Args:
        x: int8 / int16 input ``[H, W, C]``.
        kernel, stride, pad, out_hw: see :func:`window_reduce`.

    Returns:
        ``[out_h, out_w, C]`` array of ``x.dtype``.
    """
    lo = int(np.iinfo(x.dtype).min)  # never beats a valid element
    return window_reduce(x, kernel, stride, pad, out_hw, np.maximum, lo, x.dtype)


def avepool_hwc(x: npt.NDArray[np.integer], *, kernel: tuple[int, int], stride: tuple[int, int],
                pad: tuple[int, int], out_hw: tuple[int, int], base_shift: int,
                requant: RequantParams | None = None, mul16: bool = False) -> np.ndarray:
    """Average pooling (``mli_krn_avepool_hwc_*``) with MLI's reciprocal multiplier arithmetic.

    Args:
        x: int8 (fx8 / sa8) or int16 (fx16) input ``[H, W, C]``.
        kernel, stride, pad, out_hw: see :func:`window_reduce`.
        base_shift: ``in_frac_bits - out_frac_bits`` for fx; ignored for sa8.
        requant: sa8 input-to-output requantisation (``define_requant_params``); ``None`` for fx.
        mul16: AVEPOOL_16BIT_MUL build (sa8 multiplier kept on 16 bits instead of 8).

    Returns:
        ``[out_h, out_w, C]`` array of ``x.dtype``.
    """
    h, w, _ = x.shape
    (kh, kw), (sh, sw), (pt, pl), (oh, ow) = kernel, stride, pad, out_hw
    bits = x.dtype.itemsize * 8
    # |x| <= 2**(bits-1) per element; int32 sums are exact below 2**16 taps.
    sdt = np.int32 if kh * kw < (1 << (32 - bits)) else np.int64
    sums = window_reduce(x, kernel, stride, pad, out_hw, np.add, 0, sdt)
    acc_bits = 32 if bits == 8 else 64  # mli_acc32_t for 8-bit data, mli_acc40_t (int64) for 16-bit
    shift0 = requant.shift if requant is not None else base_shift
    offset = requant.offset if requant is not None else 0
    scale = requant.scale if requant is not None else None
    out = np.empty(sums.shape, dtype=x.dtype)
    rows = _runs(valid_counts(h, oh, kh, sh, pt))
    cols = _runs(valid_counts(w, ow, kw, sw, pl))
    for r0, r1, nr in rows:
        for c0, c1, nc in cols:
            mul, shift = avepool_multiplier(nr * nc, shift0, scale, mul16)
            blk = sums[r0:r1, c0:c1].astype(np.int64)
            out[r0:r1, c0:c1] = avepool_output(blk, mul, shift, offset, acc_bits, bits)
    return out
