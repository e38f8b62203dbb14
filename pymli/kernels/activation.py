"""ReLU, leaky ReLU and PReLU kernels (``kernels/transform/impl/mli_krn_{relu,leaky_relu,prelu}_ref.h``).

Pure functions over NumPy arrays of the container type (int8 for fx8/sa8, int16 for fx16) in any
layout; the results have the input's shape and dtype. The arithmetic (bounds, rounding shifts,
requantisation) is in :mod:`pymli.arith.activation`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from ..arith import activation as act
from ..arith.lut import asr_rnd_int32
from ..config import get_platform
from ._gather import PAIR_MIN, pair_table, take_pairs

__all__ = ["relu", "relu_bounds", "leaky_relu_fx", "prelu_fx", "leaky_relu_sa8", "prelu_sa8", "leaky_plan",
           "axis_shape"]


def _bits(x: np.ndarray) -> int:
    return x.dtype.itemsize * 8


_TABLES: dict = {}
_TABLES_MAX = 32
_TABLE_CACHE_BYTES = 1 << 20  # larger tables (per-axis fx16) are rebuilt on every call


def _tabulated(x: np.ndarray, fn, axis: int | None = None, n: int = 1, key: tuple | None = None) -> np.ndarray:
    """``fn`` applied to every element of ``x``, evaluated once per possible input value.

    The activations are pure functions of the (8- or 16-bit) input value and, for PReLU, the index
    along ``axis``: when ``x`` has more elements than its type has values, ``fn`` runs on the
    whole value range (``fn(values)`` of shape ``[n, 2**bits]`` for ``n`` per-axis parameters,
    broadcast on the first dimension) and the result is gathered; otherwise ``fn(x)`` directly.
    Both give identical results: the same integer arithmetic on the same values.

    ``key`` names the parameters ``fn`` depends on; the table is then kept (with the platform,
    whose rounding it depends on) for later calls with the same parameters. A kept 8-bit table
    also gets its byte-pair form (:func:`pymli.kernels._gather.pair_table`), which large inputs
    gather with half the lookups.
    """
    span = 1 << _bits(x)
    full_key = None if key is None else (key, x.dtype.str, n, get_platform())
    table = _TABLES.get(full_key) if full_key is not None else None
    if table is not None and axis is None and span == 256 and x.size >= PAIR_MIN:
        pairs = _TABLES.get((full_key, "pairs"))
        if pairs is None:
            pairs = _TABLES[(full_key, "pairs")] = pair_table(table[0])
        return take_pairs(table[0], pairs, x)
    if table is None:
        if x.size <= span * n:
            return fn(x)
        table = _build_table(fn, x.dtype, n, full_key)
    codes = x.view(np.dtype(f"u{x.dtype.itemsize}"))
    if axis is None:
        return np.take(table[0], codes)
    idx = codes.astype(np.intp)
    idx += (np.arange(n, dtype=np.intp) * span).reshape(axis_shape(x.ndim, axis, n))
    return np.take(table.reshape(-1), idx)


def _build_table(fn: Callable[[np.ndarray], np.ndarray], dtype: np.dtype, n: int,
                 full_key: tuple | None) -> np.ndarray:
    """The ``(n, 2**bits)`` table of ``fn`` over every value of ``dtype`` (kept under ``full_key``).

    The results fit the type (they are saturated to it), so the table is cast once, not the
    gathered array. It is rotated by half its span so that the unsigned reinterpretation of a
    value (v mod span, a free view) indexes it: entry u holds fn(u) for u <= max, fn(u - span) above.
    """
    info = np.iinfo(dtype)
    span = int(info.max) - int(info.min) + 1
    table = np.broadcast_to(fn(np.arange(info.min, info.max + 1, dtype=np.int64)[None, :]), (n, span))
    table = np.roll(table.astype(dtype), span // 2, axis=1)
    if full_key is not None and table.nbytes <= _TABLE_CACHE_BYTES:
        if len(_TABLES) >= _TABLES_MAX:
            _TABLES.clear()
        table.setflags(write=False)
        _TABLES[full_key] = table
    return table


def relu(x: npt.NDArray[np.integer], kind: int, *, zero: int = 0, scale: int = 1, shift: int = 0,
         out: np.ndarray | None = None) -> np.ndarray:
    """ReLU of type ``kind`` (0 NONE, 1 GEN, 2 RELU_1, 3 RELU_6): clamp to the type's bounds.

    Args:
        x: int8 / int16 values.
        kind: ``mli_relu_type`` value.
        zero, scale, shift: the input's quantisation (fx: ``0, 1, frac_bits``; sa: zero point,
            scale, scale_frac_bits), which places 0, 1 and 6 on the integer grid.
        out: optional destination of ``x``'s shape (may be ``x`` itself or any view; best of
            ``x``'s dtype, else the values are cast as an assignment casts them); written and
            returned instead of a new array.

    Returns:
        ``min(max(x, lo), hi)`` in ``x``'s dtype.
    """
    x = np.asarray(x)
    lo, hi = relu_bounds(kind, x.dtype, zero=zero, scale=scale, shift=shift)
    if out is None:
        return act.clamp(x, lo, hi)
    if out.dtype == x.dtype:
        return act.clamp(x, lo, hi, out=out)
    out[...] = act.clamp(x, lo, hi)  # another container dtype: cast as an assignment does
    return out


def relu_bounds(kind: int, dtype: npt.DTypeLike, *, zero: int = 0, scale: int = 1,
                shift: int = 0) -> tuple[np.integer, np.integer]:
    """The clamp bounds of :func:`relu` as scalars of ``dtype``, for :func:`pymli.arith.activation.clamp`.

    Clamping is max then min, as C does, also when lo > hi (every element becomes hi). Bounds
    typed as the data's dtype (they fit: relu_limits casts them to the container) keep NumPy on
    its fast same-type loop; Python ints make it ~25x slower.

    Args:
        kind: ``mli_relu_type`` value; dtype: the container dtype (int8 / int16).
        zero, scale, shift: the input's quantisation, as for :func:`relu`.

    Returns:
        ``(lo, hi)``.
    """
    t = np.dtype(dtype).type
    lo, hi = act.relu_limits(int(kind), np.dtype(dtype).itemsize * 8, int(zero), int(scale), int(shift))
    return t(lo), t(hi)


def axis_shape(ndim: int, axis: int, n: int) -> tuple[int, ...]:
    """Shape that broadcasts ``n`` per-axis values along dimension ``axis`` of an ``ndim`` array."""
    shape = [1] * ndim
    shape[axis] = n
    return tuple(shape)


def leaky_relu_fx(x: npt.NDArray[np.integer], slope: int, shift: int, *, normalise: bool) -> np.ndarray:
    """fx leaky ReLU: ``x`` for ``x >= 0``, ``x * slope >> shift`` (rounded, saturated) below.

    Args:
        x: int8 / int16 values.
        slope: the slope in the container type (its frac_bits are accounted for in ``shift``).
        shift: ``in.frac_bits + slope.frac_bits - out.frac_bits``.
        normalise: normalise the slope first (``mli_krn_leaky_relu_fx16`` does, fx8 does not).
    """
    x = np.asarray(x)
    if x.dtype == np.int16 and x.size > 1 << 16:
        s, sh = _leaky_fx16_slope(int(slope), int(shift), bool(normalise))
        if -(1 << 15) <= s < 1 << 15 and 0 <= sh <= 30:
            return _leaky_fx16_int32(x, s, sh)
    fn, key = _leaky_fx(_bits(x), slope, shift, normalise)
    return _tabulated(x, fn, key=key).astype(x.dtype, copy=False)


@functools.lru_cache(maxsize=64)
def _leaky_fx16_slope(slope: int, shift: int, normalise: bool) -> tuple[int, int]:
    """:func:`pymli.arith.activation.leaky_fx_slope` of one 16-bit slope, as Python ints."""
    s, sh = act.leaky_fx_slope(slope, shift, 16, normalise)
    return int(s), int(sh)


def _leaky_fx16_int32(x: np.ndarray, slope: int, shift: int) -> np.ndarray:
    """:func:`pymli.arith.activation.leaky_relu_fx` on int16 ``x`` in int32 (fewer passes than a
    gather from the 65536-entry table for large inputs).

    Exact for an int16 ``slope`` and ``0 <= shift <= 30``: ``|min(x, 0) * slope| <= 2**30`` is C's
    32-bit product, and adding half an LSB stays below ``2**31`` (:func:`asr_rnd_int32`). The
    saturating add of ``max(x, 0)`` never saturates: one of the two terms is 0; the 16-bit
    saturation of the product is skipped when no input can reach it. ``min(x, 0)`` is
    ``x & (x >> 15)`` (NumPy's minimum with a scalar is several times slower than these).
    """
    neg = x >> 15
    neg &= x  # min(x, 0)
    p = neg.astype(np.int32)
    p *= np.int32(slope)
    if shift:
        asr_rnd_int32(p, shift)
    # The product is monotonic in min(x, 0) in [-2**15, 0]: its extreme, rounded either way (+-1),
    # tells whether any result can need the 16-bit saturation.
    extreme = (-(1 << 15) * slope) >> shift
    if not -(1 << 15) < extreme < (1 << 15) - 2:
        np.clip(p, -(1 << 15), (1 << 15) - 1, out=p)
    out = p.astype(np.int16)
    out += x
    out -= neg  # + max(x, 0) = x - min(x, 0)
    return out


def _leaky_fx(bits: int, slope: int, shift: int,
              normalise: bool) -> tuple[Callable[[np.ndarray], np.ndarray], tuple]:
    """The fx leaky ReLU of one slope as a function of the input values, and its table key."""

    def fn(v: np.ndarray) -> np.ndarray:
        s, sh = act.leaky_fx_slope(slope, shift, bits, normalise)
        return act.leaky_relu_fx(v, s, sh, bits)

    return fn, ("leaky_fx", int(slope), int(shift), bool(normalise))


def prelu_fx(x: npt.NDArray[np.integer], slopes: npt.ArrayLike, shift: int, *, axis: int) -> np.ndarray:
    """fx PReLU: the leaky ReLU step with one (raw, unnormalised) slope per index of ``axis``."""
    x = np.asarray(x)
    slopes = np.asarray(slopes, dtype=np.int64).reshape(-1)
    n = slopes.size
    if x.size <= (1 << _bits(x)) * n:
        return act.leaky_relu_fx(x, slopes.reshape(axis_shape(x.ndim, axis, n)), shift, _bits(x)).astype(x.dtype, copy=False)
    table = _tabulated(x, lambda v: act.leaky_relu_fx(v, slopes[:, None], shift, _bits(x)), axis, n,
                       key=("prelu_fx", slopes.tobytes(), int(shift)))
    return table.astype(x.dtype, copy=False)


def _sa8_params(alpha_q: npt.ArrayLike, in_scale: int, in_sfb: int, out_zp: int, out_scale: int, out_sfb: int,
                slope_zp: int, slope_scale: int, slope_sfb: int) -> tuple[act.SaRequant, act.SaRequant]:
    ident = act.sa8_identity_params(in_scale, in_sfb, out_scale, out_sfb, out_zp)
    return ident, act.sa8_alpha_params(alpha_q, slope_zp, slope_scale, slope_sfb, ident)


def leaky_relu_sa8(x: npt.NDArray[np.int8], slope_q: int, *, in_zp: int, in_scale: int, in_sfb: int,
                   out_zp: int, out_scale: int, out_sfb: int, slope_zp: int, slope_scale: int,
                   slope_sfb: int) -> np.ndarray:
    """sa8 leaky ReLU: requantise ``x`` from the input to the output quantisation, times the slope
    below the input zero point.

    Args:
        x: int8 values with per-tensor parameters ``in_zp, in_scale, in_sfb``.
        slope_q: the quantised slope (int8) with parameters ``slope_zp, slope_scale, slope_sfb``.
        out_zp, out_scale, out_sfb: the output's per-tensor parameters.
    """
    x = np.asarray(x)
    fn, key = _leaky_sa8(slope_q, dict(in_zp=in_zp, in_scale=in_scale, in_sfb=in_sfb, out_zp=out_zp,
                                       out_scale=out_scale, out_sfb=out_sfb, slope_zp=slope_zp,
                                       slope_scale=slope_scale, slope_sfb=slope_sfb))
    return _tabulated(x, fn, key=key).astype(np.int8, copy=False)


def _leaky_sa8(slope_q: int, q: dict[str, int]) -> tuple[Callable[[np.ndarray], np.ndarray], tuple]:
    """The sa8 leaky ReLU of one slope as a function of the input values, and its table key."""
    params = tuple(int(v) for v in (slope_q, q["in_zp"], q["in_scale"], q["in_sfb"], q["out_zp"], q["out_scale"],
                                    q["out_sfb"], q["slope_zp"], q["slope_scale"], q["slope_sfb"]))

    def fn(v: np.ndarray) -> np.ndarray:
        ident, alpha = _sa8_params(slope_q, q["in_scale"], q["in_sfb"], q["out_zp"], q["out_scale"], q["out_sfb"],
                                   q["slope_zp"], q["slope_scale"], q["slope_sfb"])
        return act.leaky_relu_sa8(v, q["in_zp"], ident, alpha)

    return fn, ("leaky_sa8", *params)


def prelu_sa8(x: npt.NDArray[np.int8], slopes_q: npt.ArrayLike, *, axis: int, in_zp: int, in_scale: int,
              in_sfb: int, out_zp: int, out_scale: int, out_sfb: int, slope_zp: int, slope_scale: int,
              slope_sfb: int) -> np.ndarray:
    """sa8 PReLU: :func:`leaky_relu_sa8` with one quantised slope per index of ``axis``."""
    x = np.asarray(x)
    slopes = np.asarray(slopes_q, dtype=np.int64).reshape(-1)
    n = slopes.size
    params = (int(in_zp), int(in_scale), int(in_sfb), int(out_zp), int(out_scale), int(out_sfb), int(slope_zp),
              int(slope_scale), int(slope_sfb))

    def params_of(shape: tuple[int, ...]) -> tuple[act.SaRequant, act.SaRequant]:
        ident, alpha = _sa8_params(slopes, in_scale, in_sfb, out_zp, out_scale, out_sfb, slope_zp, slope_scale,
                                   slope_sfb)
        return ident, act.SaRequant(alpha.scale.reshape(shape), alpha.shift.reshape(shape),
                                    alpha.offset.reshape(shape))

    if x.size <= 256 * n:
        return act.leaky_relu_sa8(x, in_zp, *params_of(axis_shape(x.ndim, axis, n))).astype(np.int8, copy=False)
    return _tabulated(x, lambda v: act.leaky_relu_sa8(v, in_zp, *params_of((n, 1))), axis, n,
                      key=("prelu_sa8", slopes.tobytes(), *params)).astype(np.int8, copy=False)


_PLAN_TABLES = 8  # tables (of slope values) a leaky plan keeps at hand


def leaky_plan(dtype: npt.DTypeLike, *, sa8: dict[str, int] | None = None, shift: int = 0,
               normalise: bool = False) -> Callable[[np.ndarray, int], np.ndarray]:
    """:func:`leaky_relu_sa8` (``sa8`` given: its keyword parameters) or :func:`leaky_relu_fx` with
    the parameters fixed, for repeated calls under the current platform.

    The returned ``compute(x, slope)`` gives those functions' results (the same arithmetic). A
    small input reads a table of the activation of every value of its type for that slope (256 or
    65536 entries, shared with the functions above), built at the slope's second call so that a
    one-off call does not pay for it. Large inputs take the functions above as before.

    Args:
        dtype: the container dtype (int8 or int16).
        sa8: sa8: ``in_zp, in_scale, in_sfb, out_zp, out_scale, out_sfb, slope_zp, slope_scale,
            slope_sfb``; None for fx.
        shift: fx: ``in.frac_bits + slope.frac_bits - out.frac_bits``.
        normalise: fx: normalise the slope first (fx16).

    Returns:
        ``compute(x, slope)``: ``x`` an array of ``dtype``, ``slope`` the quantised slope (int);
        the result of ``x``'s shape and dtype.
    """
    dt = np.dtype(dtype)
    bits = dt.itemsize * 8
    codes = np.dtype(f"u{dt.itemsize}")
    platform = get_platform()
    tables: dict[int, np.ndarray] = {}
    seen: set[int] = set()

    def compute(x: np.ndarray, slope: int) -> np.ndarray:
        if x.size >= (PAIR_MIN if bits == 8 else 1 << bits):
            if sa8 is not None:
                return leaky_relu_sa8(x, slope, **sa8)
            return leaky_relu_fx(x, slope, shift, normalise=normalise)
        table = tables.get(slope)
        if table is None:
            fn, key = _leaky_sa8(slope, sa8) if sa8 is not None else _leaky_fx(bits, slope, shift, normalise)
            full_key = (key, dt.str, 1, platform)  # _tabulated's key: the tables kept there are shared
            kept = _TABLES.get(full_key)
            if kept is None:
                if slope not in seen:
                    seen.add(slope)
                    return fn(x).astype(dt, copy=False)
                kept = _build_table(fn, dt, 1, full_key)
            if len(tables) >= _PLAN_TABLES:
                tables.clear()
                seen.clear()
            table = tables[slope] = kept[0]
        return table[x.view(codes)]

    return compute
