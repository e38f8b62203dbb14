"""Element-wise add, sub, mul, min and max of MLI 2.0 (``kernels/eltwise``).

Operands broadcast as in MLI: both have the output's shape, or one is a scalar (a 0-d array here).

The element arithmetic lives in :mod:`pymli.arith.eltwise`. This module only decides how to apply
it quickly: the result of an 8-bit operation depends on at most two 8-bit values, so large 8-bit
inputs go through a table of every possible result (256 entries with a scalar operand, gathered by
byte pairs for large inputs; 65536 for two tensors) built by that same arithmetic; 16-bit inputs
are computed directly (in int32 where :func:`pymli.arith.eltwise.fx_eltwise` can), in blocks of at
most 2**18 elements.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from ..arith.eltwise import EltOp, fx_eltwise, fx_int32_plan, fx_params, sa8_eltwise, sa8_params
from ..arith.rounding import round_mode
from ..formats import RoundMode
from ._gather import PAIR_MIN, pair_table, take_pairs

__all__ = ["EltOp", "eltwise_fx", "eltwise_sa8", "eltwise_plan", "apply_binary"]

_CHUNK = 1 << 18  # elements per block of the direct path (bounds the int32/int64 temporaries)
_TABLE_CHUNK = 1 << 14  # elements per block when a 65536-entry table is built (int64 temporaries in cache)
_PAIR_TABLE_MIN = 1 << 15  # two 8-bit tensors at least this big use the 65536-entry table


def _by_unsigned(dtype: np.dtype) -> np.ndarray:
    """All values of a signed 8/16-bit dtype, ordered by their unsigned bit pattern."""
    u = np.dtype(f"u{dtype.itemsize}")
    return np.arange(1 << (8 * dtype.itemsize), dtype=np.int64).astype(u).view(dtype)


def apply_binary(f: Callable[[np.ndarray, np.ndarray], np.ndarray], a: np.ndarray, b: np.ndarray,
                 out_dtype: npt.DTypeLike, key: tuple | None = None) -> np.ndarray:
    """Evaluate ``f`` (an exact element-wise function of two integer arrays) over ``a`` and ``b``.

    ``a`` and ``b`` have one shape or one of them is 0-d. Results are identical to ``f(a, b)``;
    only the evaluation strategy (tables, chunks) changes. ``key`` (hashable, fully describing
    ``f``) lets tables be reused across calls.
    """
    a, b = np.asarray(a), np.asarray(b)
    shape = np.broadcast_shapes(a.shape, b.shape)
    n = int(np.prod(shape))
    small = a.dtype.itemsize == 1
    if a.ndim == 0 and b.ndim == 0:
        return np.asarray(f(a, b)).astype(out_dtype)
    if a.ndim == 0 or b.ndim == 0:
        arr, scalar_first = (b, True) if a.ndim == 0 else (a, False)
        if small or n > (1 << 17):
            sval = int(a if scalar_first else b)
            kind = ("scalar", scalar_first, sval, arr.dtype.str)
            table = _table(f, key, kind, out_dtype,
                           lambda v: f(np.asarray(sval, arr.dtype), v) if scalar_first else f(v, np.asarray(sval, arr.dtype)),
                           arr.dtype)
            if small and table.itemsize == 1 and key is not None and n >= PAIR_MIN:
                return take_pairs(table, _pairs(table, (key, kind, table.dtype.str, round_mode())), arr)
            return np.take(table, arr.view(f"u{arr.dtype.itemsize}"))
    elif small and n >= _PAIR_TABLE_MIN:
        table = _table(f, key, ("pair",), out_dtype, None, a.dtype)
        idx = (a.view(np.uint8).astype(np.uint16) << 8) | b.view(np.uint8)
        return np.take(table, idx)
    if n <= _CHUNK:
        return f(a, b).astype(out_dtype, copy=False)
    a_flat = np.ascontiguousarray(np.broadcast_to(a, shape)).reshape(-1)
    b_flat = np.ascontiguousarray(np.broadcast_to(b, shape)).reshape(-1)
    out = np.empty(n, dtype=out_dtype)
    for i in range(0, n, _CHUNK):
        out[i:i + _CHUNK] = f(a_flat[i:i + _CHUNK], b_flat[i:i + _CHUNK])
    return out.reshape(shape)


def _table(f: Callable[[np.ndarray, np.ndarray], np.ndarray], key: tuple | None, kind: tuple,
           out_dtype: npt.DTypeLike, unary: Callable[[np.ndarray], np.ndarray] | None,
           in_dtype: np.dtype) -> np.ndarray:
    """Every result of ``f`` indexed by the operands' unsigned bit patterns (cached by ``key``)."""
    full_key = None if key is None else (key, kind, np.dtype(out_dtype).str, round_mode())
    if full_key is not None and full_key in _TABLES:
        return _TABLES[full_key]
    vals = _by_unsigned(in_dtype)
    if unary is not None:
        table = unary(vals).astype(out_dtype)
    else:
        first, second = np.repeat(vals, 256), np.tile(vals, 256)
        table = np.empty(first.size, dtype=out_dtype)
        for i in range(0, first.size, _TABLE_CHUNK):
            table[i:i + _TABLE_CHUNK] = f(first[i:i + _TABLE_CHUNK], second[i:i + _TABLE_CHUNK])
    if full_key is not None:
        if len(_TABLES) >= 64:
            _TABLES.pop(next(iter(_TABLES)))
        _TABLES[full_key] = table
    return table


_TABLES: dict[tuple, np.ndarray] = {}


def _pairs(table: np.ndarray, full_key: tuple) -> np.ndarray:
    """The byte-pair form of a kept 256-entry table (:func:`pymli.kernels._gather.pair_table`), kept too."""
    pkey = (full_key, "pairs")
    pairs = _TABLES.get(pkey)
    if pairs is None:
        if len(_TABLES) >= 64:
            _TABLES.pop(next(iter(_TABLES)))
        pairs = _TABLES[pkey] = pair_table(table)
    return pairs


def eltwise_fx(op: EltOp | str, a: npt.ArrayLike, b: npt.ArrayLike, *, frac_bits: tuple[int, int, int],
               bits: int) -> np.ndarray:
    """fx8 / fx16 element-wise operation.

    Args:
        op: operation (:class:`EltOp` or its value, e.g. ``"add"``).
        a, b: int8 / int16 operands of one shape, or one of them a scalar (0-d).
        frac_bits: fractional bits of a, b and the output.
        bits: 8 or 16.

    Returns:
        Array of the container type (int8 / int16), saturated.
    """
    op = EltOp(op)
    p = fx_params(op, *frac_bits, bits)
    dt = np.int8 if bits == 8 else np.int16
    a, b = np.asarray(a), np.asarray(b)
    if op in (EltOp.MAX, EltOp.MIN) and p.post == 0 and a.dtype == dt and b.dtype == dt:
        # No output shift: the result is max / min itself in the container type (what the int32
        # path computes and casts back), one pass with no temporaries.
        return (np.maximum if op is EltOp.MAX else np.minimum)(a, b)
    return apply_binary(lambda x, y: fx_eltwise(op, x, y, p, bits), np.asarray(a, dt), np.asarray(b, dt), dt,
                        key=("fx", op, p, bits))


def eltwise_sa8(op: EltOp | str, a: npt.ArrayLike, b: npt.ArrayLike, *, q1: tuple[int, int, int],
                q2: tuple[int, int, int], qo: tuple[int, int, int]) -> np.ndarray:
    """sa8 element-wise operation with requantisation to the output's parameters.

    Args:
        op: operation.
        a, b: int8 operands (one may be a scalar).
        q1, q2, qo: (scale, scale_frac_bits, zero_point) of a, b and the output.

    Returns:
        int8 array.
    """
    op = EltOp(op)
    p = sa8_params(op, q1, q2, qo)
    return apply_binary(lambda x, y: sa8_eltwise(op, x, y, p), np.asarray(a, np.int8), np.asarray(b, np.int8),
                        np.int8, key=("sa8", op, p))


def eltwise_plan(op: EltOp | str, *, bits: int, q: tuple[tuple[int, int, int], ...] | None = None,
                 frac_bits: tuple[int, int, int] | None = None) -> Callable[..., np.ndarray]:
    """:func:`eltwise_sa8` (``q`` given) or :func:`eltwise_fx` (``frac_bits`` given) with the
    parameters derived once, for repeated calls under the current rounding mode (one plan is
    shared by the calls with equal arguments and mode).

    The returned ``compute(a, b)`` gives the results of those functions (the same arithmetic),
    by the cheapest route for the size at hand: a small 8-bit operation reads a table of every
    result (256 entries per scalar operand value; for two tensors the 65536-entry table of
    :func:`apply_binary`, built from the plan's second call on, so that a one-off operation does
    not pay for it), a small 16-bit one the int32 form of :func:`pymli.arith.eltwise.fx_int32_plan`;
    large operands take :func:`apply_binary` as before.

    Args:
        op: the operation.
        bits: container bits of the operands and result (8 or 16; sa8: 8).
        q: sa8: (scale, scale_frac_bits, zero_point) of a, b and the output.
        frac_bits: fx: fractional bits of a, b and the output.

    Returns:
        ``compute(a, b, out=None)``: ``a``, ``b`` of the container dtype, one shape or one of them
        0-d; the result array (container dtype) of the broadcast shape, or ``out`` (that shape and
        dtype; it may overlap the operands) holding it.
    """
    return _eltwise_plan(EltOp(op), int(bits), None if q is None else tuple(tuple(int(v) for v in t) for t in q),
                         None if frac_bits is None else tuple(int(v) for v in frac_bits), round_mode())


@functools.lru_cache(maxsize=64)  # plans keep at most one 65536-entry table each
def _eltwise_plan(op: EltOp, bits: int, q: tuple | None, frac_bits: tuple | None,
                  mode: RoundMode) -> Callable[..., np.ndarray]:
    """:func:`eltwise_plan` for hashable arguments and the rounding mode (shared by equal calls)."""
    dt = np.dtype(np.int8 if bits == 8 else np.int16)
    direct: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None
    plain_minmax = False
    if q is not None:
        sp = sa8_params(op, *q)
        key: tuple = ("sa8", op, sp)

        def f(x: np.ndarray, y: np.ndarray) -> np.ndarray:
            return sa8_eltwise(op, x, y, sp)
    else:
        fp = fx_params(op, *frac_bits, bits)  # type: ignore[misc]
        key = ("fx", op, fp, bits)

        def f(x: np.ndarray, y: np.ndarray) -> np.ndarray:
            return fx_eltwise(op, x, y, fp, bits)
        plain_minmax = op in (EltOp.MAX, EltOp.MIN) and fp.post == 0
        if plain_minmax:
            direct = np.maximum if op is EltOp.MAX else np.minimum  # as in eltwise_fx
        else:
            direct = fx_int32_plan(op, fp, bits, mode)
    scalar_tables: dict[tuple[bool, int], np.ndarray] = {}  # at most 2 * 256 entries (8-bit values)
    pair: list[np.ndarray | None] = [None]
    calls = [0]

    # The int32 add / sub / mul form writes straight into a given output.
    into = direct if bits == 16 and direct is not None and op not in (EltOp.MAX, EltOp.MIN) else None

    def compute(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        if out is not None:
            if into is not None and (a.ndim and b.ndim and a.size <= _CHUNK
                                     or (a.ndim or b.ndim) and max(a.size, b.size) < PAIR_MIN):
                return into(a, b, out)  # type: ignore[call-arg]
            out[...] = result(a, b)
            return out
        return result(a, b)

    def result(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        n = a.size if a.ndim else b.size
        if a.ndim and b.ndim:
            if direct is not None and (plain_minmax or bits == 16 and n <= _CHUNK):
                return direct(a, b)
            if bits == 8 and n < _PAIR_TABLE_MIN:
                table = pair[0]
                if table is None:
                    calls[0] += 1
                    if calls[0] == 1:
                        return f(a, b).astype(dt, copy=False)
                    table = pair[0] = _table(f, key, ("pair",), dt, None, dt)
                idx = a.view(np.uint8).astype(np.uint16)
                idx <<= 8
                idx |= b.view(np.uint8)
                return table[idx]
        elif (a.ndim or b.ndim) and n < PAIR_MIN:
            if bits == 8:
                first = a.ndim == 0
                sval = int(a if first else b)
                table = scalar_tables.get((first, sval))
                if table is None:
                    sv = np.asarray(sval, dt)
                    table = scalar_tables[(first, sval)] = _table(
                        f, key, ("scalar", first, sval, dt.str), dt,
                        (lambda v: f(sv, v)) if first else (lambda v: f(v, sv)), dt)
                return table[(b if first else a).view(np.uint8)]
            if direct is not None:
                return direct(a, b)
        return apply_binary(f, a, b, dt, key=key)

    return compute
