"""The MLI 1.0 kernels as pure NumPy functions over int64 arrays (no tensors, no cfg structs).

Each returns the values the C kernel stores, computed with exact integer arithmetic and MLI 1.0's
read-outs (:mod:`pymli.v1._arith`). Where 1.0 computes what MLI 2.0 computes (conv2d, depthwise,
fully connected, pooling, relu, eltwise, permute: see docs/mli1.md) the formulas are the same.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ._arith import I64, asr_sat, norm_a40, rnd_sat, sat
from .tables import Lut1, avepool_mul_shift

__all__ = [
    "relu_limits", "conv2d_chw", "depthwise_conv2d_chw", "fully_connected", "maxpool_chw", "avepool_chw",
    "leaky_relu", "eltwise", "lut_activation", "softmax", "convert", "out_size", "dense_rnn", "rnd_sat32", "bias_init",
    "rnd_sat_from32", "ACC40_MIN", "ACC40_MAX", "wrap32", "acc40_accumulate", "mac_terms", "MAC_PATHS",
    "conv_column_schemes",
]

#: range of the 40-bit DSP accumulator of the fx16 kernels (guard bits on: it saturates at every MAC)
ACC40_MIN, ACC40_MAX = -(1 << 39), (1 << 39) - 1
#: how an MLI 1.0 fx16 convolution issues its MACs (the C code path; see :func:`conv_column_schemes`):
#: ``single`` one MAC per product (``convolution_chw``, ``conv2d_chw_nopad_k1x1_str1``), ``str1_fixed``
#: / ``str1`` ``conv2d_chw_str1`` with / without ``fixed_padding``, ``any`` ``conv2d_chw`` (any
#: stride), ``hwc`` ``mli_krn_conv2d_hwc_fx16`` (one MAC per product, order row, column, channel)
MAC_PATHS = ("single", "str1_fixed", "str1", "any", "hwc")

#: a column scheme: phases of groups of kernel columns (see :func:`conv_column_schemes`)
Scheme = tuple[tuple[tuple[int, ...], ...], ...]


# ----------------------------------------------------------------------------- accumulators
def wrap32(x: np.ndarray) -> np.ndarray:
    """The low 32 bits of an accumulator, sign-extended (``int32_t`` arithmetic with ``-fwrapv``).

    MLI 1.0's fx8 and fx8w16d MAC kernels keep their sums in ``int32_t`` (C additions and the
    ``_dmachbl`` dual MAC, whose result register is the low word of the accumulator). The
    sum wraps around modulo 2^32, so the result is the same whatever the order of the products.
    """
    x = np.asarray(x, dtype=I64)
    return ((x + I64(1 << 31)) & I64(0xFFFFFFFF)) - I64(1 << 31)


def acc40_accumulate(init: np.ndarray, terms: np.ndarray) -> np.ndarray:
    """``init`` plus the ``terms`` in order along the last axis, saturated to 40 bits after each one.

    This is the fx16 accumulator of MLI 1.0 on an ARC DSP with guard bits (``fx_a40_mac_q15`` and
    the dual MAC ``fx_a40_dmac_v2q15`` saturate to 40 bits after every step; a dual MAC is one
    term, the sum of its two products). Once a partial sum reaches the limit, later terms of the
    other sign pull it back from the limit, not from the exact sum, so the order matters.

    Vectorised: a step is the clamp ``x -> clip(x + a, lo, hi)``; clamps compose into clamps
    (``f2(f1(x)) = clip(x + a1 + a2, clip(lo1 + a2, lo2, hi2), clip(hi1 + a2, lo2, hi2))``), so the
    terms are folded pairwise in ``log2(K)`` NumPy steps. Where no partial sum can leave the range
    (``|init| + sum(|terms|) <= 2^39 - 1``) the result is the exact sum.

    Args:
        init: int [...] initial accumulator, within 40 bits (e.g. the saturated bias).
        terms: int [..., K] terms in the order the C kernel adds them.

    Returns:
        np.ndarray: int64 [...] accumulator after the last term.
    """
    init = np.asarray(init, dtype=I64)
    terms = np.asarray(terms, dtype=I64)
    total = init + terms.sum(axis=-1)
    k = terms.shape[-1]
    if k == 0 or np.all(np.abs(init) + np.abs(terms).sum(axis=-1) <= ACC40_MAX):
        return total
    if k == 1:
        return np.clip(total, ACC40_MIN, ACC40_MAX)
    # zero steps up to a power of two: identities, as every partial sum is within 40 bits
    a = np.pad(terms, [(0, 0)] * (terms.ndim - 1) + [(0, (1 << (k - 1).bit_length()) - k)])
    a1, a2 = a[..., 0::2], a[..., 1::2]  # the first level: pairs of plain 40-bit steps
    lo, hi = np.clip(ACC40_MIN + a2, ACC40_MIN, ACC40_MAX), np.clip(ACC40_MAX + a2, ACC40_MIN, ACC40_MAX)
    a = a1 + a2
    while a.shape[-1] > 1:
        a1, a2 = a[..., 0::2], a[..., 1::2]
        lo1, lo2, hi1, hi2 = lo[..., 0::2], lo[..., 1::2], hi[..., 0::2], hi[..., 1::2]
        lo, hi = np.clip(lo1 + a2, lo2, hi2), np.clip(hi1 + a2, lo2, hi2)
        a = a1 + a2
    return np.clip(init + a[..., 0], lo[..., 0], hi[..., 0])


def mac_terms(products: np.ndarray, singles: int) -> np.ndarray:
    """The terms of a row of MACs as MLI 1.0 issues them: ``singles`` single MACs, then dual MACs.

    Args:
        products: int [..., N] products in memory order.
        singles: how many leading products are added one by one (the rest pairwise).

    Returns:
        np.ndarray: int64 [..., singles + (N - singles) // 2] terms.
    """
    products = np.asarray(products, dtype=I64)
    head, tail = products[..., :singles], products[..., singles:]
    pairs = tail.reshape(tail.shape[:-1] + (tail.shape[-1] // 2, 2)).sum(axis=-1)
    return np.concatenate([head, pairs], axis=-1)


def _fc_singles(n: int) -> int:
    """Leading single MACs of ``full_connection`` / ``rnn_dense_op_fx`` over ``n`` inputs (then dual MACs)."""
    return n if n < 8 else n & 3


def out_size(in_size: int, k: int, pad_a: int, pad_b: int, stride: int) -> int:
    """``CEIL_DIV(in + pad_a + pad_b - k + 1, stride)``."""
    n = in_size + pad_a + pad_b - k + 1
    return -(-n // stride)


def relu_limits(relu_type: int, frac_bits: int, bits: int) -> tuple[int, int]:
    """``mli_prv_get_relu_min_max``: (min, max) of a ReLU type for ``frac_bits`` in a ``bits`` container."""
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if relu_type == 1:
        return 0, hi
    if relu_type == 3:
        return 0, min(6 << frac_bits, hi)
    if relu_type == 2:
        return max(-(1 << frac_bits), lo), min(1 << frac_bits, hi)
    return lo, hi


def _windows(x: np.ndarray, kh: int, kw: int, sh: int, sw: int, pads: tuple[int, int, int, int],
             fill: int, ho: int, wo: int) -> np.ndarray:
    """[C, Ho, Wo, Kh, Kw] windows of a padded CHW map (padding value ``fill``)."""
    pt, pb, pl, pr = pads
    xp = np.pad(x, ((0, 0), (pt, pb), (pl, pr)), constant_values=fill)
    win = sliding_window_view(xp, (kh, kw), axis=(1, 2))
    return win[:, : (ho - 1) * sh + 1: sh, : (wo - 1) * sw + 1: sw]


def bias_init(b: np.ndarray, bias_shift: int, acc40: bool) -> np.ndarray:
    """``mli_prv_init_accu_with_bias``: the bias in the accumulator's format (``in.frac + w.frac``).

    On the 40-bit accumulator (fx16) a saturating left shift by ``bias_shift`` (a truncating right
    shift if negative); on the 32-bit one (fx8, fx8w16d) ``fx_asr_rnd_q31(bias, -bias_shift)``.
    """
    b = np.asarray(b, dtype=I64)
    if acc40:
        return asr_sat(b, -bias_shift, 40)
    return rnd_sat(b, -bias_shift, 32)


def _acc_out(acc: np.ndarray, shift: int, bits: int, relu: tuple[int, int]) -> np.ndarray:
    out = rnd_sat(acc, shift, bits)
    return np.clip(out, relu[0], relu[1])


def conv2d_chw(x: np.ndarray, w: np.ndarray, b: np.ndarray, *, in_frac: int, w_frac: int, b_frac: int,
               out_frac: int, stride: tuple[int, int], pads: tuple[int, int, int, int], relu: int,
               bits: int, acc40: bool = False, mac_path: str = "single") -> np.ndarray:
    """2D convolution of MLI 1.0 (CHW).

    ``acc = bias_init(bias) + sum(x * w)`` on MLI 1.0's accumulator (``int32`` wrapping around for
    fx8 and fx8w16d; 40 bits saturating after each MAC for fx16, in the order of the C code path
    ``mac_path``: see :func:`_conv_accumulate`), then
    ``sat_bits(rnd(acc, in_frac + w_frac - out_frac))`` and the fused ReLU clip with limits from
    ``out_frac``.

    Args:
        x: int [C, H, W] input.
        w: int [Co, C, Kh, Kw] weights.
        b: int [Co] bias.
        in_frac, w_frac, b_frac, out_frac: fractional bits.
        stride: (stride_h, stride_w).
        pads: (top, bottom, left, right).
        relu: ``mli_relu_type`` value.
        bits: output container bits (8 or 16).
        acc40: the 40-bit saturating accumulator of fx16 (else the 32-bit wrapping one).
        mac_path: the C code path computing it, one of :data:`MAC_PATHS` (matters only with ``acc40``).

    Returns:
        np.ndarray: int64 [Co, Ho, Wo].

    Raises:
        ValueError: an unknown ``mac_path``.
    """
    co, _, kh, kw = w.shape
    ho = out_size(x.shape[1], kh, pads[0], pads[1], stride[0])
    wo = out_size(x.shape[2], kw, pads[2], pads[3], stride[1])
    win = _windows(x.astype(I64), kh, kw, stride[0], stride[1], pads, 0, ho, wo)
    w = w.astype(I64)
    init = bias_init(b, in_frac + w_frac - b_frac, acc40)
    acc = _conv_accumulate(win, w, init, depthwise=False, acc40=acc40, path=mac_path,
                           geometry=(stride[1], pads[2], pads[3], x.shape[2]))
    return _acc_out(acc, in_frac + w_frac - out_frac, bits, relu_limits(relu, out_frac, bits))


def _singles(kw: int) -> Scheme:
    """One MAC per product (``dotprod2D``, and per lane ``dotprod2D_v`` / ``dotprod1D_v``)."""
    return (tuple((j,) for j in range(kw)),)


def _pairs(c0: int, n: int) -> tuple[tuple[int, ...], ...]:
    """Dual MACs over columns ``c0, c0 + 1``, ``c0 + 2, c0 + 3``, ... (``n`` columns), a single MAC for an odd last one."""
    groups = tuple((c0 + j, c0 + j + 1) for j in range(0, n - 1, 2))
    return groups + ((c0 + n - 1,),) if n % 2 else groups


def _odd_even(c0: int, n: int) -> Scheme:
    """``convolution_odd_even`` over the ``n`` valid columns from ``c0``.

    An odd ``n``: first column ``c0`` of every channel and row (single MACs), then dual MACs over the
    other columns (``dotprod2D_unroll2``); an even ``n``: dual MACs only.
    """
    if n <= 0:
        return ((),)
    if n % 2:
        rest = _pairs(c0 + 1, n - 1)
        return (((c0,),), rest) if rest else (((c0,),),)
    return (_pairs(c0, n),)


def conv_column_schemes(path: str, kw: int, wo: int, stride_w: int, pad_l: int, pad_r: int,
                        in_w: int) -> list[Scheme]:
    """How MLI 1.0's fx16 convolution groups the products of each output column into MACs.

    A scheme is a tuple of phases, a phase a tuple of groups of kernel columns. The C code adds, for
    each phase in turn, for each input channel, for each (valid) kernel row, for each group, the
    products of the group's columns: one saturating MAC (``fx_a40_mac_q15``) for a one-column group,
    one dual MAC (``fx_a40_dmac_v2q15``: both products added, then saturated) for a pair. Which
    scheme an output gets depends on the code path and only on its column:

    * ``single``, ``hwc``: one MAC per product everywhere;
    * ``str1_fixed`` / ``str1`` (``conv2d_row_str1``): the inner columns one MAC per product (the
      two-lane ``convolution_v``, ``convolution`` for an odd one); the ``pad_l`` / ``pad_r`` border
      columns also, unless the padding is not fixed (``str1``) or above 2: then
      ``convolution_odd_even`` over their valid columns;
    * ``any`` (``conv2d_row_anystride``): the border columns one MAC per product (``convolution``);
      the inner ones dual MACs over column pairs, a single MAC for an odd last column
      (``convolution_even``, ``_unroll4_plus1`` / ``_plus3``); "inner" as C computes it (its right
      border estimate ``right_comp`` is not exact for strides above 1).

    Args:
        path: one of :data:`MAC_PATHS`.
        kw: kernel width. wo: output width. stride_w: horizontal stride.
        pad_l, pad_r: left / right padding. in_w: input width.

    Returns:
        list[Scheme]: one scheme per output column.

    Raises:
        ValueError: an unknown ``path``.
    """
    single = _singles(kw)
    out = [single] * wo
    if path in ("str1_fixed", "str1"):
        if path == "str1_fixed" and pad_l <= 2 and pad_r <= 2:
            return out
        for x in range(min(pad_l, wo)):  # the left border: pad_l - x columns in the padding
            out[x] = _odd_even(pad_l - x, kw - (pad_l - x))
        for i in range(min(pad_r, wo)):  # the right border, from its left end: i + 1 columns in the padding
            out[wo - pad_r + i] = _odd_even(0, kw - (i + 1))
    elif path == "any":
        inner = (_pairs(0, kw),)
        right_comp = max(wo * stride_w - pad_l + kw - 1 - in_w, 0)
        for x in range(wo):
            xi = x * stride_w
            if not (pad_l > 0 and xi < pad_l) and xi < wo * stride_w - right_comp:
                out[x] = inner
    elif path not in ("single", "hwc"):
        raise ValueError(f"unknown MAC path {path!r}")
    return out


def _scheme_terms(prod: np.ndarray, scheme: Scheme) -> np.ndarray:
    """The MAC terms [n, T] of products [n, C, Kh, Kw] in a scheme's order (phase, channel, row, group)."""
    parts = []
    for phase in scheme:
        if not phase:
            continue
        sums = np.stack([prod[..., list(g)].sum(axis=-1) for g in phase], axis=-1)
        parts.append(sums.reshape(prod.shape[0], -1))
    if not parts:
        return np.zeros((prod.shape[0], 0), dtype=I64)
    return np.concatenate(parts, axis=-1)


def _conv_accumulate(win: np.ndarray, w: np.ndarray, init: np.ndarray, *, depthwise: bool, acc40: bool,
                     path: str = "single", geometry: tuple[int, int, int, int] = (1, 0, 0, 0)) -> np.ndarray:
    """Accumulators [Co, Ho, Wo] of a CHW convolution from windows [C, Ho, Wo, Kh, Kw].

    32-bit (fx8, fx8w16d): the exact sum wrapped to ``int32``. 40-bit (fx16): the exact sum where no
    order of the products can reach the limit (checked cheaply, then per output with the sum of
    absolute products); elsewhere the products of that output saturated MAC by MAC in C's order
    for the code path ``path`` (:func:`conv_column_schemes`; padding products are zero, neutral in
    a single MAC and absent from a dual one).

    Args:
        win: int64 [C, Ho, Wo, Kh, Kw] zero-padded windows.
        w: int64 [Co, C, Kh, Kw] weights.
        init: int64 [Co] initial accumulators (:func:`bias_init`).
        depthwise: weights [C, 1, Kh, Kw], output channel o reads input channel o.
        acc40: fx16's saturating 40-bit accumulator (else the wrapping 32-bit one).
        path: one of :data:`MAC_PATHS`.
        geometry: (stride_w, pad_l, pad_r, in_w).

    Returns:
        np.ndarray: int64 [Co, Ho, Wo].

    Raises:
        ValueError: an unknown ``path``.
    """
    if path not in MAC_PATHS:
        raise ValueError(f"unknown MAC path {path!r}")
    spec = "chwij,cij->chw" if depthwise else "chwij,ocij->ohw"
    wk = w[:, 0] if depthwise else w
    acc = np.einsum(spec, win, wk) + init[:, None, None]
    if not acc40:
        return wrap32(acc)
    if win.size == 0:
        return acc
    per_out = np.abs(wk).reshape(wk.shape[0], -1).sum(axis=1)
    if np.all(np.abs(init) + int(np.abs(win).max()) * per_out <= ACC40_MAX):
        return acc
    reach = np.einsum(spec, np.abs(win), np.abs(wk)) + np.abs(init)[:, None, None]
    o, h, x = np.nonzero(reach > ACC40_MAX)
    if not o.size:
        return acc
    kw = win.shape[-1]
    schemes = conv_column_schemes(path, kw, win.shape[2], *geometry)
    ids: dict[Scheme, int] = {}
    col_id = np.array([ids.setdefault(sc, len(ids)) for sc in schemes])
    for sc, k in ids.items():
        sel = col_id[x] == k
        if not sel.any():
            continue
        os_, hs, xs = o[sel], h[sel], x[sel]
        if depthwise:
            prod = (win[os_, hs, xs] * wk[os_])[:, None]
        else:
            prod = win[:, hs, xs].transpose(1, 0, 2, 3) * wk[os_]
        if path == "hwc":  # rows, then columns, then channels: one MAC each
            terms = prod.transpose(0, 2, 3, 1).reshape(prod.shape[0], -1)
        else:
            terms = _scheme_terms(prod, sc)
        acc[os_, hs, xs] = acc40_accumulate(init[os_], terms)
    return acc


def depthwise_conv2d_chw(x: np.ndarray, w: np.ndarray, b: np.ndarray, *, in_frac: int, w_frac: int,
                         b_frac: int, out_frac: int, stride: tuple[int, int],
                         pads: tuple[int, int, int, int], relu: int, bits: int, acc40: bool = False,
                         mac_path: str = "single") -> np.ndarray:
    """Depthwise 2D convolution of MLI 1.0 (CHW, weights [C, 1, Kh, Kw]); see :func:`conv2d_chw`."""
    c, _, kh, kw = w.shape
    ho = out_size(x.shape[1], kh, pads[0], pads[1], stride[0])
    wo = out_size(x.shape[2], kw, pads[2], pads[3], stride[1])
    win = _windows(x.astype(I64), kh, kw, stride[0], stride[1], pads, 0, ho, wo)
    init = bias_init(b, in_frac + w_frac - b_frac, acc40)
    acc = _conv_accumulate(win, w.astype(I64), init, depthwise=True, acc40=acc40, path=mac_path,
                           geometry=(stride[1], pads[2], pads[3], x.shape[2]))
    return _acc_out(acc, in_frac + w_frac - out_frac, bits, relu_limits(relu, out_frac, bits))


def fully_connected(x: np.ndarray, w: np.ndarray, b: np.ndarray, *, in_frac: int, w_frac: int, b_frac: int,
                    out_frac: int, bits: int, acc40: bool = False) -> np.ndarray:
    """Fully connected layer of MLI 1.0: weights [M, N], input of N elements, bias [M].

    The accumulator is :func:`wrap32` (fx8, fx8w16d) or :func:`acc40_accumulate` (fx16, ``acc40``)
    in ``full_connection``'s order: for ``N < 8`` single MACs, else ``N & 3`` single MACs, then
    dual MACs over pairs.
    """
    init = bias_init(b, in_frac + w_frac - b_frac, acc40)
    acc = _dense(x.reshape(-1), w.astype(I64), init, acc40)
    return rnd_sat(acc, in_frac + w_frac - out_frac, bits)


def _dense(x: np.ndarray, w: np.ndarray, init: np.ndarray, acc40: bool, singles: int | None = None) -> np.ndarray:
    """``init + w @ x`` on MLI 1.0's accumulator (see :func:`fully_connected`); ``singles``: leading single MACs."""
    x = x.astype(I64)
    if not acc40:
        return wrap32(init + w @ x)
    if x.size == 0:
        return init + 0
    if np.all(np.abs(init) + np.abs(w).sum(axis=1) * int(np.abs(x).max()) <= ACC40_MAX):
        return init + w @ x
    n = x.size
    return acc40_accumulate(init, mac_terms(w * x, _fc_singles(n) if singles is None else singles))


def maxpool_chw(x: np.ndarray, *, kernel: tuple[int, int], stride: tuple[int, int],
                pads: tuple[int, int, int, int]) -> np.ndarray:
    """Max pooling (CHW): the maximum over the window, padding positions excluded."""
    kh, kw = kernel
    ho = out_size(x.shape[1], kh, pads[0], pads[1], stride[0])
    wo = out_size(x.shape[2], kw, pads[2], pads[3], stride[1])
    fill = np.iinfo(np.int64).min
    win = _windows(x.astype(I64), kh, kw, stride[0], stride[1], pads, fill, ho, wo)
    return win.max(axis=(3, 4))


def avepool_chw(x: np.ndarray, *, kernel: tuple[int, int], stride: tuple[int, int],
                pads: tuple[int, int, int, int], bits: int) -> np.ndarray:
    """Average pooling of MLI 1.0 (CHW).

    Over the ``n`` valid elements of each window: ``sat_bits(rnd(sum * mul, shift))`` with
    ``(mul, shift) = avepool_mul_shift(n, Kh * Kw)`` (a 16-bit reciprocal, not a division).
    """
    kh, kw = kernel
    ho = out_size(x.shape[1], kh, pads[0], pads[1], stride[0])
    wo = out_size(x.shape[2], kw, pads[2], pads[3], stride[1])
    win = _windows(x.astype(I64), kh, kw, stride[0], stride[1], pads, 0, ho, wo)
    sums = win.sum(axis=(3, 4))
    ones = np.ones((1,) + x.shape[1:], dtype=I64)
    counts = _windows(ones, kh, kw, stride[0], stride[1], pads, 0, ho, wo).sum(axis=(3, 4))[0]
    out = np.empty_like(sums)
    for n in np.unique(counts):
        mul, shift = avepool_mul_shift(int(n), kh * kw)
        sel = counts == n
        out[:, sel] = rnd_sat(sums[:, sel] * mul, shift, bits)
    return out


def leaky_relu(x: np.ndarray, slope: int, slope_frac: int, bits: int) -> np.ndarray:
    """Leaky ReLU of MLI 1.0: ``max(x, sat(rnd(x * slope, slope_frac)))`` for a slope below one.

    "Below one" is tested on int16 as ``slope < (int16_t)(1 << frac)`` (any ``frac > 15`` counts as
    below one), so a Q15 slope compares with -32768 and takes ``min`` instead (a 1.0 bug, kept).
    """
    prod = rnd_sat(x.astype(I64) * int(slope), slope_frac, 16)
    if bits == 8:
        prod = sat(prod, 8)
    if slope_frac > 15:
        below = True
    else:
        unit = ((1 << slope_frac) + 0x8000) % 0x10000 - 0x8000
        below = slope < unit
    return np.maximum(x, prod) if below else np.minimum(x, prod)


def eltwise(op: str, a: np.ndarray, b: np.ndarray, *, shift: int, bits: int) -> np.ndarray:
    """Element-wise add/sub/min/max/mul of flat vectors (one may have one element: broadcast).

    add/sub saturate to 16 bits and then to the container; mul reads the product out with a
    rounding shift by ``shift = in1_frac + in2_frac - out_frac``.
    """
    a = a.astype(I64).reshape(-1)
    b = b.astype(I64).reshape(-1)
    if op == "add":
        r = sat(sat(a + b, 16), bits)
    elif op == "sub":
        r = sat(sat(a - b, 16), bits)
    elif op == "max":
        r = np.maximum(a, b)
    elif op == "min":
        r = np.minimum(a, b)
    else:
        r = rnd_sat(a * b, shift, bits)
    return r


def lut_activation(x: np.ndarray, lut: Lut1, in_frac: int, bits: int) -> np.ndarray:
    """``mli_prv_activation_lut_fx16`` / ``_fx8``: table look-up with linear interpolation.

    Args:
        x: int values (int8 or int16 range).
        lut: the table.
        in_frac: input fractional bits (may be -1, from softmax).
        bits: 16 (Q15 output) or 8 (Q7 output: the Q15 result rounded by 8 bits).

    Returns:
        np.ndarray: int64 outputs.
    """
    x = x.astype(I64)
    data = lut.data.astype(I64)
    shift_in = in_frac - lut.frac_bits
    preshift = max(shift_in - 15, 0)
    shift_in = min(shift_in, 15)
    if shift_in > 0:
        xs = asr_sat(x, preshift, 16)
        idx = np.clip(sat(asr_sat(xs, shift_in, 16) + lut.offset, 16), 0, lut.length - 2)
        frac = (xs & 0xFFFF) & ((1 << shift_in) - 1)
        res = data[idx]
        diff = sat(res - data[idx + 1], 16)
        out = sat(res - rnd_sat(diff * frac, shift_in, 16), 16)
    else:
        idx = np.clip(sat(asr_sat(x, shift_in, 16) + lut.offset, 16), 0, lut.length - 1)
        out = data[idx]
    if bits == 8:
        out = rnd_sat(out, 8, 8)
    return out


def softmax(x: np.ndarray, in_frac: int, lut: Lut1, bits: int) -> np.ndarray:
    """Softmax of MLI 1.0 over all elements: ``exp(x - max)`` from the table, then a Q-normalised reciprocal."""
    x = x.astype(I64).reshape(-1)
    mx, mn = int(x.max()), int(x.min())
    if mn - mx < -(1 << (bits - 1)):
        d = sat((x >> 1) - (mx >> 1), 16)
        in_frac -= 1
    else:
        d = sat(x - mx, 16)
    d = ((d + (1 << (bits - 1))) % (1 << bits)) - (1 << (bits - 1))  # stored into the container
    e = lut_activation(d, lut, in_frac, bits)
    total = int(e.sum())
    sum_exp = norm_a40(total) + 1
    mnt = int(rnd_sat(np.asarray([total]), 16 - sum_exp, 16)[0])
    recip = int(sat(np.asarray([(1 << 29) // mnt if mnt > 0 else 0]), 16)[0])
    out = rnd_sat(e * recip, 16 - (sum_exp - 30 + bits), 16)
    return sat(out, bits) if bits == 8 else out


def convert(x: np.ndarray, shift: int, in_bits: int, out_bits: int) -> np.ndarray:
    """``mli_hlp_convert_tensor``: ``sat16(rnd(x, shift))`` (saturating left for ``shift < 0``), then ``sat_out``."""
    return sat(rnd_sat(x.astype(I64), shift, 16), out_bits)


def dense_rnn(x: np.ndarray, state: np.ndarray, w: np.ndarray, b: np.ndarray, *, bias_shift: int,
              in_to_state: int, out_shift: int, acc40: bool, bits: int) -> np.ndarray:
    """``rnn_dense_op_fx``: ``W[:, :N] @ x``, shifted by ``in_to_state`` bits, plus ``W[:, N:] @ state``.

    The accumulator starts with the bias (``rnd(bias, -bias_shift)``) and takes the input part; it is
    then shifted right by ``in_to_state = in.frac - prev_out.frac``: truncating on the 40-bit
    accumulator (fx16, ``acc40``), rounding on the 32-bit one (fx8, fx8w16d); then the state part is
    added and the sum read out with a rounding shift by ``out_shift``.

    Args:
        x: int [N] input. state: int [M] previous output. w: int [Mo, N + M]. b: int [Mo].

    Returns:
        np.ndarray: int64 [Mo].
    """
    n, m = x.size, state.size
    w = w.astype(I64)
    # rnn_dense_op_fx: single MACs for both parts when both are short, dual MACs for both when both
    # are multiples of 4, else (size & 3) single MACs then dual MACs per part
    if n < 8 and m < 8:
        s_in, s_st = n, m
    elif n % 4 == 0 and m % 4 == 0:
        s_in, s_st = 0, 0
    else:
        s_in, s_st = n & 3, m & 3
    acc = _dense(x, w[:, :n], bias_init(b, bias_shift, acc40), acc40, s_in)
    if acc40:
        acc = asr_sat(acc, in_to_state, 40)
    else:
        acc = rnd_sat(acc, in_to_state, 32)  # fx_asr_rnd_q31 of the int32 sum, then _setacc
    acc = _dense(state, w[:, n:], acc, acc40, s_st)
    return rnd_sat(acc, out_shift, bits)


def rnd_sat32(x: np.ndarray, s: int) -> np.ndarray:
    """``fx_asr_rnd_q31`` (``mli_math_acc_ashift_fx`` on a 32-bit accumulator)."""
    return rnd_sat(x, s, 32)


def rnd_sat_from32(x: np.ndarray, s: int, bits: int) -> np.ndarray:
    """``mli_math_acc_cast_fx`` from a 32-bit accumulator: rounding shift (saturated to 32 bits), then ``bits``."""
    return sat(rnd_sat(x, s, 32), bits)
