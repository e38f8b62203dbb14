"""Recurrent kernels of MLI 2.0.2: RNN dense, LSTM cell and GRU cell, over NumPy arrays.

Data layouts (all arrays are dense int arrays of the quantised values):

* ``rnn_dense``: inputs ``x_i`` of any shape (flattened, N_i values), weights ``(N_i, M)``,
  bias ``(M,)``; out ``(M,)`` = bias + sum_i x_i @ W_i, each series rescaled separately.
* ``lstm_cell``: input sequence ``(T, N)``, previous output and cell ``(M,)``, weights
  ``(4, N, M)`` and ``(4, M, M)``, bias ``(4, M)``; gates in the order i, g, f, o.
* ``gru_cell``: same with 3 gates z, r, u (update, reset, candidate); the reset gate is applied to
  the hidden state before its product with the candidate's recurrent weights.

Quantisation is given per tensor as keyword arguments: an ``int`` (frac_bits) for the FX kinds,
an :class:`SaQ` for sa8. ``kind`` is ``"fx16"`` (int16 everything, 40-bit accumulator),
``"fx16_fx8_fx8"`` (int16 data, int8 weights and bias, 32-bit accumulator) or ``"sa8"``
(int8 data and weights, int32 bias, 32-bit accumulator).

The cells run the sequence step by step as the C reference does: a dense part into an
intermediate ("ir") format fixed by the kernel, LUT sigmoid / tanh on the gates, element-wise
products and sums whose output formats follow the tensors they are written to.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from ..arith.lut import activation_fx as lut_fx
from ..arith.lut import activation_sa8 as lut_sa8
from ..arith.lut import lut_data
from ..arith.requant import acc_container_bits, fx_bias, sa8_bias, sa8_out_params, wrap_acc
from ..arith.rnn import (
    K_SIGM_OUT,
    K_TANH_OUT,
    FusedGates,
    FxSeriesPlan,
    MacPlan,
    RoundShift,
    SaSeriesPlan,
    eltwise_sa8,
    fx_addsub_plan,
    fx_ir_requantize,
    fx_mul_plan,
    sa_ir_cast,
    sa_ir_requantize,
)
from ..arith.rounding import add_sat, sat, wrap
from ..config import get_platform
from ..tensor import Lut
from ._blas import blas_single_thread

__all__ = ["SaQ", "KINDS", "rnn_dense", "lstm_cell", "gru_cell"]

I64 = np.int64
KINDS = ("fx16", "fx16_fx8_fx8", "sa8")

# Intermediate formats the C cells use for the dense results feeding sigmoid / tanh.
_LSTM_IR_FX = 10          # frac bits, at most in + weights_in frac bits
_GRU_IR_FX = 16 - 1 - 4   # 1 sign and 4 integer bits
_FX_ONE = 15              # frac bits of the sigm / tanh outputs and of "one" (32767)


class SaQ(NamedTuple):
    """sa8 quantisation of one tensor.

    ``scale`` and ``scale_frac_bits`` hold one value (per tensor) or one per gate
    (``per_axis``, weights and bias of the cells quantised along dimension 0).
    """

    zero_point: int
    scale: tuple[int, ...]
    scale_frac_bits: tuple[int, ...]
    per_axis: bool = False

    @classmethod
    def of(cls, zero_point: int, scale: int, scale_frac_bits: int) -> "SaQ":
        """Per-tensor parameters.

        Args:
            zero_point, scale, scale_frac_bits: the SA parameters of the tensor.

        Returns:
            An SaQ with one scale and one shift.
        """
        return cls(int(zero_point), (int(scale),), (int(scale_frac_bits),))

    @property
    def triple(self) -> tuple[int, int, int]:
        """(zero_point, scale, scale_frac_bits) of a per-tensor quantisation."""
        return self.zero_point, self.scale[0], self.scale_frac_bits[0]

    def gates(self, idx: list[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Scales and shifts used for the given gates (the first value if per tensor)."""
        if self.per_axis:
            return tuple(self.scale[i] for i in idx), tuple(self.scale_frac_bits[i] for i in idx)
        return (self.scale[0],) * len(idx), (self.scale_frac_bits[0],) * len(idx)


_SIGM_Q = (K_SIGM_OUT[0], 1, K_SIGM_OUT[1])
_TANH_Q = (K_TANH_OUT[0], 1, K_TANH_OUT[1])


# ------------------------------------------------------------------------------ dense core
# The dense part of every kernel is a sum of MAC series, one per input (x, or the fed-back
# output), each rescaled on its own to the output format. The series of the input frames do not
# depend on the recurrence, so the cells compute them for all frames at once.

def _fx_series_sum(accs: list[np.ndarray], out_shifts: list[int], acc_bits: int) -> np.ndarray:
    """FX ``rnn_dense_op`` after the MACs: wrap, rescale each series, saturating sum, cast to int16.

    ``accs[i]`` are exact MAC sums (bias included in the first one), (G, M).
    """
    cb = acc_container_bits(acc_bits)
    res = np.zeros(accs[0].shape, I64)
    for acc, sh in zip(accs, out_shifts):
        ir = fx_ir_requantize(wrap_acc(acc, acc_bits), sh, acc_bits)
        res = add_sat(res, ir, cb)
    return sat(res, 16)


@functools.lru_cache(maxsize=512)
def _sa_requant_cached(in_q: tuple[int, int, int], out_q: tuple[int, int, int], w_scales: tuple[int, ...],
                       w_sfbs: tuple[int, ...], full_accu: bool) -> tuple[np.ndarray, np.ndarray]:
    mul, shift = sa8_out_params(in_q[1], in_q[2], out_q[1], out_q[2], w_scales, w_sfbs, full_accu=full_accu)
    mul, shift = mul[:, None], shift[:, None]
    mul.setflags(write=False)
    shift.setflags(write=False)
    return mul, shift


def _sa_requant(in_q: SaQ, out_q: SaQ, w_scales: tuple[tuple[int, ...], tuple[int, ...]]):
    """Per-gate output multipliers / shifts (G, 1) of one series (``define/adjust_quant_params``)."""
    return _sa_requant_cached(in_q.triple, out_q.triple, *w_scales, get_platform().full_accu)


def _sa_series_sum(accs: list[np.ndarray], others: list[int], requants: list, out_zp: int) -> np.ndarray:
    """sa8 ``rnn_dense_op`` after the MACs: wrap (32-bit MACs), add the zero-point additive with
    saturation, rescale each series (64-bit product), saturating sum, cast to int8."""
    res = np.zeros(accs[0].shape, I64)
    for acc, other, (mul, shift) in zip(accs, others, requants):
        acc = wrap(acc, 32)
        if other:
            acc = add_sat(acc, other, 32)
        res = add_sat(res, sa_ir_requantize(acc, mul, shift), 32)
    return sa_ir_cast(res, out_zp)


def _sa_series(x: np.ndarray, w: MacPlan, x_zp: int, w_zp: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact MAC sums of sa8 series for frames ``x`` (..., N): ``x @ w - x_zp * sum(w)``, plus the
    additive of non-zero weight zero points (``in_additive + zp_additive``, 32-bit wrapped)."""
    acc = w(x) - x_zp * w.colsum
    n = x.shape[-1]
    other = wrap(-w_zp * x.sum(axis=-1) + n * x_zp * w_zp, 32)
    return acc, other


def rnn_dense(xs: list[np.ndarray], ws: list[np.ndarray], bias: np.ndarray, *, kind: str,
              in_q: list, w_q: list, b_q: int | SaQ, out_q: int | SaQ) -> np.ndarray:
    """``mli_krn_rnn_dense_<kind>``: ``bias + sum_i x_i @ ws[i]`` in the output format.

    Args:
        xs: inputs, each flattened to N_i values (int16 or int8 values).
        ws: weights ``(N_i, M)``.
        bias: ``(M,)``.
        kind: one of :data:`KINDS`.
        in_q, w_q: quantisation of each input / weights tensor (frac_bits or :class:`SaQ`).
        b_q, out_q: quantisation of bias and output.

    Returns:
        int64 array ``(M,)`` of output values (within the output container).
    """
    xs = [np.asarray(x, I64).reshape(-1) for x in xs]
    ws3 = [np.asarray(w)[None] for w in ws]
    b2 = np.asarray(bias, I64)[None]
    if kind == "sa8":
        series = [_sa_series(x, MacPlan(w), q.zero_point, wq.zero_point) for x, w, q, wq in zip(xs, ws3, in_q, w_q)]
        accs = [a for a, _ in series]
        accs[0] = accs[0] + sa8_bias(b2)
        req = [_sa_requant(q, out_q, wq.gates([0])) for q, wq in zip(in_q, w_q)]
        return _sa_series_sum(accs, [int(o) for _, o in series], req, out_q.zero_point)[0]
    acc_bits = 40 if kind == "fx16" else 32
    cb = acc_container_bits(acc_bits)
    plans = [MacPlan(w) for w in ws3]
    accs = [p(x)[0] for p, x in zip(plans, xs)]
    accs[0] = accs[0] + fx_bias(b2[0], in_q[0] + w_q[0] - b_q, acc_bits)
    shifts = [q + wq - out_q for q, wq in zip(in_q, w_q)]
    if cb == 64:
        # |x . w| <= N * 2**15 * max|w|; the aligned bias is an int32 value.
        bounds = [p.n * (1 << 15) * p.wmax + (1 << 31) * (i == 0) for i, p in enumerate(plans)]
    else:
        accs = [wrap(a, 32) for a in accs]
        bounds = [1 << 31] * len(accs)
    steps = [RoundShift(min(sh, 39) if cb == 64 else sh, cb, bd) for sh, bd in zip(shifts, bounds)]
    irs = [rs(a) for rs, a in zip(steps, accs)]
    out_bounds = [rs.out_bound(bd) for rs, bd in zip(steps, bounds)]
    # The saturating sum of _fx_series_sum is a plain one when no partial sum can leave the
    # container: in 64 bits by the bounds; in 32 bits the first add is 0 + an int32 value and the
    # saturation of a second one is absorbed by the final 16-bit one.
    if (cb == 64 and sum(out_bounds) <= (1 << 63) - 1) or (cb == 32 and len(irs) <= 2):
        return _clip(sum(irs[1:], irs[0]), 16)
    res = np.zeros(irs[0].shape, I64)
    for ir in irs:
        res = add_sat(res, ir, cb)
    return sat(res, 16)


# ------------------------------------------------------------------------------ cells
def _order(t: int, backward: bool) -> range:
    return range(t - 1, -1, -1) if backward else range(t)


# ------------------------------------------------------------------------------ step plans
# Per step, the cells work on (G, M) arrays; what costs is the number of NumPy calls, not the
# arithmetic. Everything that does not depend on the recurrence is computed once per call (the
# input series of all frames, multipliers, shifts, bounds: see the plans of pymli.arith.rnn) and
# the element-wise stages with few input codes become table lookups. Each table is the reference
# helper evaluated on every possible input code, so a lookup returns exactly what the helper
# returns: sa8 operands are int8 (256 codes, 65536 pairs), the FX LUT inputs int16 (65536 codes).
# Tables are rotated so that the (possibly negative) code itself is the index. All are kept in a
# small cache for later calls; the 65536-entry ones (a few ms each) are built only for sequences
# of at least _TABLE_MIN_STEPS steps (or found in the cache).

_TABLE_MIN_STEPS = 16
_TABLES_MAX = 48
_TABLES: dict = {}
_SA8_CODES = np.arange(-128, 128, dtype=I64)
_SA8_PAIRS = (np.repeat(_SA8_CODES, 256), np.tile(_SA8_CODES, 256))
_FX16_CODES = np.arange(-(1 << 15), 1 << 15, dtype=I64)


def _cached(key: tuple, build):  # type: ignore[no-untyped-def]
    """The cached table for ``key`` (read-only), built now if missing."""
    table = _TABLES.get(key)
    if table is None:
        if len(_TABLES) >= _TABLES_MAX:
            _TABLES.clear()
        table = _TABLES[key] = build()
        table.setflags(write=False)
    return table


def _big_table(key: tuple, steps: int, build):  # type: ignore[no-untyped-def]
    """The cached table for ``key``, built now if worth it for ``steps`` steps; else None."""
    if key in _TABLES or steps >= _TABLE_MIN_STEPS:
        return _cached(key, build)
    return None


def _sa8_pair(op: str, qa: tuple[int, int, int], qb: tuple[int, int, int], qo: tuple[int, int, int], steps: int,
              a_times_256: bool = False, out_times_256: bool = False):  # type: ignore[no-untyped-def]
    """``eltwise_sa8(op, a, b, qa, qb, qo)`` for int8 operands, as a table when worth it.

    With ``a_times_256`` the function takes ``a * 256`` for ``a`` (the table index is then one
    add), with ``out_times_256`` it returns the result times 256 (to feed such an operand).
    """
    key = ("sa8", op, qa, qb, qo, get_platform())
    table = _big_table(key, steps, lambda: np.roll(eltwise_sa8(op, *_SA8_PAIRS, qa, qb, qo), -32896))
    if table is None:
        def run(a, b):  # type: ignore[no-untyped-def]
            r = eltwise_sa8(op, a >> 8 if a_times_256 else a, b, qa, qb, qo)
            return r << 8 if out_times_256 else r
        return run
    if out_times_256:
        table = _cached(key + ("* 256",), lambda: table << 8)
    # a * 256 + b is a distinct index in [-32896, 32639] for every pair; the table is rotated so
    # that NumPy's negative indexing (k -> k + 65536) lands on the pair's entry.
    if a_times_256:
        return lambda a256, b: table[a256 + b]
    return lambda a, b: table[(a << 8) + b]


def _lut_key(lut: Lut) -> tuple:
    return (lut_data(lut).tobytes(), int(lut.in_frac_bits), int(lut.out_frac_bits), int(lut.input_offset),
            int(lut.output_offset), int(lut.length))


def _fx_lut_key(lut: Lut, in_fb: int, offset: bool = False, then=None) -> tuple:  # type: ignore[no-untyped-def]
    return ("fx", _lut_key(lut), int(in_fb), get_platform(), offset, then and then[0])


def _table_abs_max(key: tuple) -> int | None:
    """The largest magnitude in the cached table ``key`` (cached too), or None without that table."""
    table = _TABLES.get(key)
    if table is None:
        return None
    return int(_cached(key + ("|max|",), lambda: np.asarray(np.abs(table).max())))


def _fx_lut(lut: Lut, in_fb: int, steps: int, offset: bool = False, then=None):  # type: ignore[no-untyped-def]
    """``lut_fx(v, lut, in_fb)`` for int16-range ``v``, as a table when worth it; of ``v + 32768``
    (the index from the lowest code, see :func:`_gates`) with ``offset``; ``then`` = (name,
    function) applies the function to the LUT's output (in the table)."""
    def f(v):  # type: ignore[no-untyped-def]
        r = lut_fx(v, lut, in_fb)
        return r if then is None else then[1](r)
    table = _big_table(_fx_lut_key(lut, in_fb, offset, then), steps,
                       lambda: np.roll(f(_FX16_CODES), 0 if offset else 1 << 15))
    if table is None:
        return (lambda v: f(v - (1 << 15))) if offset else f
    return table.__getitem__  # offset: from the lowest code; else rotated: negative values index from the end


def _sa8_lut(lut: Lut, q: tuple[int, int, int], k_out: tuple[int, int], offset: bool = False) -> np.ndarray:
    """``lut_sa8`` of every int8 code, rotated so that the value itself indexes it (negative from the
    end); with ``offset``, in code order (indexed by the value + 128, see :func:`_gates`)."""
    return _cached(("sa8 lut", _lut_key(lut), q, k_out, get_platform(), offset),
                   lambda: np.roll(lut_sa8(_SA8_CODES, lut, *q, *k_out), 0 if offset else 128))


def _clip(v: np.ndarray, bits: int) -> np.ndarray:
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return np.minimum(np.maximum(v, lo), hi)


class _PerQ(dict):
    """Lazily built per-quantisation objects (the fed-back state changes format after step 0)."""

    def __init__(self, make) -> None:  # type: ignore[no-untyped-def]
        super().__init__()
        self.make = make

    def __missing__(self, q):  # type: ignore[no-untyped-def]
        v = self[q] = self.make(q)
        return v


class _FxCellSetup:
    """The fx LSTM / GRU set-up shared by both cells: the input part of all frames and the gates.

    Args:
        kind: ``"fx16"`` or ``"fx16_fx8_fx8"`` (accumulator width).
        ir_max: the cell's largest intermediate frac bits.
        x: the input sequence; w_in: the input-weights plan; bias: the bias values.
        qs: (input, input-weights, bias) frac bits.
        sigm_lut, tanh_lut: the LUTs; steps: the sequence length.

    Attributes: ``xr`` the requantised input part (T, G, M), ``sig`` / ``tnh`` the LUT functions
    of the offset codes of :func:`_gates`, ``sig_max`` / ``tnh_max`` bounds on their outputs (None
    without a table).
    """

    def __init__(self, kind: str, ir_max: int, x: np.ndarray, w_in: MacPlan, bias: np.ndarray,
                 qs: tuple[int, int, int], sigm_lut: Lut, tanh_lut: Lut, steps: int) -> None:
        in_q, w_in_q, b_q = qs
        self.acc_bits = acc_bits = 40 if kind == "fx16" else 32
        self.ir_fb = ir_fb = min(ir_max, in_q + w_in_q)
        self.cb = cb = acc_container_bits(acc_bits)
        xw = wrap_acc(w_in(x) + fx_bias(bias, in_q + w_in_q - b_q, acc_bits), acc_bits)
        # fx_ir_requantize, with the shift planned for the largest magnitude there is
        sh = in_q + w_in_q - ir_fb
        self.xr = RoundShift(min(sh, 39) if cb == 64 else sh, cb, int(np.abs(xw).max(initial=0)))(xw)
        self.x_bound = int(np.abs(self.xr).max(initial=0))
        self.sig, self.tnh = _fx_lut(sigm_lut, ir_fb, steps, True), _fx_lut(tanh_lut, ir_fb, steps, True)
        self.sig_max = _table_abs_max(_fx_lut_key(sigm_lut, ir_fb, True))
        self.tnh_max = _table_abs_max(_fx_lut_key(tanh_lut, ir_fb, True))

    def recurrent(self, w: MacPlan, w_q: int, gates: list[int] | slice) -> _PerQ:
        """Per state format ``q``: the LUT inputs ``(state, t) -> _fx_ir_sum(xr[t, gates], state . w)``
        (see :func:`_gates`), the product shifted to the intermediate format (Qq * Qw_q)."""
        xr = self.xr[:, gates]
        return _PerQ(lambda q: _gates(FxSeriesPlan(w, q + w_q - self.ir_fb, self.acc_bits), xr, self.x_bound,
                                      self.cb))


def _fx_ir_sum(xr_t: np.ndarray, hr: np.ndarray, x_bound: int, h_bound: int, cb: int) -> np.ndarray:
    """``_fx_series_sum`` of an input and a recurrent series already rescaled: saturating sum, int16.

    In a 32-bit container both terms are int32 values, so the int64 sum is exact and the 32-bit
    saturation is absorbed by the 16-bit one; in a 64-bit one the same holds when the bounds
    exclude an int64 overflow.
    """
    if cb == 32 or x_bound + h_bound <= (1 << 63) - 1:
        return _clip(xr_t + hr, 16)
    return sat(add_sat(xr_t, hr, cb), 16)


def _gates(plan, xr: np.ndarray, x_bound: int, cb: int | None):  # type: ignore[no-untyped-def]
    """Per step ``(x, t)``: the gates' LUT inputs ``clip(xr[t] + plan(x))`` (int8 for sa8, ``cb``
    None; else the int16 ``_fx_ir_sum`` in a ``cb``-bit container) plus 128 / 32768, the index of
    the code in a table from the lowest one; fused when exact (:class:`FusedGates`)."""
    bits = 8 if cb is None else 16
    offset = 1 << (bits - 1)
    fused = FusedGates.of(plan, xr, x_bound, bits, offset)
    if fused is not None:
        return fused
    if cb is None:
        return lambda x, t: _clip(xr[t] + plan(x), 8) + offset
    return lambda x, t: _fx_ir_sum(xr[t], plan(x), x_bound, plan.bound, cb) + offset


# ------------------------------------------------------------------------------ cells
def _one_blas_thread(fn):  # type: ignore[no-untyped-def]
    """Run a cell's (many, small) BLAS products on one thread: see :mod:`pymli.kernels._blas`."""
    @functools.wraps(fn)
    def call(x, prev_out, *args, **kw):  # type: ignore[no-untyped-def]
        with blas_single_thread(int(np.size(x)) * int(np.size(prev_out)) + int(np.size(prev_out)) ** 2):
            return fn(x, prev_out, *args, **kw)
    return call


@_one_blas_thread
def lstm_cell(x: np.ndarray, prev_out: np.ndarray, cell: np.ndarray, w_in: np.ndarray, w_out: np.ndarray,
              bias: np.ndarray, tanh_lut: Lut, sigm_lut: Lut, *, kind: str,
              in_q: int | SaQ, prev_q: int | SaQ, w_in_q: int | SaQ, w_out_q: int | SaQ, b_q: int | SaQ,
              cell_q: int | SaQ, out_q: int | SaQ, backward: bool = False, all_results: bool = False,
              act: str = "tanh") -> tuple[np.ndarray, np.ndarray]:
    """``mli_krn_lstm_cell_<kind>`` over a sequence.

    Args:
        x: input frames ``(T, N)``.
        prev_out: previous output ``(M,)`` (quantised with ``prev_q``).
        cell: previous cell state ``(M,)`` (``cell_q``; the new state keeps that format).
        w_in, w_out: weights ``(4, N, M)`` and ``(4, M, M)``, gates i, g, f, o.
        bias: ``(4, M)``.
        tanh_lut, sigm_lut: the activation tables.
        kind: one of :data:`KINDS`.
        backward: process the frames last to first.
        all_results: return every step's output (else only the last one).
        act: output activation "tanh", "sigm" or "none".

    Returns:
        (outputs ``(T or 1, M)`` in ``out_q``, new cell state ``(M,)``), int64 arrays.
    """
    x = np.asarray(x, I64)
    h = np.asarray(prev_out, I64)
    c = np.asarray(cell, I64)
    w_in = MacPlan(w_in)
    bias = np.asarray(bias, I64)
    steps = x.shape[0]
    outs = []
    if kind == "sa8":
        w_out = MacPlan(w_out)
        ir_q = SaQ.of(0, 1, 4)
        cq, oq = cell_q.triple, out_q.triple
        all4 = [0, 1, 2, 3]
        # Input series of all frames, bias included, rescaled to the gates' format: (T, 4, M).
        xw, x_other = _sa_series(x, w_in, in_q.zero_point, w_in_q.zero_point)
        xw = xw + sa8_bias(bias)
        xr = sa_ir_requantize(add_sat(wrap(xw, 32), x_other[:, None, None], 32),
                              *_sa_requant(in_q, ir_q, w_in_q.gates(all4)))
        w_out_sc = w_out_q.gates(all4)
        x_bound = int(np.abs(xr).max(initial=0))
        rec = _PerQ(lambda q: _gates(SaSeriesPlan(w_out, q.zero_point, w_out_q.zero_point,
                                                  *_sa_requant(q, ir_q, w_out_sc)), xr, x_bound, None))
        sig = _sa8_lut(sigm_lut, (0, 1, 4), K_SIGM_OUT, True)
        tnh = _sa8_lut(tanh_lut, (0, 1, 4), K_TANH_OUT, True)
        mul_cf = _sa8_pair("mul", cq, _SIGM_Q, cq, steps)
        mul_gi = _sa8_pair("mul", _TANH_Q, _SIGM_Q, _TANH_Q, steps)
        add_c = _sa8_pair("add", cq, _TANH_Q, cq, steps)
        if act == "none":
            act_tab = None
            mul_out = _sa8_pair("mul", cq, _SIGM_Q, oq, steps)
        else:
            k_out = K_TANH_OUT if act == "tanh" else K_SIGM_OUT
            act_tab = _sa8_lut(tanh_lut if act == "tanh" else sigm_lut, cq, k_out)
            mul_out = _sa8_pair("mul", (k_out[0], 1, k_out[1]), _SIGM_Q, oq, steps)
        h_q = prev_q
        for t in _order(steps, backward):
            # sa_ir_cast with zero point 0 of a saturating int32 sum: a clamp to int8.
            ir = rec[h_q](h, t)
            i, g, f, o = sig[ir[0]], tnh[ir[1]], sig[ir[2]], sig[ir[3]]
            c = mul_cf(c, f)
            c = add_c(c, mul_gi(g, i))
            h = mul_out(c if act_tab is None else act_tab[c], o)
            h_q = out_q
            outs.append(h)
    else:
        fx = _FxCellSetup(kind, _LSTM_IR_FX, x, w_in, bias, (in_q, w_in_q, b_q), sigm_lut, tanh_lut, steps)
        sig, tnh, one, sig_max = fx.sig, fx.tnh, _FX_ONE, fx.sig_max
        # The three sigmoid gates i, f, o first (one lookup per step), then g: the gates are
        # independent series with the same formats, so their order is free.
        sig_first = [0, 2, 3, 1]
        rec = fx.recurrent(MacPlan(np.asarray(w_out)[sig_first]), w_out_q, sig_first)
        # The products take the gate (a LUT output, bounded by its table) as first operand.
        mul_fc = fx_mul_plan(one, cell_q, cell_q, a_max=sig_max)
        mul_gi = fx_mul_plan(one, one, one, a_max=fx.tnh_max)
        add_c = fx_addsub_plan("add", cell_q, one, cell_q)
        if act == "none":
            act_fn = None
            mul_out = fx_mul_plan(one, cell_q, out_q, a_max=sig_max)
        else:
            act_fn = _fx_lut(tanh_lut if act == "tanh" else sigm_lut, cell_q, steps)
            mul_out = fx_mul_plan(one, one, out_q, a_max=sig_max)
        h_q = prev_q
        for t in _order(steps, backward):
            ir = rec[h_q](h, t)
            i, f, o = sig(ir[:3])
            g = tnh(ir[3])
            c = mul_fc(f, c)
            c = add_c(c, mul_gi(g, i))
            h = mul_out(o, c if act_fn is None else act_fn(c))
            h_q = out_q
            outs.append(h)
    res = np.stack(outs) if all_results else outs[-1][None]
    return res, c


@_one_blas_thread
def gru_cell(x: np.ndarray, prev_out: np.ndarray, w_in: np.ndarray, w_out: np.ndarray, bias: np.ndarray,
             tanh_lut: Lut, sigm_lut: Lut, *, kind: str, in_q: int | SaQ, prev_q: int | SaQ,
             w_in_q: int | SaQ, w_out_q: int | SaQ, b_q: int | SaQ, out_q: int | SaQ,
             backward: bool = False, all_results: bool = False) -> np.ndarray:
    """``mli_krn_gru_cell_<kind>`` over a sequence.

    Args:
        x: input frames ``(T, N)``.
        prev_out: previous hidden state ``(M,)`` (quantised with ``prev_q``).
        w_in, w_out: weights ``(3, N, M)`` and ``(3, M, M)``, gates z, r, u.
        bias: ``(3, M)``.
        kind: one of :data:`KINDS`.
        backward, all_results: direction and results kept, as for :func:`lstm_cell`.

    Returns:
        outputs ``(T or 1, M)`` in ``out_q`` (int64).
    """
    x = np.asarray(x, I64)
    h = np.asarray(prev_out, I64)
    w_in = MacPlan(w_in)
    w_out = np.asarray(w_out)  # MacPlan converts the narrow container type once
    bias = np.asarray(bias, I64)
    w_zr, w_u = MacPlan(w_out[:2]), MacPlan(w_out[2:3])
    steps = x.shape[0]
    outs = []
    h_q = prev_q
    if kind == "sa8":
        ir_q = SaQ.of(0, 21, 9)
        irt = ir_q.triple
        oq = out_q.triple
        one_q = (-128, 1, 8)
        # Input series of all three gates for all frames, bias included, rescaled: (T, 3, M).
        xw, x_other = _sa_series(x, w_in, in_q.zero_point, w_in_q.zero_point)
        acc = add_sat(wrap(xw + sa8_bias(bias), 32), x_other[:, None, None], 32)
        xr_zr = sa_ir_requantize(acc[:, :2], *_sa_requant(in_q, ir_q, w_in_q.gates([0, 1])))
        xr_u = sa_ir_requantize(acc[:, 2:3], *_sa_requant(in_q, ir_q, _gru_candidate_scales(w_in_q)))[:, 0]
        w_out_zr, w_out_u = w_out_q.gates([0, 1]), _gru_candidate_scales(w_out_q)
        w_zp = w_out_q.zero_point
        xr_u = xr_u[:, None]
        zr_bound, u_bound = int(np.abs(xr_zr).max(initial=0)), int(np.abs(xr_u).max(initial=0))
        rec_zr = _PerQ(lambda q: _gates(SaSeriesPlan(w_zr, q.zero_point, w_zp, *_sa_requant(q, ir_q, w_out_zr)),
                                        xr_zr, zr_bound, None))
        rec_u = _PerQ(lambda q: _gates(SaSeriesPlan(w_u, q.zero_point, w_zp, *_sa_requant(q, ir_q, w_out_u)),
                                       xr_u, u_bound, None))
        sig = _sa8_lut(sigm_lut, irt, K_SIGM_OUT, True)
        # 1 - z for every code of the gate input (z = sig[code])
        one_minus = np.roll(eltwise_sa8("sub", np.full_like(_SA8_CODES, 127), _SA8_CODES, one_q, _SIGM_Q, _SIGM_Q),
                            128)[sig]
        # The first operand of each pair product / sum is passed times 256 (its tables' index is
        # then one add): the gates' tables and the product feeding the sum give it so.
        sig_256, tnh_256 = sig << 8, _sa8_lut(tanh_lut, irt, K_TANH_OUT, True) << 8
        mul_uz = _sa8_pair("mul", _TANH_Q, _SIGM_Q, oq, steps, True, True)
        # r * h and h * z: the sa8 product is symmetric in its operands (with their parameters),
        # so both gates multiply h through one table, as a (2, M) array.
        mul_gh = _PerQ(lambda hq: _sa8_pair("mul", _SIGM_Q, hq, hq, steps, True))
        add_h = _PerQ(lambda hq: _sa8_pair("add", oq, hq, oq, steps, True))
        for t in _order(steps, backward):
            hq = h_q.triple
            zr_in = rec_zr[h_q](h, t)
            hz, hr = mul_gh[hq](sig_256[zr_in], h)
            u_256 = tnh_256[rec_u[h_q](hr, t)[0]]
            h = add_h[hq](mul_uz(u_256, one_minus[zr_in[0]]), hz)
            h_q = out_q
            outs.append(h)
    else:
        fx = _FxCellSetup(kind, _GRU_IR_FX, x, w_in, bias, (in_q, w_in_q, b_q), sigm_lut, tanh_lut, steps)
        sig, tnh, one = fx.sig, fx.tnh, _FX_ONE
        rec_zr, rec_u = fx.recurrent(w_zr, w_out_q, slice(0, 2)), fx.recurrent(w_u, w_out_q, slice(2, 3))
        # r * h and h * z: the same product plan (Q15 gate times Qhq state into Qhq), as (2, M).
        mul_gh = _PerQ(lambda hq: fx_mul_plan(one, hq, hq, a_max=fx.sig_max))
        mul_uz = fx_mul_plan(one, one, out_q, a_max=fx.tnh_max)
        one_minus = fx_addsub_plan("sub", one, one, one)
        # 1 - z of the gate input (z = sig(code)), in one table with the sigmoid
        sig_1m = _fx_lut(sigm_lut, fx.ir_fb, steps, True, ("1 - Q15", lambda z: one_minus(32767, z)))
        add_h = _PerQ(lambda hq: fx_addsub_plan("add", out_q, hq, out_q))
        for t in _order(steps, backward):
            zr_in = rec_zr[h_q](h, t)
            hz, hr = mul_gh[h_q](sig(zr_in), h)
            z1 = sig_1m(zr_in[0])
            u = tnh(rec_u[h_q](hr, t)[0])
            h = add_h[h_q](mul_uz(u, z1), hz)
            h_q = out_q
            outs.append(h)
    return np.stack(outs) if all_results else outs[-1][None]


def _gru_candidate_scales(q: SaQ) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Scale and shift the C GRU uses for the candidate gate's weights.

    Per axis: the third gate's values. Per tensor, the C code advances the scale and
    scale_frac_bits "pointers" by two gates although they hold the values themselves, so the
    candidate gate is computed with scale + 4 (two int16 steps) and scale_frac_bits + 2, each
    wrapped to its C type. The recorded library does exactly this.
    """
    if q.per_axis:
        return q.gates([2])
    return (int(wrap(q.scale[0] + 4, 16)),), (int(wrap(q.scale_frac_bits[0] + 2, 8)),)
