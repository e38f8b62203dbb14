"""LUT-based transform kernels of MLI 2.0 (``kernels/transform``: sigm, tanh, softmax, l2_normalize).

Pure functions over integer NumPy arrays (any shape) plus the activation's :class:`~pymli.tensor.Lut`
descriptor and keyword scalars. They return new arrays of the output container dtype (int8 /
int16; int64 holding such values when given wider inputs); the facade stores them and sets the
output quantisation. All arithmetic is in :mod:`pymli.arith.lut` and :mod:`pymli.arith.rounding`.

Speed: a result that depends on one 8- or 16-bit code (an activation of the input, the exponential
of ``x - max``) is computed once per possible code into a table cached per LUT contents, format and
rounding mode (:func:`pymli.arith.lut.code_table`), then gathered; the remaining per-element steps
run in int32 where the bounds allow (:func:`pymli.arith.lut.scale_round_sat`). :func:`l2_normalize`
of contiguous rows (the last axis, or the whole tensor) sums the squares exactly without BLAS and
scales every row by an exact float factor, rounding in int32, float32 or float64 as the bounds allow
(:func:`_l2_rows`). With the optional JIT (:mod:`pymli.kernels._jit`, numba), :func:`l2_normalize`
runs its per-slice steps compiled (:mod:`pymli.kernels._jit_reduce`), with the same bounds and values.

Axis convention (``mli_softmax_cfg`` / ``mli_l2_normalize_cfg``): ``axis >= 0`` normalises every
1-D slice along that dimension independently; ``axis < 0`` normalises the whole tensor at once.
(C's softmax does the same for any negative axis; C's l2_normalize reads outside its shape array
for ``axis < -1``, which pymli does not imitate: it normalises the whole tensor.)
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from ..arith.lut import (
    MAX_FRAC_BITS_FX16,
    activation_fx,
    activation_sa8,
    asr_rnd_int32,
    code_table,
    fx_activation_codes,
    fx_exp_codes,
    lut_interpolate,
    sa8_lut_in_frac_bits,
    sa8_to_lut_input,
    scale_round_sat,
    take_codes8,
)
from ..arith.rnn import RoundShift
from ..arith.rounding import asr_rnd, norm, round_mode, sat, sub_sat, trunc_div, wrap
from ..formats import RoundMode
from ..tensor import Lut
from . import _jit
from ._blas import blas_single_thread
from ._scratch import scratch
from .diverse import permute

__all__ = [
    "SIGM_SA8_OUT",
    "TANH_SA8_OUT",
    "SOFTMAX_SA8_OUT",
    "L2NORM_SA8_OUT",
    "lut_activation_fx",
    "lut_activation_sa8",
    "lut_activation_plan",
    "softmax_fx",
    "softmax_sa8",
    "l2_normalize",
    "l2_normalize_reference",
    "norm32",
    "norm64",
]

# Output quantisation the sa8 kernels impose: (zero_point, scale_frac_bits), scale 1.
SIGM_SA8_OUT = (-128, 8)       # [0, 1) onto [-128, 127]: q = 256 * y - 128
TANH_SA8_OUT = (0, 7)          # (-1, 1) onto [-128, 127]: q = 128 * y
SOFTMAX_SA8_OUT = (-128, 8)
L2NORM_SA8_OUT = (0, 7)

# Input format of the inverse-square-root lookup: the normalised sum of squares is Q7.8.
_L2NORM_LUT_FRAC_BITS = 8


# Tensors with more elements than this evaluate an 8-bit kernel once per possible input code and
# gather (same function per element, so the result is identical; only faster).
_GATHER_MIN_SIZE = 512


# 16-bit inputs bigger than this go through a cached table of all 65536 codes (or differences).
_EXP16_TABLE_MIN = 1 << 14


def lut_activation_fx(x: npt.ArrayLike, lut: Lut, *, in_frac_bits: int, out_bits: int) -> np.ndarray:
    """``mli_krn_sigm_fx8/fx16``, ``mli_krn_tanh_fx8/fx16``: table lookup of fx values.

    Args:
        x: int8/int16 input values in Q(in_frac_bits).
        lut: the sigmoid or tanh table (Q15 output).
        in_frac_bits: the input's fractional bits.
        out_bits: 8 or 16 (the output is Q7 or Q15).

    Returns:
        Array of Q(out_bits - 1) values (int8 / int16 for int8 / int16 inputs, else int64).
    """
    xa = np.asarray(x)
    if xa.dtype in (np.int8, np.int16):
        in_bits = 8 * xa.dtype.itemsize
        if xa.size > (_GATHER_MIN_SIZE if in_bits == 8 else _EXP16_TABLE_MIN):
            # Every input code evaluated once (cached per LUT and format), then a gather.
            table = fx_activation_codes(lut, in_frac_bits, out_bits, in_bits)
            return np.take(table, xa.view(f"u{xa.dtype.itemsize}"))
        out_dt = np.int8 if out_bits == 8 else np.int16
        return activation_fx(xa, lut, in_frac_bits, out_bits).astype(out_dt)
    return activation_fx(xa, lut, in_frac_bits, out_bits)


def lut_activation_sa8(x: npt.ArrayLike, lut: Lut, *, in_zp: int, in_scale: int, in_shift: int,
                       out_zp: int, out_shift: int) -> np.ndarray:
    """``mli_krn_sigm_sa8`` / ``mli_krn_tanh_sa8``: sa8 in, lookup, sa8 out (scale 1, ``out_shift``)."""
    xa = np.asarray(x)
    if xa.dtype != np.int8:
        return activation_sa8(xa, lut, in_zp, in_scale, in_shift, out_zp, out_shift)
    def f(v: np.ndarray) -> np.ndarray:
        return activation_sa8(v, lut, in_zp, in_scale, in_shift, out_zp, out_shift)

    if xa.size <= _GATHER_MIN_SIZE:
        return f(xa.astype(np.int64)).astype(np.int8)
    return np.take(_sa8_activation_codes(lut, in_zp, in_scale, in_shift, out_zp, out_shift), xa.view(np.uint8))


def _sa8_activation_codes(lut: Lut, in_zp: int, in_scale: int, in_shift: int, out_zp: int,
                          out_shift: int) -> np.ndarray:
    """:func:`lut_activation_sa8` of every code once (cached per LUT and quantisation), indexed by
    the code's bit pattern."""
    def build() -> np.ndarray:
        v = np.arange(256).astype(np.uint8).view(np.int8).astype(np.int64)
        return activation_sa8(v, lut, in_zp, in_scale, in_shift, out_zp, out_shift).astype(np.int8)

    return code_table(lut, ("sa8 act", int(in_zp), int(in_scale), int(in_shift), int(out_zp), int(out_shift)), build)


def lut_activation_plan(in_dtype: npt.DTypeLike, *, fx: tuple[int, int] | None = None,
                        sa8: tuple[int, int, int, int, int] | None = None) -> Callable[[np.ndarray, Lut], np.ndarray]:
    """:func:`lut_activation_fx` (``fx`` given) or :func:`lut_activation_sa8` (``sa8`` given) with
    the parameters fixed, for repeated calls under the current platform.

    The returned ``compute(x, lut)`` gives those functions' results. A small input reads the
    table of every input code (the one those functions cache for large inputs) once the plan has
    seen the same LUT contents twice (so that a one-off call does not build it); the contents are
    compared on every call, since a LUT's data may change between calls.

    Args:
        in_dtype: the input container dtype (int8 / int16).
        fx: ``(in_frac_bits, out_bits)``.
        sa8: ``(in_zp, in_scale, in_shift, out_zp, out_shift)``.

    Returns:
        ``compute(x, lut)``: ``x`` an array of ``in_dtype``; the result array.
    """
    dt = np.dtype(in_dtype)
    codes = np.dtype(f"u{dt.itemsize}")
    if fx is not None:
        in_frac, out_bits = fx

        def direct(x: np.ndarray, lut: Lut) -> np.ndarray:
            return lut_activation_fx(x, lut, in_frac_bits=in_frac, out_bits=out_bits)

        def table_of(lut: Lut) -> np.ndarray:
            return fx_activation_codes(lut, in_frac, out_bits, dt.itemsize * 8)
        small = _GATHER_MIN_SIZE if dt.itemsize == 1 else _EXP16_TABLE_MIN
    else:
        zp, scale, shift, out_zp, out_shift = sa8  # type: ignore[misc]

        def direct(x: np.ndarray, lut: Lut) -> np.ndarray:
            return lut_activation_sa8(x, lut, in_zp=zp, in_scale=scale, in_shift=shift, out_zp=out_zp,
                                      out_shift=out_shift)

        def table_of(lut: Lut) -> np.ndarray:
            return _sa8_activation_codes(lut, zp, scale, shift, out_zp, out_shift)
        small = _GATHER_MIN_SIZE
    held: list = [None, None]  # the LUT contents last seen, and their table once built

    def compute(x: np.ndarray, lut: Lut) -> np.ndarray:
        if x.size > small or lut.data is None:
            return direct(x, lut)
        raw = np.asarray(lut.data).tobytes()
        if raw != held[0]:
            held[0], held[1] = raw, None
            return direct(x, lut)
        if held[1] is None:
            held[1] = table_of(lut)
        return held[1][x.view(codes)]

    return compute


def norm32(x: npt.ArrayLike) -> np.ndarray:
    """``mli_math_norm_fx<int32_t, int>``: redundant sign bits of a 32-bit value (31 for 0)."""
    return norm(x, 32)


def norm64(x: npt.ArrayLike) -> np.ndarray:
    """``mli_math_norm_fx<int64_t, int>``: redundant sign bits of a 64-bit value (63 for 0)."""
    return norm(x, 64)


def _reduce_axes(ndim: int, axis: int) -> tuple[int, ...]:
    """Axes summed over: all of them for ``axis < 0``, else the complement of nothing but ``axis``."""
    if axis < 0:
        return tuple(range(ndim))
    return (axis,)


def _recip_of_sum(total: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Normalise a 32-bit sum of exponentials and take 0.5 / mantissa.

    Returns ``(sum_exp, recip)``: the sum's redundant sign bits and ``min(2**29 // mnt, 32767)``
    cast (wrapping) to the ``bits``-bit kernel type, where ``mnt`` is the sum rounded to 16
    significant bits and saturated to that type (C truncates the division towards zero).
    """
    total = wrap(total, 32)
    if bits == 16 and total.size > _RECIP_F64_MIN and int(total.min()) > 0:
        return _recip_of_sum_f64(total)
    sum_exp = norm32(total)
    # asr_rnd(total, 16 - sum_exp, 32) with the shifts fixed once (plain when all are positive).
    mnt = sat(RoundShift(16 - sum_exp, 32, int(np.abs(total).max(initial=0)))(total), bits)
    safe = np.where(mnt == 0, 1, mnt)  # a zero mantissa divides by zero in C; never for a real LUT
    q = trunc_div(1 << 29, safe)
    recip = wrap(np.minimum(q, 32767), bits)
    return sum_exp, recip


# From this many sums on, :func:`_recip_of_sum` takes its float64 path.
_RECIP_F64_MIN = 64


def _round_sat16_f64(v: np.ndarray) -> np.ndarray:
    """Round float64 ``v`` (exact scaled integers) in place as ``asr_rnd`` does, then cap at 32767.

    ``floor(v + 1/2)`` for ROUND_UP, ``rint`` (half to even) for ROUND_CONVERGENT; exact because
    every ``v`` is an integer scaled by a power of two. Returns ``v``.
    """
    if round_mode() is RoundMode.UP:
        v += 0.5
        np.floor(v, out=v)
    else:
        np.rint(v, out=v)
    np.minimum(v, 32767.0, out=v)
    return v


def _recip_of_sum_f64(total: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_recip_of_sum` for positive 32-bit sums and 16 bits, in float64 (fewer passes).

    Exact: a positive ``t < 2**31`` is a float64 integer; ``frexp`` gives its bit length ``e``, so
    ``norm32(t) = 31 - e`` and the mantissa is ``t * 2**(15 - e)`` (a power-of-two scaling, exact)
    rounded as ``asr_rnd`` does (``floor(v + 1/2)`` for ROUND_UP, ``rint`` (half to even) for
    ROUND_CONVERGENT; a left shift when ``e <= 15`` is exact and needs no rounding), in
    ``[2**14, 2**15]`` before the saturation. ``2**29 / m`` for an integer ``2**14 <= m < 2**15``
    lies at least ``1/m`` from any integer unless it is one, far above float64's rounding error
    there (``2**-38``), so its floor is C's truncating division.
    """
    f = total.astype(np.float64)
    e = np.frexp(f)[1]
    m = _round_sat16_f64(np.ldexp(f, 15 - e))
    q = np.floor(np.divide(float(1 << 29), m))
    np.minimum(q, 32767.0, out=q)
    return (31 - e).astype(np.int64), q.astype(np.int64)


# Softmax slices along the last axis at most this long are reduced another way: NumPy's reduction
# over a short contiguous axis runs one tiny inner loop per slice.
_SHORT_SLICE = 64


def _short_last(a: np.ndarray, red: tuple[int, ...]) -> bool:
    """Whether ``red`` is only the last axis of ``a``, short, with many slices."""
    return red == (a.ndim - 1,) and a.ndim > 1 and a.shape[-1] <= _SHORT_SLICE and a.size > _GATHER_MIN_SIZE


def _max_distance(xa: np.ndarray, red: tuple[int, ...]) -> np.ndarray:
    """``k = max - x`` per slice, exact in the unsigned type of ``x``'s width (``0 <= k < 2**bits``)."""
    u = np.dtype(f"u{xa.dtype.itemsize}")
    if _short_last(xa, red):
        # Short slices as the columns of a transposed copy (blocked): the maximum runs along rows.
        cols = permute(xa.reshape(-1, xa.shape[-1]), (1, 0))
        mx = cols.max(axis=0).reshape(xa.shape[:-1] + (1,))
    else:
        mx = xa.max(axis=red, keepdims=True)
    return np.subtract(mx.view(u), xa.view(u))


def _sum32(e: np.ndarray, red: tuple[int, ...]) -> np.ndarray:
    """C's int32 accumulator of the exponentials: an int32 sum wraps modulo 2**32 exactly as it does.

    Short 8- / 16-bit slices (at most :data:`_SHORT_SLICE` values, ``|sum| < 2**21``: no wrap,
    every partial sum an integer exact in float32) are summed by a one-thread float32 BLAS
    matrix-vector product.
    """
    if _short_last(e, red) and e.dtype in (np.int8, np.int16):
        n = e.shape[-1]
        f = e.reshape(-1, n).astype(np.float32)
        with blas_single_thread():
            total = f @ np.ones(n, dtype=np.float32)
        return total.astype(np.int64).reshape(e.shape[:-1] + (1,))
    return np.add.reduce(e, axis=red, dtype=np.int32, keepdims=True).astype(np.int64)


def softmax_fx(x: npt.ArrayLike, lut: Lut, *, in_frac_bits: int, bits: int, axis: int = -1) -> np.ndarray:
    """``mli_krn_softmax_fx8`` / ``mli_krn_softmax_fx16`` (reference implementation).

    Per slice: ``e = exp_lut(x - max)`` stored in the kernel type (Q7 / Q15), ``sum(e)`` normalised,
    ``e * (0.5 / mantissa)`` shifted to Q(bits - 1). The 8-bit variant reproduces C exactly,
    including its wrap of the reciprocal into int8.

    Args:
        x: int8/int16 values in Q(in_frac_bits).
        lut: the exp(-x) table of ``mli_krn_softmax_create_lut``.
        in_frac_bits: the input's fractional bits.
        bits: 8 or 16 (the container).
        axis: dimension to normalise along, or -1 for the whole tensor.

    Returns:
        Array of Q(bits - 1) values, int8 / int16.
    """
    xa = np.asarray(x)
    red = _reduce_axes(xa.ndim, axis)
    out_dt = np.int8 if bits == 8 else np.int16
    if xa.dtype == out_dt and xa.size > (_GATHER_MIN_SIZE if bits == 8 else _EXP16_TABLE_MIN):
        jit = _softmax_fx_jit(xa, lut, in_frac_bits=in_frac_bits, bits=bits, axis=axis)
        if jit is not None:
            return jit
        # x - max = -k: one lookup per possible difference, then a gather.
        e = np.take(fx_exp_codes(lut, in_frac_bits, bits, bits), _max_distance(xa, red))
    else:
        xv = xa.astype(np.int64)
        mx = xv.max(axis=red, keepdims=True)
        e = activation_fx(xv, lut, in_frac_bits, bits, in_offset=mx).astype(out_dt)
    sum_exp, recip = _recip_of_sum(_sum32(e, red), bits)
    out_frac_bits = bits - 1
    shift = np.minimum(2 * int(lut.out_frac_bits) + MAX_FRAC_BITS_FX16 - sum_exp - out_frac_bits, 2 * bits - 1)
    return scale_round_sat(e, recip, shift, 0, bits)


def _shape3(shape: tuple[int, ...], axis: int) -> tuple[int, int, int]:
    """``(A, N, B)``: a C-contiguous array of ``shape`` as (before, along, after) ``axis`` (the whole
    array as one slice for ``axis < 0``), for the kernels of :mod:`pymli.kernels._jit_reduce`."""
    if axis < 0:
        return 1, int(np.prod(shape)), 1
    return int(np.prod(shape[:axis])), shape[axis], int(np.prod(shape[axis + 1:]))


def _softmax_fx_jit(xa: np.ndarray, lut: Lut, *, in_frac_bits: int, bits: int, axis: int) -> np.ndarray | None:
    """:func:`softmax_fx` of an input in the output container with the optional JIT, or None (JIT off).

    The exponentials ``e`` are the table of :func:`pymli.arith.lut.fx_exp_codes` at ``max - x``
    (compiled); their int32 sum and the reciprocal are :func:`_recip_of_sum`'s; the last step is
    :func:`pymli.arith.lut.scale_round_sat`, compiled where its int32 bounds hold (``|e|``,
    ``|recip| <= 2**15``: ``bits``-bit values; every shift at least 1), else NumPy's on ``e``.
    """
    jit = _jit.compiled("_jit_reduce")
    if jit is None or xa.ndim == 0:
        return None
    x = np.ascontiguousarray(xa)
    shape3 = _shape3(x.shape, axis)
    e = np.empty(x.shape, dtype=x.dtype)
    total = np.empty((shape3[0], shape3[2]), dtype=np.int64)
    jit.softmax_exp(x.reshape(shape3), fx_exp_codes(lut, in_frac_bits, bits, bits), e.reshape(shape3), total)
    sum_exp, recip = _recip_of_sum(total, bits)
    shift = np.minimum(2 * int(lut.out_frac_bits) + MAX_FRAC_BITS_FX16 - sum_exp - (bits - 1), 2 * bits - 1)
    if int(shift.min()) < 1:
        return scale_round_sat(e.reshape(shape3), recip[:, None, :], shift[:, None, :], 0, bits).reshape(x.shape)
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    jit.scale_slices(e.reshape(shape3), 0, recip, shift, round_mode() is RoundMode.UP, lo, hi, e.reshape(shape3))
    return e


def softmax_sa8(x: npt.ArrayLike, lut: Lut, *, in_scale: int, in_shift: int, axis: int = -1) -> np.ndarray:
    """``mli_krn_softmax_sa8`` (reference implementation).

    The input zero point cancels in ``x - max``; the difference is scaled into the table's Q.13
    input and interpolated (int16 Q15 exponentials, not stored), summed, and each exponential times
    ``0.5 / mantissa`` is converted to the fixed sa8 output (zero point -128, scale 2**-8).

    Returns:
        int8 array.
    """
    xa = np.asarray(x)
    red = _reduce_axes(xa.ndim, axis)
    fb = sa8_lut_in_frac_bits(lut)
    sh = wrap(int(in_shift), 16).item()
    zp, out_shift = SOFTMAX_SA8_OUT

    def finish(e: np.ndarray, total: np.ndarray) -> np.ndarray:
        sum_exp, recip = _recip_of_sum(total, 16)
        shift = np.minimum(2 * int(lut.out_frac_bits) + MAX_FRAC_BITS_FX16 - sum_exp - out_shift, 31)
        return scale_round_sat(e, recip, shift, zp, 8)

    if xa.dtype != np.int8:
        xv = xa.astype(np.int64)
        d = xv - xv.max(axis=red, keepdims=True)
        e = lut_interpolate(sa8_to_lut_input(d, 0, in_scale, sh, fb), lut, fb).astype(np.int16)
        return finish(e, _sum32(e, red))
    # x - max = -k with k in [0, 255]: the exponential once per difference (int16 Q15 values).
    g = code_table(lut, ("sa8 exp", int(in_scale), sh), lambda: lut_interpolate(
        sa8_to_lut_input(-np.arange(256, dtype=np.int64), 0, in_scale, sh, fb), lut, fb).astype(np.int16))
    k = _max_distance(xa, red)
    e = np.take(g, k)
    total = _sum32(e, red)
    if axis < 0:
        # One slice: the output is a function of k alone.
        return take_codes8(finish(g, total.reshape(())), k)
    return finish(e, total)


def l2_normalize(x: npt.ArrayLike, lut: Lut, *, bits: int, out_shift: int, in_zp: int | None = None,
                 axis: int = -1, out: np.ndarray | None = None) -> np.ndarray:
    """``mli_krn_l2_normalize_fx16`` / ``mli_krn_l2_normalize_sa8`` (reference implementation).

    Per slice: the sum of squares (40-bit accumulator, exact here) is normalised to a Q7.8 int16
    with an even shift, looked up in the 1/sqrt table, and each element times that factor is
    shifted to the output format.

    Args:
        x: int16 (fx16) or int8 (sa8) values.
        lut: the 1/sqrt table of ``mli_krn_l2_normalize_create_lut``.
        bits: the container bits (16 or 8).
        out_shift: the output's fractional bits (15 for fx16) or scale_frac_bits (7 for sa8).
        in_zp: the sa8 input zero point (subtracted with 16-bit saturation); None for fx16.
        axis: dimension to normalise along, or -1 for the whole tensor.
        out: optional destination of ``x``'s shape (may overlap ``x``): the main fast path writes
            its result there (saving a copy); check whether the return value is ``out``.

    Returns:
        Array of output values: int8 / int16 from the fast path (``out`` where it was written),
        int64 from the plain one.
    """
    fast = _l2_normalize_jit(np.asarray(x), lut, bits=bits, out_shift=out_shift, in_zp=in_zp, axis=axis, out=out)
    if fast is not None:
        return fast
    fast = _l2_normalize_fast(np.asarray(x), lut, bits=bits, out_shift=out_shift, in_zp=in_zp, axis=axis, out=out)
    if fast is not None:
        return fast
    return l2_normalize_reference(x, lut, bits=bits, out_shift=out_shift, in_zp=in_zp, axis=axis)


def l2_normalize_reference(x: npt.ArrayLike, lut: Lut, *, bits: int, out_shift: int, in_zp: int | None = None,
                           axis: int = -1) -> np.ndarray:
    """:func:`l2_normalize` element by element in int64 (the plain path, and the fast path's oracle).

    Args and Returns: as :func:`l2_normalize`.
    """
    xv = np.asarray(x, dtype=np.int64)
    if in_zp is not None:
        xv = sub_sat(xv, int(in_zp), 16)
    red = _reduce_axes(xv.ndim, axis)
    # The sum of squares is below 2**30 * 2**31 elements only in theory; each square < 2**30 and
    # int64 holds any realistic tensor exactly (C's 40-bit accumulator likewise never wraps here).
    total = (xv * xv).sum(axis=red, keepdims=True)
    norm_shift = 48 - norm64(total)
    norm_shift = norm_shift + (norm_shift & 1)  # even, so that the square root halves it exactly
    sum_cast = sat(asr_rnd(total, norm_shift, 64), 16)
    inv = lut_interpolate(sum_cast, lut, _L2NORM_LUT_FRAC_BITS)
    shift = int(lut.out_frac_bits) + ((norm_shift + _L2NORM_LUT_FRAC_BITS) >> 1) - int(out_shift)
    return sat(asr_rnd(inv * xv, shift, 32), bits)


# Largest slice of the fast path: its sum of squares (each at most 2**30) is exact in float64
# (every partial sum an integer below 2**53).
_L2_FAST_SLICE_MAX = 1 << 23


def _sum_squares(c: np.ndarray, axis: int) -> np.ndarray:
    """Per-slice sum of squares of int16-range ``c`` (keepdims), exact: see :data:`_L2_FAST_SLICE_MAX`.

    Float64 products and sums of integers below 2**53 are exact in any order (FMA included).
    The whole-tensor sum is one BLAS dot product on one thread (a threaded one waits for
    sleeping OpenBLAS workers on a busy machine); slices are summed by ``einsum`` (no BLAS).
    """
    f = c.astype(np.float64)
    if axis < 0:
        flat = f.reshape(-1)
        with blas_single_thread():
            total = np.dot(flat, flat)
        return np.full((1,) * c.ndim, total).astype(np.int64)
    letters = "abcdefghijklmnopqrstuvwxyz"[: c.ndim]
    kept = letters.replace(letters[axis], "")
    return np.expand_dims(np.einsum(f"{letters},{letters}->{kept}", f, f), axis).astype(np.int64)


def _l2_inv_table(lut: Lut) -> np.ndarray:
    """The 1/sqrt LUT read at every Q7.8 code ``0 .. 2**15 - 1`` (int64, cached per LUT contents and
    rounding mode)."""
    return code_table(lut, ("l2 inv",), lambda: lut_interpolate(np.arange(1 << 15), lut, _L2NORM_LUT_FRAC_BITS))


def _l2_factors(total: np.ndarray, lut: Lut, out_shift: int) -> tuple:
    """Per-slice factor and shift of :func:`l2_normalize_reference` from the sums of squares.

    The sum is normalised to a Q7.8 int16 with an even shift (``0 <= sum_cast < 2**15``: the sum
    is not negative) and the 1/sqrt LUT is read from its value for each of those codes (cached
    per LUT contents and rounding mode). One slice is computed on Python ints.

    Returns:
        ``(inv, shift)``: int64 arrays of ``total``'s shape, or Python ints for one slice.
    """
    table = _l2_inv_table(lut)
    if total.size == 1:
        t = int(total.reshape(()))
        norm_shift = 48 - norm(t, 64)
        norm_shift += norm_shift & 1
        sum_cast = int(sat(RoundShift(norm_shift, 64, t)(t), 16))  # asr_rnd(t, norm_shift, 64), on a Python int
        inv = int(table[sum_cast])
    elif int(total.max()) < 1 << 53:
        # float64, exact: a sum below 2**53 is a float64 integer whose frexp exponent e is its bit
        # length (0 for 0), so norm64 = 63 - e; the scaling by 2**-norm_shift is exact, its
        # rounding floor(v + 1/2) (ROUND_UP) or rint (half to even, ROUND_CONVERGENT) is
        # asr_rnd's (a left shift, norm_shift <= 0, is exact and below 2**15), and the result is
        # at most 2**15 before the 16-bit saturation.
        f = total.astype(np.float64)
        e = np.frexp(f)[1]
        norm_shift = (e - 15) + ((e - 15) & 1)
        v = _round_sat16_f64(np.ldexp(f, -norm_shift))
        inv = np.take(table, v.astype(np.intp))
    else:
        norm_shift = 48 - norm64(total)
        norm_shift = norm_shift + (norm_shift & 1)
        # asr_rnd(total, norm_shift, 64) with the shifts fixed once (plain when all are positive).
        rounded = RoundShift(norm_shift, 64, int(total.max()))(total)
        inv = np.take(table, sat(rounded, 16))
    return inv, int(lut.out_frac_bits) + ((norm_shift + _L2NORM_LUT_FRAC_BITS) >> 1) - int(out_shift)


def _l2_normalize_fast(xa: np.ndarray, lut: Lut, *, bits: int, out_shift: int, in_zp: int | None,
                       axis: int, out: np.ndarray | None = None) -> np.ndarray | None:
    """:func:`l2_normalize` in float64 / int32 with proven bounds; None where one fails.

    Exactness: centred values ``c`` fit int16 (int8 input with a zero point that cannot make
    ``x - zp`` saturate, or int16 input without one), so each square is at most ``2**30`` and a
    slice's sum of squares is exact (:func:`_sum_squares`). The per-slice steps (norm, LUT) are
    the reference's. Where the per-slice factor ``inv`` from the Q15 LUT fits int16 and every
    shift is positive, ``|c * inv| <= 2**30`` and C's 32-bit rounding shift and saturation are
    :func:`pymli.arith.lut.scale_round_sat`'s (int32; shifts of 31 and more give 0). A
    one-slice int8 input gathers from the results of its 256 codes instead.

    Returns:
        The output values in the container dtype (int8 / int16; written into ``out`` on the
        scaling path), or None.
    """
    if not (xa.dtype == np.int8 and in_zp is not None and -32640 <= int(in_zp) <= 32639
            or xa.dtype == np.int16 and in_zp is None):
        return None
    if xa.size == 0 or xa.ndim == 0:
        return None
    n = xa.size if axis < 0 else xa.shape[axis]
    if n > _L2_FAST_SLICE_MAX:
        return None
    if (axis < 0 or axis == xa.ndim - 1) and xa.flags.c_contiguous and (xa.dtype == np.int16 or xa.size > 256):
        dest = out if out is not None and out.shape == xa.shape else None
        done = _l2_rows(xa.reshape(-1, n), lut, bits=bits, out_shift=out_shift, zp=int(in_zp or 0), out=dest)
        if done is not None:
            return done.reshape(xa.shape)
    # |x - zp| < 2**15: no 16-bit saturation
    c = xa if in_zp is None else np.subtract(xa, np.int16(in_zp), dtype=np.int16)
    inv, shift = _l2_factors(_sum_squares(c, axis), lut, out_shift)
    if np.min(inv) < -(1 << 15) or np.max(inv) >= (1 << 15) or np.min(shift) < 1:
        return None
    if xa.dtype == np.int8 and np.size(inv) == 1:
        # One slice: the result is a function of the input code; compute it for the 256 codes.
        codes = np.arange(256).astype(np.uint8).view(np.int8)
        table = scale_round_sat(np.subtract(codes, np.int16(in_zp), dtype=np.int16), inv, shift, 0, 8)
        return take_codes8(table, xa)
    return scale_round_sat(c, inv, shift, 0, bits, out=out)


# Sums of squares of sa8 codes (``|x - zp| <= 255``: squares below 2**16) in float32 blocks of at
# most this many: every partial sum an integer below 2**24, exact in any order.
_L2_F32_BLOCK = 256

# Float rounding constants: ``v + 1.5 * 2**52`` is ``rint(v)`` plus that constant, exactly, for
# ``|v| < 2**51``, and its int64 bit pattern is the constant's plus ``rint(v)``.
_RINT_F64 = 1.5 * 2.0 ** 52


def _l2_row_sums(c: np.ndarray) -> np.ndarray | int | None:
    """Exact sums of squares of the rows of 2-D ``c``: float64 ``(rows,)`` (integers), an int for
    int32 ``c``, or None.

    No BLAS (a threaded OpenBLAS product waits for busy cores): ``einsum``'s sums of products, or
    integer additions. ``c`` is float32 holding sa8 values (``|c| <= 255``): blocks of at most
    :data:`_L2_F32_BLOCK` squares (below 2**16 each) have every partial sum an integer below 2**24,
    exact in float32 in any order; the block sums are added in float64 (integers below 2**53).
    ``c`` is float64 holding int16 values: squares at most 2**30, rows of at most
    :data:`_L2_FAST_SLICE_MAX`, every partial sum an integer below 2**53. ``c`` is int32 holding
    int16 values (one row): the int32 squares (at most 2**30) are added as two halves in uint32
    (each pair below 2**31), then in uint64. None for float32 rows longer than a block that do
    not split into whole blocks.
    """
    rows, n = c.shape
    if c.dtype == np.int32:
        u = np.multiply(c, c, out=scratch("l2 squares", c.shape, np.int32)).reshape(-1).view(np.uint32)
        h = n // 2
        pairs = np.add(u[:h], u[h:2 * h])
        return int(pairs.sum(dtype=np.uint64)) + int(u[2 * h:].sum(dtype=np.uint64))
    if c.dtype == np.float32 and n > _L2_F32_BLOCK:
        if n % _L2_F32_BLOCK:
            return None
        w = c.reshape(-1, _L2_F32_BLOCK)
        return np.einsum("ij,ij->i", w, w).reshape(rows, -1).sum(axis=1, dtype=np.float64)
    return np.einsum("ij,ij->i", c, c).astype(np.float64, copy=False)


def _l2_factor_int(total: int, lut: Lut, out_shift: int, up: bool) -> tuple[int, int]:
    """:func:`_l2_factors` of one sum of squares on Python ints: ``(inv, shift)``; ``(0, 31)`` for a
    zero sum (whose row is all zeros: any factor gives 0).

    ``norm_shift = 48 - norm64(t)`` is ``bitlength(t) - 15``, made even upwards; ``asr_rnd(t,
    norm_shift, 64)`` is a left shift for ``norm_shift <= 0`` (below 2**15, exact), else ``t`` plus
    half shifted (ROUND_UP) or the tie to the even neighbour (ROUND_CONVERGENT), saturated to 32767.
    """
    if total == 0:
        return 0, 31
    ns = total.bit_length() - 15
    ns += ns & 1
    if ns <= 0:
        v = total << -ns
    elif up:
        v = (total + (1 << (ns - 1))) >> ns
    else:
        v, rem, half = total >> ns, total & ((1 << ns) - 1), 1 << (ns - 1)
        v += rem > half or (rem == half and v & 1)
    inv = int(_l2_inv_table(lut)[min(v, 32767)])
    return inv, int(lut.out_frac_bits) - int(out_shift) + 4 + (ns >> 1)


def _l2_inv_table_f64(lut: Lut) -> np.ndarray:
    """:func:`_l2_inv_table` as float64 (cached likewise), and one more entry: 1.0 when every entry
    lies in ``[-2**15, 2**15)`` (the bound of :func:`_l2_scales`), else 0.0."""
    def build() -> np.ndarray:
        t = _l2_inv_table(lut)
        ok = int(t.min()) >= -(1 << 15) and int(t.max()) < 1 << 15
        return np.append(t.astype(np.float64), 1.0 if ok else 0.0)

    return code_table(lut, ("l2 inv f64",), build)


def _l2_scales(total: np.ndarray, lut: Lut, out_shift: int, cmax: int,
               tiny_zero: bool) -> tuple[np.ndarray, int] | None:
    """Per-row ``inv * 2**-shift`` of :func:`_l2_factors` from float64 sums of squares (integers below
    2**53), as float64: exact (``|inv| < 2**15``, shifts from 1 to 30); 0 where the shift is 31 or
    more (C's result is 0 there) or the sum is 0, and with ``tiny_zero`` also where
    ``cmax * |scale| < 1/2`` (``cmax`` bounding ``|c|``: every value of the row rounds to 0 in both
    modes). Returns ``(scales, top)`` with ``top`` the largest shift (at most 30) of a row whose
    scale is not 0 (0 if none), or None where ``inv`` or the shift is out of those bounds.

    The factors are :func:`_l2_factors`' float64 steps; the shift ``base + (norm_shift + 8) // 2``
    is ``base + 4 + norm_shift // 2`` for an even ``norm_shift``, and does not decrease with the
    sum, so its bounds are those of the smallest (non-zero) and largest sums.
    """
    table = _l2_inv_table_f64(lut)
    if table[-1] != 1.0:
        return None
    base = int(lut.out_frac_bits) - int(out_shift) + 4
    lowest = float(total.min())
    zero = None
    if lowest == 0.0:  # a zero row gives zeros: its factor does not matter
        zero = total == 0
        if zero.all():
            return np.zeros_like(total), 0
        lowest = float(total[~zero].min())
    if base + ((int(lowest).bit_length() - 14) >> 1) < 1:  # the shift of the smallest sum
        return None
    e = np.frexp(total)[1]
    e -= 15
    e += e & 1  # norm_shift
    s = np.take(table, _round_sat16_f64(np.ldexp(total, -e)).astype(np.intp))
    e >>= 1
    e += base  # the shift
    np.ldexp(s, -e, out=s)
    if base + ((int(total.max()).bit_length() - 14) >> 1) > 30:
        s[e > 30] = 0.0
    if zero is not None:
        s[zero] = 0.0
    if tiny_zero:
        mag = np.abs(s) * cmax
        if mag.min() < 0.5:
            s[mag < 0.5] = 0.0
    live = s != 0.0
    return s, int(e[live].max()) if live.any() else 0


def _l2_rows(x2: np.ndarray, lut: Lut, *, bits: int, out_shift: int, zp: int,
             out: np.ndarray | None = None) -> np.ndarray | None:
    """:func:`l2_normalize` of every row of the C-contiguous 2-D ``x2`` (the whole tensor: one row),
    for int16 values without a zero point or int8 values with ``-128 <= zp <= 127``; None otherwise
    or where the bounds of :func:`_l2_normalize_fast` fail.

    The sums of squares are exact (:func:`_l2_row_sums`), the factors :func:`_l2_factors`' (as
    scales, :func:`_l2_scales`). The scaling is C's ``asr_rnd(c * inv, shift, 32)`` with
    ``|c * inv| <= 2**30`` (``|inv| < 2**15``, shifts from 1 to 30; 31 and more give 0, as in
    :func:`pymli.arith.lut.scale_round_sat`):

    - one row of int16: in int32 (``c * inv`` plus the rounding half stays below 2**31);
    - int8: in float32, ``y = c * (inv * 2**-shift)`` exact (``|c * inv| < 2**23``; a row with
      ``max|c| * |inv| < 2**(shift - 1)`` rounds to 0 in both modes and is zeroed), then
      ``floor(y + 1/2)`` (ROUND_UP; ``y + 1/2`` exact: at most ``2 * max|c| * |inv| < 2**24`` in
      units of ``2**-shift``) or ``rint(y)`` (half to even, ROUND_CONVERGENT);
    - several rows of int16: in float64, ``y`` exact as above; ROUND_CONVERGENT adds
      :data:`_RINT_F64` (``rint``); ROUND_UP first adds ``2**-31`` (exact: ``y + 2**-31`` has at
      most 47 significant bits): ``y`` is a multiple of ``2**-shift`` with ``shift <= 30``, so
      ``floor(y + 1/2) = rint(y + 2**-31)`` with no tie.

    The float / int32 temporaries are per-thread scratch buffers (:mod:`pymli.kernels._scratch`).

    The saturation to the output type is a clip of the rounded values, skipped when
    ``max|c| * max|inv * 2**-shift|`` is below ``hi + 1/2`` (no value can round beyond the type;
    ``max|c|`` bounded by the type first, read from the values only when that bound is too large).

    Returns:
        The values in the container dtype: written into ``out`` (after every input is read) when
        given (``x2``'s size), else a new 2-D array; or None.
    """
    rows, n = x2.shape
    if x2.dtype == np.int8 and -128 <= zp <= 127:
        c = np.subtract(x2, np.float32(zp), out=scratch("l2 c", x2.shape, np.float32))
    elif x2.dtype == np.int16 and zp == 0:
        c = scratch("l2 c", x2.shape, np.int32 if rows == 1 else np.float64)
        c[...] = x2
    else:
        return None
    total = _l2_row_sums(c)
    if total is None:
        return None
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    # A bound of |c| from the type (255 for int8, see above), the actual one only where it matters.
    cmax = (1 << (8 * x2.itemsize - 1)) + abs(zp)
    out_dt = np.int8 if bits == 8 else np.int16
    up = round_mode() is RoundMode.UP
    if c.dtype == np.int32:
        inv, shift = _l2_factor_int(total, lut, out_shift, up)
        if not -(1 << 15) <= inv < 1 << 15 or shift < 1:
            return None
        r, n_sh = (0, 30) if shift >= 31 else (inv, shift)
        c *= np.int32(r)
        c = asr_rnd_int32(c, n_sh)
        top = (hi + 1 << n_sh) - (1 << (n_sh - 1))  # |c * r| below this: no result beyond the type
        if cmax * abs(r) >= top and _l2_cmax(x2, zp) * abs(r) >= top:
            np.clip(c, lo, hi, out=c)
        return _l2_store(c, out_dt, out)
    scales = _l2_scales(total, lut, out_shift, cmax, c.dtype == np.float32)
    if scales is None:
        return None
    s, top = scales
    smax = float(np.abs(s).max())
    if c.dtype == np.float64 and top:
        # One shift for every row: the factors inv * 2**(top - shift) (integers), when every
        # |c| * |factor| + 2**(top - 1) stays below 2**31 (the same rational per row, so the same
        # rounding; int32 arithmetic as in the one-row case).
        fold = np.ldexp(s, top)
        limit = (1 << 31) - (1 << (top - 1))
        if cmax * smax * 2.0 ** top < limit or _l2_cmax(x2, zp) * smax * 2.0 ** top < limit:
            xi = scratch("l2 c32", x2.shape, np.int32)
            xi[...] = x2
            rep = scratch("l2 scale32", x2.shape, np.int32)
            rep[...] = fold.astype(np.int32)[:, None]
            xi *= rep
            xi = asr_rnd_int32(xi, top)
            if cmax * smax >= hi + 0.5 and _l2_cmax(x2, zp) * smax >= hi + 0.5:
                np.clip(xi, lo, hi, out=xi)
            return _l2_store(xi, out_dt, out)
    big = cmax * smax >= hi + 0.5 and _l2_cmax(x2, zp) * smax >= hi + 0.5
    s = s.astype(c.dtype, copy=False)
    if rows == 1:
        c *= s
    else:
        rep = scratch("l2 scale", x2.shape, c.dtype)
        rep[...] = s[:, None]
        c *= rep
    if c.dtype == np.float32:
        if up:
            c += np.float32(0.5)
            np.floor(c, out=c)
        else:
            np.rint(c, out=c)
        if big:
            np.clip(c, lo, hi, out=c)
        return _l2_store(c, out_dt, out)
    if up:
        c += 2.0 ** -31
    c += _RINT_F64
    if big:
        np.clip(c, _RINT_F64 + lo, _RINT_F64 + hi, out=c)
    # The int64 patterns are the constant's plus the results: their low bits, cast, are the results.
    return _l2_store(c.view(np.int64), out_dt, out)


def _l2_cmax(x2: np.ndarray, zp: int) -> int:
    """``max|x - zp|`` over ``x2``."""
    return max(abs(int(x2.min()) - zp), abs(int(x2.max()) - zp))


def _l2_store(v: np.ndarray, dtype: type, out: np.ndarray | None) -> np.ndarray:
    """``v`` (2-D rows) cast (wrapping) to ``dtype``: into ``out`` when given (any shape of the same
    size; through a ``dtype`` copy unless ``out`` has that dtype), else a new array of ``v``'s shape."""
    if out is None:
        return v.astype(dtype)
    out[...] = (v if out.dtype == dtype else v.astype(dtype)).reshape(out.shape)
    return out


def _l2_normalize_jit(xa: np.ndarray, lut: Lut, *, bits: int, out_shift: int, in_zp: int | None,
                      axis: int, out: np.ndarray | None = None) -> np.ndarray | None:
    """:func:`l2_normalize` with the optional JIT (:mod:`pymli.kernels._jit_reduce`); None where it
    does not apply (JIT off, other dtypes, the bounds of :func:`_l2_normalize_fast` failing).

    The same steps as :func:`_l2_normalize_fast`, with the same bounds: centred values within
    ``[-2**15, 2**15]``, so the int64 sums of squares are exact; the per-slice factors come from
    :func:`_l2_factors` (compiled as :func:`pymli.kernels._jit_reduce.l2_factors`); with
    ``|inv| <= 2**15`` and shifts >= 1 the compiled scaling is
    :func:`pymli.arith.lut.scale_round_sat`'s int32 arithmetic.

    Returns:
        The output values in the container dtype (written into ``out`` when it is a C-contiguous
        array of that dtype and ``x``'s shape, not overlapping ``x`` other than element for element),
        or None.
    """
    if xa.dtype == np.int8 and in_zp is not None and -32640 <= int(in_zp) <= 32639:
        zp = int(in_zp)
    elif xa.dtype == np.int16 and in_zp is None:
        zp = 0
    else:
        return None
    jit = _jit.compiled("_jit_reduce")
    if jit is None or xa.size == 0 or xa.ndim == 0:
        return None
    x = np.ascontiguousarray(xa)
    shape3 = _shape3(x.shape, axis)
    x3 = x.reshape(shape3)
    total = np.empty((shape3[0], shape3[2]), dtype=np.int64)
    jit.l2_sums(x3, zp, total)
    inv, shift = np.empty_like(total), np.empty_like(total)
    up = round_mode() is RoundMode.UP
    if not jit.l2_factors(total, _l2_inv_table(lut), up, int(lut.out_frac_bits) - int(out_shift), inv, shift):
        return None
    out_dt = np.dtype(np.int8 if bits == 8 else np.int16)
    dest = out
    if dest is None or dest.shape != x.shape or dest.dtype != out_dt or not dest.flags.c_contiguous \
            or not dest.flags.writeable or (np.may_share_memory(dest, x) and dest.ctypes.data != x.ctypes.data):
        dest = np.empty(x.shape, dtype=out_dt)
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    jit.scale_slices(x3, zp, inv, shift, up, lo, hi, dest.reshape(shape3))
    return dest
