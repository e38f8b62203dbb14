"""numba-compiled time loop of TFLM's integer LSTM (:func:`pymli.tflm.lstm.unidirectional_sequence_lstm`),
loaded through :func:`pymli.kernels._jit.compiled` (only when numba is installed: an optional dependency).

Like :mod:`pymli.kernels._jit_numba`: ``nopython``, ``nogil``, ``cache=True``, no ``fastmath``. Every step
of the recurrence in one call: the recurrent product (exact integers: int32 accumulators when the caller
has bounded every column's sum below ``2**31``, else int64), its requantisation per gate column, the sum with
the input part (its products computed for every step beforehand by one BLAS call; bias and requantisation
here), the int16 sigmoid / tanh as lookups in
their 65536-entry tables, the cell update and the hidden state, with the scalar arithmetic of
:mod:`pymli.tflm.quant_util` (``MultiplyByQuantizedMultiplier`` for int32 and int64, gemmlowp's
``SaturatingRoundingDoublingHighMul`` and ``RoundingDivideByPOT``, exponents up to 31) written
out element by element in int64. The NumPy loop computes the same values (tests/tflm/test_lstm_fast.py).
:func:`lstm_op` is a whole small operator in one call (its input products as exact int64 sums too), for
:func:`pymli.tflm.lstm.prepare_unidirectional_sequence_lstm` (tests/tflm/test_lstm_prepared.py).
"""

from __future__ import annotations

import numba
import numpy as np
from numba import types

__all__ = ["lstm_op", "lstm_steps", "mbqm32", "mbqm64", "op_entry", "warm_up", "wrap32"]

_JIT = {"nogil": True, "cache": True, "fastmath": False, "boundscheck": False}

@numba.njit(**_JIT, inline="always")
def wrap32(x):  # pragma: no cover - compiled
    """``x`` (int64) wrapped to int32 as C's narrowing store does (two's complement)."""
    return ((x + np.int64(1 << 31)) & np.int64(0xFFFFFFFF)) - np.int64(1 << 31)


@numba.njit(**_JIT, inline="always")
def mbqm32(x, m, s):  # pragma: no cover - compiled
    """``MultiplyByQuantizedMultiplier(int32 x, m, s)``
    (:func:`~pymli.tflm.quant_util.multiply_by_quantized_multiplier`) for shifts of at least -31
    (``QuantizeMultiplier`` flushes smaller factors to ``(0, 0)``) and non-negative multipliers (positive
    scales: SRDHM's saturating case, both operands ``-2**31``, does not arise; the caller checks both)."""
    left = s if s > 0 else np.int64(0)
    right = -s if s < 0 else np.int64(0)
    a = wrap32(x << left)
    p = (a * m + np.int64(1 << 30)) >> np.int64(31)
    if right == 0:
        return p
    return (p + ((np.int64(1) << (right - 1)) - (np.int64(1) if p < 0 else np.int64(0)))) >> right


@numba.njit(**_JIT, inline="always")
def mbqm64(x, m, s):  # pragma: no cover - compiled
    """``MultiplyByQuantizedMultiplier(int64 x, m, s)``
    (:func:`~pymli.tflm.quant_util.multiply_by_quantized_multiplier_int64`)."""
    red = (m + np.int64(1 << 15)) >> np.int64(16) if m < np.int64(0x7FFF0000) else np.int64(0x7FFF)
    total = np.int64(15) - s
    return wrap32((x * red + (np.int64(1) << (total - 1))) >> total)


@numba.njit(**_JIT, inline="always")
def _clamp(x, lo, hi):  # pragma: no cover - compiled
    return lo if x < lo else (hi if x > hi else x)


@numba.njit(**_JIT, inline="always")
def _gate_sum(a, a_in, m, s, m_in, s_in, wide):  # pragma: no cover - compiled
    """A gate's int16 pre-activation: the recurrent sum ``a`` and the input sum ``a_in`` (bias included)
    requantised (``MultiplyByQuantizedMultiplier``, int64 for 16x8 ``wide``, else int32), each saturated
    to int16, their saturated sum."""
    if wide:
        r = mbqm64(a, m, s)
        r_in = mbqm64(a_in, m_in, s_in)
    else:
        r = mbqm32(wrap32(a), m, s)
        r_in = mbqm32(wrap32(a_in), m_in, s_in)
    return _clamp(_clamp(r_in, np.int64(-32768), np.int64(32767))
                  + _clamp(r, np.int64(-32768), np.int64(32767)), np.int64(-32768), np.int64(32767))


@numba.njit(**_JIT, inline="always")
def _cell_state(gi, gf, gg, c_prev, fm, fs, im, is_, clip):  # pragma: no cover - compiled
    """The new int16 cell state: forget gate times the old state plus input gate times the cell gate, each
    requantised and saturated, then the quantised clip (0: none)."""
    cv = _clamp(mbqm32(gf * c_prev, fm, fs), np.int64(-32768), np.int64(32767))
    cv = _clamp(cv + _clamp(mbqm32(gi * gg, im, is_), np.int64(-32768), np.int64(32767)),
                np.int64(-32768), np.int64(32767))
    if clip > 0:
        cv = _clamp(cv, -clip, clip)
    return cv


@numba.njit(**_JIT)
def lstm_steps(xin, bias, m_in, s_in, h, c, w, acc, m_rec, s_rec, wide, hzp, sig_t, tanh_t, ctanh_t, cell_tanh, k,
               out):  # pragma: no cover - compiled
    """Every step of the recurrence (time-major), writing each step's hidden state to ``out``.

    Args:
        xin: (T, B, 4U) the input products of the gates without bias (exact integer values: float32,
            float64 or int64), columns in ``GATES`` order (input, forget, cell, output); bias: (4U,) int64;
            m_in, s_in: (4U,) int64 multipliers and shifts of the input part.
        h: (B, U) int64 hidden state, c: (B, U) int64 cell state: both updated in place.
        w: (U, 4U) recurrent weights (int32 or int64, the accumulator type); acc: (4U,) scratch of w's type.
        m_rec, s_rec: (4U,) int64 multipliers and shifts of the recurrent products.
        wide: 16x8 (int64 ``MultiplyByQuantizedMultiplier``) rather than 8x8 (int32).
        hzp: hidden zero point.
        sig_t, tanh_t: (65536,) int16 sigmoid / tanh of every int16 (indexed by its uint16 bits);
        ctanh_t: the same table of the cell state's tanh; cell_tanh: the cell gate takes tanh (else sigmoid).
        k: (9,) int64: forget-cell, input-cell, output-hidden (multiplier, shift) pairs, the hidden
            state's minimum and maximum, the quantised cell clip (0: none).
        out: (T, B, U) int64, written.
    """
    nt, nb, n4 = xin.shape
    ns = n4 // 4
    fm, fs, im, is_, om, os_ = k[0], k[1], k[2], k[3], k[4], k[5]
    hlo, hhi, clip = k[6], k[7], k[8]
    for t in range(nt):
        for b in range(nb):
            for j in range(n4):
                acc[j] = 0
            for q in range(ns):
                hv = h[b, q] - hzp
                for j in range(n4):
                    acc[j] += hv * w[q, j]
            for u in range(ns):
                gi = np.int64(0)
                gf = np.int64(0)
                gg = np.int64(0)
                go = np.int64(0)
                for gate in range(4):
                    j = gate * ns + u
                    v = _gate_sum(np.int64(acc[j]), np.int64(xin[t, b, j]) + bias[j], m_rec[j], s_rec[j], m_in[j],
                                  s_in[j], wide)
                    if gate == 0:
                        gi = np.int64(sig_t[v & 0xFFFF])
                    elif gate == 1:
                        gf = np.int64(sig_t[v & 0xFFFF])
                    elif gate == 2:
                        gg = np.int64(tanh_t[v & 0xFFFF]) if cell_tanh else np.int64(sig_t[v & 0xFFFF])
                    else:
                        go = np.int64(sig_t[v & 0xFFFF])
                cv = _cell_state(gi, gf, gg, c[b, u], fm, fs, im, is_, clip)
                c[b, u] = cv
                tc = np.int64(ctanh_t[cv & 0xFFFF])
                out[t, b, u] = _clamp(mbqm32(tc * go, om, os_) + hzp, hlo, hhi)
            for u in range(ns):
                h[b, u] = out[t, b, u]


@numba.njit(**_JIT)
def lstm_op(x, h0, c0, wv, k, tabs, out, h, c):  # pragma: no cover - compiled
    """A whole small LSTM operator: the input products of every step (exact int64 sums) and then
    :func:`lstm_steps`' recurrence, reading the input in either layout and writing the output, hidden
    and cell states in their own types.

    Args:
        x: (B, T, I) or (T, B, I) int8 / int16 input (any layout; ``k[4]`` says which).
        h0: (B, U) hidden state of ``x``'s type; c0: (B, U) int16 cell state (read only).
        wv: (I + U + 5, 4U) int64, columns in ``GATES`` order: the input weights (I rows), the recurrent
            weights (U rows), the bias, input multipliers, input shifts, recurrent multipliers, recurrent
            shifts (one operand rather than seven: each array argument costs its unboxing at every call).
        k: (14,) int64: input zero point, hidden zero point, 16x8 (1) or 8x8 (0), cell gate tanh (1) or
            sigmoid (0), time major (1), the forget-cell, input-cell and output-hidden (multiplier, shift)
            pairs, the hidden state's minimum and maximum, the quantised cell clip (0: none).
        tabs: (3, 65536) int16: the sigmoid, tanh and cell-state tanh tables of :func:`lstm_steps`.
        out: ``x``'s shape but U columns, ``x``'s type; h: (B, U) of ``x``'s type; c: (B, U) int16: written.
    """
    n4 = wv.shape[1]
    ns = n4 // 4
    ni = wv.shape[0] - ns - 5
    vb = ni + ns  # the row of the bias
    izp, hzp, wide, cell_tanh, tmaj = k[0], k[1], k[2] != 0, k[3] != 0, k[4] != 0
    fm, fs, im, is_, om, os_ = k[5], k[6], k[7], k[8], k[9], k[10]
    hlo, hhi, clip = k[11], k[12], k[13]
    nt = x.shape[0] if tmaj else x.shape[1]
    nb = x.shape[1] if tmaj else x.shape[0]
    hs = np.empty((nb, ns), np.int64)
    cs = np.empty((nb, ns), np.int64)
    for b in range(nb):
        for u in range(ns):
            hs[b, u] = h0[b, u]
            cs[b, u] = c0[b, u]
    acc = np.empty(n4, np.int64)
    ain = np.empty(n4, np.int64)
    hn = np.empty(ns, np.int64)
    for t in range(nt):
        for b in range(nb):
            for j in range(n4):
                acc[j] = 0
                ain[j] = wv[vb, j]
            for q in range(ni):
                xv = np.int64(x[t, b, q] if tmaj else x[b, t, q]) - izp
                for j in range(n4):
                    ain[j] += xv * wv[q, j]
            for q in range(ns):
                hv = hs[b, q] - hzp
                for j in range(n4):
                    acc[j] += hv * wv[ni + q, j]
            for u in range(ns):
                gi = np.int64(0)
                gf = np.int64(0)
                gg = np.int64(0)
                go = np.int64(0)
                for gate in range(4):
                    j = gate * ns + u
                    v = _gate_sum(acc[j], ain[j], wv[vb + 3, j], wv[vb + 4, j], wv[vb + 1, j], wv[vb + 2, j], wide)
                    if gate == 0:
                        gi = np.int64(tabs[0, v & 0xFFFF])
                    elif gate == 1:
                        gf = np.int64(tabs[0, v & 0xFFFF])
                    elif gate == 2:
                        gg = np.int64(tabs[1 if cell_tanh else 0, v & 0xFFFF])
                    else:
                        go = np.int64(tabs[0, v & 0xFFFF])
                cv = _cell_state(gi, gf, gg, cs[b, u], fm, fs, im, is_, clip)
                cs[b, u] = cv
                tc = np.int64(tabs[2, cv & 0xFFFF])
                hv = _clamp(mbqm32(tc * go, om, os_) + hzp, hlo, hhi)
                hn[u] = hv
                if tmaj:
                    out[t, b, u] = hv
                else:
                    out[b, t, u] = hv
            for u in range(ns):
                hs[b, u] = hn[u]
    for b in range(nb):
        for u in range(ns):
            h[b, u] = hs[b, u]
            c[b, u] = cs[b, u]


def op_entry(dtype: np.dtype) -> object:
    """The native entry of :func:`lstm_op` for ``dtype`` (int8 / int16) input and hidden state: the input
    and both states in any layout and alignment, read only; the constants, tables and results C-contiguous
    and writeable (the caller's own arrays). Calling it skips numba's type dispatch.

    Args:
        dtype: the input's type.

    Returns:
        the entry, or the dispatcher itself when this numba keeps no entry (another version's internals).
    """
    dt = numba.from_dtype(np.dtype(dtype))
    ro = {"readonly": True, "aligned": False}
    sig = (types.Array(dt, 3, "A", **ro), types.Array(dt, 2, "A", **ro), types.Array(types.int16, 2, "A", **ro),
           types.Array(types.int64, 2, "C"), types.Array(types.int64, 1, "C"), types.Array(types.int16, 2, "C"),
           types.Array(dt, 3, "C"), types.Array(dt, 2, "C"), types.Array(types.int16, 2, "C"))
    lstm_op.compile(sig)
    try:
        return lstm_op.overloads[sig].entry_point
    except (KeyError, AttributeError):
        return lstm_op


def warm_up() -> None:
    """Compile (or load from numba's cache) the argument types :mod:`pymli.tflm.lstm` passes: float32,
    float64 and int64 input products, int32 and int64 recurrent weights (8x8 and 16x8 alike), and the
    whole operator (:func:`op_entry`) for int8 and int16 inputs."""
    for dt in (np.int8, np.int16):
        op_entry(np.dtype(dt))
    tab = np.zeros(1 << 16, np.int16)
    k = np.array([1 << 30, 0, 1 << 30, 0, 1 << 30, 0, -128, 127, 0], np.int64)
    m, s = np.full(4, 1 << 30, np.int64), np.zeros(4, np.int64)
    for xdt in (np.float32, np.float64, np.int64):
        for wdt in (np.int32, np.int64):
            lstm_steps(np.zeros((1, 1, 4), xdt), s, m, s, np.zeros((1, 1), np.int64), np.zeros((1, 1), np.int64),
                       np.zeros((1, 4), wdt), np.zeros(4, wdt), m, s, False, 0, tab, tab, tab, True, k,
                       np.zeros((1, 1, 1), np.int64))
