"""The recurrent cells as first written: one call of the general helpers per operation and step.

Kept as the reference the planned kernels of :mod:`pymli.kernels.recurrent` are compared with
(tests/kernels/test_recurrent_planned.py); not part of the package.
"""

from __future__ import annotations

import numpy as np

from pymli.arith.lut import activation_fx as lut_fx
from pymli.arith.lut import activation_sa8 as lut_sa8
from pymli.arith.requant import fx_bias, sa8_bias
from pymli.arith.rnn import K_SIGM_OUT, K_TANH_OUT, MacPlan, eltwise_fx, eltwise_sa8
from pymli.kernels.recurrent import (
    _FX_ONE,
    _GRU_IR_FX,
    _LSTM_IR_FX,
    _SIGM_Q,
    _TANH_Q,
    SaQ,
    _fx_series_sum,
    _gru_candidate_scales,
    _order,
    _sa_requant,
    _sa_series,
    _sa_series_sum,
)
from pymli.tensor import Lut

I64 = np.int64


def lstm_cell_reference(x: np.ndarray, prev_out: np.ndarray, cell: np.ndarray, w_in: np.ndarray, w_out: np.ndarray,
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
    w_out = MacPlan(w_out)
    bias = np.asarray(bias, I64)
    outs = []
    if kind == "sa8":
        ir_q = SaQ.of(0, 1, 4)
        h_q = prev_q
        cq, oq = cell_q.triple, out_q.triple
        all4 = [0, 1, 2, 3]
        xw, x_other = _sa_series(x, w_in, in_q.zero_point, w_in_q.zero_point)
        xw = xw + sa8_bias(bias)
        req_x = _sa_requant(in_q, ir_q, w_in_q.gates(all4))
        w_out_sc = w_out_q.gates(all4)
        for t in _order(x.shape[0], backward):
            hw, h_other = _sa_series(h, w_out, h_q.zero_point, w_out_q.zero_point)
            ir = _sa_series_sum([xw[t], hw], [int(x_other[t]), int(h_other)],
                                [req_x, _sa_requant(h_q, ir_q, w_out_sc)], 0)
            i, g, f, o = (lut_sa8(ir[k], lut, 0, 1, 4, *k_out) for k, lut, k_out in
                          ((0, sigm_lut, K_SIGM_OUT), (1, tanh_lut, K_TANH_OUT),
                           (2, sigm_lut, K_SIGM_OUT), (3, sigm_lut, K_SIGM_OUT)))
            c = eltwise_sa8("mul", c, f, cq, _SIGM_Q, cq)
            g = eltwise_sa8("mul", g, i, _TANH_Q, _SIGM_Q, _TANH_Q)
            c = eltwise_sa8("add", c, g, cq, _TANH_Q, cq)
            if act == "none":
                h = eltwise_sa8("mul", c, o, cq, _SIGM_Q, oq)
            else:
                k_out = K_TANH_OUT if act == "tanh" else K_SIGM_OUT
                a = lut_sa8(c, tanh_lut if act == "tanh" else sigm_lut, *cq, *k_out)
                h = eltwise_sa8("mul", a, o, (k_out[0], 1, k_out[1]), _SIGM_Q, oq)
            h_q = out_q
            outs.append(h)
    else:
        acc_bits = 40 if kind == "fx16" else 32
        ir_fb = min(_LSTM_IR_FX, in_q + w_in_q)
        h_q = prev_q
        one = _FX_ONE
        xw = w_in(x) + fx_bias(bias, in_q + w_in_q - b_q, acc_bits)
        for t in _order(x.shape[0], backward):
            ir = _fx_series_sum([xw[t], w_out(h)], [in_q + w_in_q - ir_fb, h_q + w_out_q - ir_fb], acc_bits)
            i = lut_fx(ir[0], sigm_lut, ir_fb)
            g = lut_fx(ir[1], tanh_lut, ir_fb)
            f = lut_fx(ir[2], sigm_lut, ir_fb)
            o = lut_fx(ir[3], sigm_lut, ir_fb)
            c = eltwise_fx("mul", c, f, cell_q, one, cell_q)
            g = eltwise_fx("mul", g, i, one, one, one)
            c = eltwise_fx("add", c, g, cell_q, one, cell_q)
            if act == "none":
                h = eltwise_fx("mul", c, o, cell_q, one, out_q)
            else:
                a = lut_fx(c, tanh_lut if act == "tanh" else sigm_lut, cell_q)
                h = eltwise_fx("mul", a, o, one, one, out_q)
            h_q = out_q
            outs.append(h)
    res = np.stack(outs) if all_results else outs[-1][None]
    return res, c


def gru_cell_reference(x: np.ndarray, prev_out: np.ndarray, w_in: np.ndarray, w_out: np.ndarray, bias: np.ndarray,
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
    w_out = np.asarray(w_out, I64)
    bias = np.asarray(bias, I64)
    w_zr, w_u = MacPlan(w_out[:2]), MacPlan(w_out[2:3])
    outs = []
    h_q = prev_q
    if kind == "sa8":
        ir_q = SaQ.of(0, 21, 9)
        irt = ir_q.triple
        oq = out_q.triple
        one_q = (-128, 1, 8)
        # Input series of all three gates for all frames, bias included.
        xw, x_other = _sa_series(x, w_in, in_q.zero_point, w_in_q.zero_point)
        xw = xw + sa8_bias(bias)
        req_x_zr = _sa_requant(in_q, ir_q, w_in_q.gates([0, 1]))
        req_x_u = _sa_requant(in_q, ir_q, _gru_candidate_scales(w_in_q))
        w_out_zr, w_out_u = w_out_q.gates([0, 1]), _gru_candidate_scales(w_out_q)
        for t in _order(x.shape[0], backward):
            hq = h_q.triple
            hw, h_other = _sa_series(h, w_zr, h_q.zero_point, w_out_q.zero_point)
            zr = _sa_series_sum([xw[t, :2], hw], [int(x_other[t]), int(h_other)],
                                [req_x_zr, _sa_requant(h_q, ir_q, w_out_zr)], 0)
            z = lut_sa8(zr[0], sigm_lut, *irt, *K_SIGM_OUT)
            r = lut_sa8(zr[1], sigm_lut, *irt, *K_SIGM_OUT)
            hr = eltwise_sa8("mul", r, h, _SIGM_Q, hq, hq)
            hz = eltwise_sa8("mul", h, z, hq, _SIGM_Q, hq)
            z1 = eltwise_sa8("sub", np.full_like(z, 127), z, one_q, _SIGM_Q, _SIGM_Q)
            hrw, hr_other = _sa_series(hr, w_u, h_q.zero_point, w_out_q.zero_point)
            u = _sa_series_sum([xw[t, 2:3], hrw], [int(x_other[t]), int(hr_other)],
                               [req_x_u, _sa_requant(h_q, ir_q, w_out_u)], 0)[0]
            u = lut_sa8(u, tanh_lut, *irt, *K_TANH_OUT)
            tmp = eltwise_sa8("mul", u, z1, _TANH_Q, _SIGM_Q, oq)
            h = eltwise_sa8("add", tmp, hz, oq, hq, oq)
            h_q = out_q
            outs.append(h)
    else:
        acc_bits = 40 if kind == "fx16" else 32
        ir_fb = min(_GRU_IR_FX, in_q + w_in_q)
        one = _FX_ONE
        xw = w_in(x) + fx_bias(bias, in_q + w_in_q - b_q, acc_bits)
        x_shift = in_q + w_in_q - ir_fb
        for t in _order(x.shape[0], backward):
            h_shift = h_q + w_out_q - ir_fb
            zr = _fx_series_sum([xw[t, :2], w_zr(h)], [x_shift, h_shift], acc_bits)
            z = lut_fx(zr[0], sigm_lut, ir_fb)
            r = lut_fx(zr[1], sigm_lut, ir_fb)
            hr = eltwise_fx("mul", r, h, one, h_q, h_q)
            hz = eltwise_fx("mul", h, z, h_q, one, h_q)
            z1 = eltwise_fx("sub", np.full_like(z, 32767), z, one, one, one)
            u = _fx_series_sum([xw[t, 2:3], w_u(hr)], [x_shift, h_shift], acc_bits)[0]
            u = lut_fx(u, tanh_lut, ir_fb)
            tmp = eltwise_fx("mul", u, z1, one, one, out_q)
            h = eltwise_fx("add", tmp, hz, out_q, h_q, out_q)
            h_q = out_q
            outs.append(h)
    return np.stack(outs) if all_results else outs[-1][None]
