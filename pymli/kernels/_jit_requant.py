"""numba-compiled steps of TFLM's small prepared integer operators, loaded through
:func:`pymli.kernels._jit.compiled` (only when numba is installed: an optional dependency): the output stage
of :func:`pymli.tflm.quant_util.requantize_clamp` (:func:`requantize_clamp`), the whole int16 ADD / SUB step
(:func:`add_sub16`), the whole sparse step of the convolutions' prepared form (:func:`mac_gather`; the
output stage of its dense step: :func:`mac_stage`), QUANTIZE from
float32 (:func:`quantize_f32`) and the whole MEAN / SUM step over one block of axes (:func:`mean3`).

Like :mod:`pymli.kernels._jit_svdf`: ``nopython``, ``nogil``, ``cache=True``, no ``fastmath``. One call
replaces about ten NumPy calls on the (small) arrays of these steps: each int64 sum wrapped to int32 (C's
int32 accumulator; the identity on values already in that range), ``MultiplyByQuantizedMultiplier``
(:func:`pymli.kernels._jit_lstm.mbqm32`), the output zero point, the clamp and the narrowing store. The NumPy
stage computes the same values (tests/tflite/test_prepared_small_ops.py).
"""

from __future__ import annotations

import numba
import numpy as np

from ._jit_lstm import mbqm32, mbqm64, wrap32

__all__ = ["requantize_clamp", "add_sub16", "mac_gather", "mac_stage", "quantize_f32", "mean3", "warm_up"]

_JIT = {"nogil": True, "cache": True, "fastmath": False, "boundscheck": False}


@numba.njit(**_JIT)
def requantize_clamp(acc, out, m, s, zp, lo, hi):  # pragma: no cover - compiled
    """``out[i] = clamp(MultiplyByQuantizedMultiplier(wrap32(acc[i]), m, s) + zp, lo, hi)``.

    Args:
        acc: 1-D int64 sums. out: 1-D output (int8 / int16 / int32) of the same length, written.
        m: multiplier in ``[0, 2**31)``. s: shift (at least -31). zp: output zero point.
        lo, hi: the activation range (within ``out``'s type).
    """
    for i in range(acc.shape[0]):
        v = mbqm32(wrap32(acc[i]), m, s) + zp
        out[i] = lo if v < lo else (hi if v > hi else v)


@numba.njit(**_JIT)
def add_sub16(x1, x2, t1, t2, out, sub, m, s, zp, lo, hi):  # pragma: no cover - compiled
    """The prepared int16 ADD / SUB step of :func:`pymli.tflm.elementwise.prepare_add_sub` for inputs that
    repeat along the output's leading axes only (element ``i`` of the row-major output takes element
    ``i % size`` of each): each input's rescaled value from its table (indexed by the input's bits as
    uint16), or a constant input's own rescaled values, their sum or difference, then
    :func:`requantize_clamp`'s stage.

    Args:
        x1, x2: 1-D uint16 views of the int16 inputs; a constant input's: length 0.
        t1, t2: 1-D int64: the 65536 rescaled values, or a constant input's rescaled values.
        out: 1-D int16 output, written (not empty). sub: subtract. m, s, zp, lo, hi: as
            :func:`requantize_clamp`.
    """
    c1, c2 = x1.shape[0] == 0, x2.shape[0] == 0
    n1 = t1.shape[0] if c1 else x1.shape[0]
    n2 = t2.shape[0] if c2 else x2.shape[0]
    k1 = k2 = 0  # i % n1, i % n2 as counters (no division per element)
    for i in range(out.shape[0]):
        a = t1[k1] if c1 else t1[x1[k1]]
        b = t2[k2] if c2 else t2[x2[k2]]
        k1 = 0 if k1 + 1 == n1 else k1 + 1
        k2 = 0 if k2 + 1 == n2 else k2 + 1
        v = mbqm32(wrap32(a - b if sub else a + b), m, s) + zp
        out[i] = lo if v < lo else (hi if v > hi else v)


@numba.njit(**_JIT)
def mac_gather(x, idx, w, chan, par, out):  # pragma: no cover - compiled
    """The whole step of :func:`pymli.tflm.conv.prepare_mac` (a convolution's accumulators as a sparse linear
    map of its input), its output columns in blocks of ``G`` consecutive ones that read the same input
    elements: ``out[r, b * G + g] = clamp(MBQM(acc) + zp, lo, hi)`` of the exact int64 sum
    ``acc = chan[0, b * G + g] + sum_t x[r, idx[b, t]] * w[b, t, g]`` (``x``, ``out`` flat per sample)
    (:func:`~pymli.tflm.conv.prepare_mac` bounds each column's ``sum_t |w|`` times the input's range below
    ``2**53``); MBQM per column: the int64 accumulator's (TFLM ``MultiplyByQuantizedMultiplier(int64, ...)``,
    its multiplier reduced to 16 bits and its result wrapped to int32) where ``wide``, else the int32 one
    (:func:`~pymli.kernels._jit_lstm.mbqm32` wraps the sum to int32 first: C's int32 accumulator; multipliers
    in ``[0, 2**31)``, shifts of at least -31). The sums of a block run along ``g`` (contiguous weights: they
    vectorise); blocks of one column (``G == 1``) take a scalar loop.

    Args:
        x: int8 / int16 input (N, ...), C-contiguous, ``n_in`` elements per sample.
        idx: (B, T) uint32 element indices within one sample (padding taps: any index, zero weights).
        w: (B, T, G) int32 weights. chan: (3, B * G) int64: the zero point and bias correction, the multiplier,
            the shift per output column.
        par: int64 ``[wide, zp, lo, hi, n_in]``: the 64-bit accumulator, the output zero point, the clamp, one
            sample's input size.
        out: (N, ...) output (int8 / int16), C-contiguous, ``B * G`` elements per sample, written.
    """
    wide, zp, lo, hi, n_in = par[0] != 0, par[1], par[2], par[3], par[4]
    n_b, n_t, n_g = w.shape
    corr, m, s = chan[0], chan[1], chan[2]
    acc = np.empty(n_b * n_g, np.int64)
    n = x.shape[0]
    xs, outs = x.reshape(n * n_in), out.reshape(n * acc.shape[0])
    for r in range(n):
        xr = xs[r * n_in:(r + 1) * n_in]
        if n_g == 1:
            for b in range(n_b):
                a = corr[b]
                for t in range(n_t):
                    a += np.int64(xr[idx[b, t]]) * np.int64(w[b, t, 0])
                acc[b] = a
        else:
            acc[:] = corr
            for b in range(n_b):
                ab = acc[b * n_g:(b + 1) * n_g]
                for t in range(n_t):
                    xv = np.int64(xr[idx[b, t]])
                    wb = w[b, t]
                    for g in range(n_g):
                        ab[g] += xv * np.int64(wb[g])
        o = outs[r * acc.shape[0]:(r + 1) * acc.shape[0]]
        if wide:
            for j in range(acc.shape[0]):
                v = mbqm64(acc[j], m[j], s[j]) + zp
                o[j] = lo if v < lo else (hi if v > hi else v)
        else:
            for j in range(acc.shape[0]):
                v = mbqm32(acc[j], m[j], s[j]) + zp  # its operand wrapped to int32 first: C's accumulator
                o[j] = lo if v < lo else (hi if v > hi else v)


@numba.njit(**_JIT)
def mac_stage(a, chan, par, out):  # pragma: no cover - compiled
    """The output stage of :func:`pymli.tflm.conv.prepare_mac`'s dense step after its float64 matrix product:
    ``out[r, j] = clamp(MBQM(acc) + zp, lo, hi)`` of ``acc = int(a[r, j]) + chan[0, j]`` (``a``: exact
    integers, the conversion exact), MBQM as in :func:`mac_gather`.

    Args:
        a: (N, C) float64 products. chan, par: as :func:`mac_gather`. out: (N, C) output (int8 / int16), written.
    """
    wide, zp, lo, hi = par[0] != 0, par[1], par[2], par[3]
    corr, m, s = chan[0], chan[1], chan[2]
    for r in range(a.shape[0]):
        for j in range(a.shape[1]):
            v = np.int64(a[r, j]) + corr[j]
            v = (mbqm64(v, m[j], s[j]) if wide else mbqm32(v, m[j], s[j])) + zp
            out[r, j] = lo if v < lo else (hi if v > hi else v)


@numba.njit(**_JIT)
def quantize_f32(x, s, out, zp, lo, hi):  # pragma: no cover - compiled
    """TFLM ``AffineQuantize`` as :func:`pymli.tflm.quantize.prepare_affine_quantize` computes it: the float32
    quotient ``x / s`` (IEEE division, no fastmath), rounded half away from zero as ``trunc(q + copysign(0.5,
    q))`` in float64 (exact: a float32 plus 0.5), clamped to ``[-2**62, 2**62]``, wrapped to int32, plus the
    zero point, clamped to ``[lo, hi]``. A NaN quotient gives ``zp`` clamped (NumPy's conversion of NaN to
    int64, ``-2**63`` on x86 and 0 elsewhere, wraps to 0 either way).

    Args:
        x: 1-D float32 input. s: float32 scale. out: 1-D output (int8 / int16 / int32), written.
        zp, lo, hi: zero point and the output type's range.
    """
    for i in range(x.shape[0]):
        q = np.float64(x[i] / s)
        if q != q:
            v = zp
        else:
            q = np.trunc(q + np.copysign(0.5, q))
            q = -4611686018427387904.0 if q < -4611686018427387904.0 else (
                4611686018427387904.0 if q > 4611686018427387904.0 else q)
            v = wrap32(np.int64(q)) + zp
        out[i] = lo if v < lo else (hi if v > hi else v)


@numba.njit(**_JIT)
def mean3(x, out, zp_n, m, s, zp, lo, hi):  # pragma: no cover - compiled
    """The prepared MEAN / SUM step of :func:`pymli.tflm.reduce.prepare_mean_or_sum` for reduced axes that
    form one block: ``out[a, b]`` from the exact int64 sum of ``x[a, :, b]`` less ``zp_n`` (C's int32
    accumulator: one wrap of the exact sum), then :func:`requantize_clamp`'s stage.

    Args:
        x: (A, R, B) int8 / int16 input. out: (A, B) output of its type, written.
        zp_n: input zero point times R. m, s, zp, lo, hi: as :func:`requantize_clamp`.
    """
    for a in range(x.shape[0]):
        for b in range(x.shape[2]):
            acc = -zp_n
            for r in range(x.shape[1]):
                acc += np.int64(x[a, r, b])
            v = mbqm32(wrap32(acc), m, s) + zp
            out[a, b] = lo if v < lo else (hi if v > hi else v)


def warm_up() -> None:
    """Compile (or load from numba's cache) the argument types :mod:`pymli.tflm` passes: int8, int16 and int32
    outputs, int8 and int16 inputs of :func:`mac_gather` and :func:`mac_stage` (the accumulator's width is a
    value)."""
    for dt in (np.int8, np.int16, np.int32):
        requantize_clamp(np.zeros(1, np.int64), np.zeros(1, dt), 1 << 30, 0, 0, -128, 127)
    for dt in (np.int8, np.int16):
        mac_gather(np.zeros((1, 1, 1, 1), dt), np.zeros((1, 1), np.uint32), np.ones((1, 1, 1), np.int32),
                   np.array([[0], [1 << 30], [-1]], np.int64), np.array([1, 0, -128, 127, 1], np.int64),
                   np.zeros((1, 1, 1, 1), dt))
        mac_stage(np.zeros((1, 1)), np.array([[0], [1 << 30], [-1]], np.int64),
                  np.array([1, 0, -128, 127, 1], np.int64), np.zeros((1, 1), dt))
    for dt in (np.int8, np.int16, np.int32):
        quantize_f32(np.zeros(1, np.float32), np.float32(1), np.zeros(1, dt), 0, -128, 127)
        if dt != np.int32:
            mean3(np.zeros((1, 1, 1), dt), np.zeros((1, 1), dt), 0, 1 << 30, 0, 0, -128, 127)
    t = np.zeros(1 << 16, np.int64)
    add_sub16(np.zeros(1, np.uint16), np.zeros(1, np.uint16), t, t, np.zeros(1, np.int16), True, 1 << 30, 0, 0,
              -128, 127)
