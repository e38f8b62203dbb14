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


def _lstm_state(elt, c, gates, cq, sig_q, tanh_q, out_act, oq):  # type: ignore[no-untyped-def]
    """One LSTM step after its gates, in either arithmetic: ``elt`` is ``eltwise_sa8`` or
    ``eltwise_fx`` (same argument order), ``cq`` / ``sig_q`` / ``tanh_q`` / ``oq`` the formats of the
    cell, the sigmoid and tanh outputs and the cell output; ``out_act(c)`` the output activation and
    its format (None: no activation). Returns the new cell state and output."""
    i, g, f, o = gates
    c = elt("mul", c, f, cq, sig_q, cq)
    g = elt("mul", g, i, tanh_q, sig_q, tanh_q)
    c = elt("add", c, g, cq, tanh_q, cq)
    a, a_q = (c, cq) if out_act is None else out_act(c)
    return c, elt("mul", a, o, a_q, sig_q, oq)


def _gru_gated(elt, h, z, r, hq, sig_q, one, one_q):  # type: ignore[no-untyped-def]
    """The GRU's ``r * h``, ``h * z`` and ``1 - z`` in either arithmetic (see :func:`_lstm_state`);
    ``one`` is 1 in the sigmoid's format, ``one_q`` its format as an operand of the subtraction."""
    hr = elt("mul", r, h, sig_q, hq, hq)
    hz = elt("mul", h, z, hq, sig_q, hq)
    z1 = elt("sub", np.full_like(z, one), z, one_q, sig_q, sig_q)
    return hr, hz, z1


def _sa_inputs(x, w_in, bias, in_q, w_in_q):  # type: ignore[no-untyped-def]
    """sa8: the input series of every gate for all frames, bias included, and its zero-point terms."""
    xw, x_other = _sa_series(x, w_in, in_q.zero_point, w_in_q.zero_point)
    return xw + sa8_bias(bias), x_other


def _fx_inputs(x, w_in, bias, kind, in_q, w_in_q, b_q, ir_fx):  # type: ignore[no-untyped-def]
    """fx: the accumulator width, the gates' fractional bits (at most ``ir_fx``) and the input series
    of every gate for all frames, bias included."""
    acc_bits = 40 if kind == "fx16" else 32
    ir_fb = min(ir_fx, in_q + w_in_q)
    return acc_bits, ir_fb, w_in(x) + fx_bias(bias, in_q + w_in_q - b_q, acc_bits)


def lstm_cell_reference(x: np.ndarray, prev_out: np.ndarray, cell: np.ndarray, w_in: np.ndarray,
                        w_out: np.ndarray, bias: np.ndarray, tanh_lut: Lut, sigm_lut: Lut, *, kind: str,
                        in_q: int | SaQ, prev_q: int | SaQ, w_in_q: int | SaQ, w_out_q: int | SaQ,
                        b_q: int | SaQ, cell_q: int | SaQ, out_q: int | SaQ, backward: bool = False,
                        all_results: bool = False, act: str = "tanh") -> tuple[np.ndarray, np.ndarray]:
    """:func:`pymli.kernels.recurrent.lstm_cell` as first written (same arguments and results)."""
    x, h, c, bias = (np.asarray(v, I64) for v in (x, prev_out, cell, bias))
    w_in, w_out = MacPlan(w_in), MacPlan(w_out)
    outs, h_q = [], prev_q
    if kind == "sa8":
        ir_q = SaQ.of(0, 1, 4)
        cq, oq = cell_q.triple, out_q.triple
        all4 = [0, 1, 2, 3]
        k_out = K_TANH_OUT if act == "tanh" else K_SIGM_OUT
        out_lut = tanh_lut if act == "tanh" else sigm_lut
        out_act = None if act == "none" else (
            lambda c: (lut_sa8(c, out_lut, *cq, *k_out), (k_out[0], 1, k_out[1])))
        xw, x_other = _sa_inputs(x, w_in, bias, in_q, w_in_q)
        req_x = _sa_requant(in_q, ir_q, w_in_q.gates(all4))
        w_out_sc = w_out_q.gates(all4)
        for t in _order(x.shape[0], backward):
            hw, h_other = _sa_series(h, w_out, h_q.zero_point, w_out_q.zero_point)
            ir = _sa_series_sum([xw[t], hw], [int(x_other[t]), int(h_other)],
                                [req_x, _sa_requant(h_q, ir_q, w_out_sc)], 0)
            i, g, f, o = (lut_sa8(ir[k], lut, 0, 1, 4, *k_out) for k, lut, k_out in
                          ((0, sigm_lut, K_SIGM_OUT), (1, tanh_lut, K_TANH_OUT),
                           (2, sigm_lut, K_SIGM_OUT), (3, sigm_lut, K_SIGM_OUT)))
            c, h = _lstm_state(eltwise_sa8, c, (i, g, f, o), cq, _SIGM_Q, _TANH_Q, out_act, oq)
            h_q = out_q
            outs.append(h)
    else:
        acc_bits, ir_fb, xw = _fx_inputs(x, w_in, bias, kind, in_q, w_in_q, b_q, _LSTM_IR_FX)
        one = _FX_ONE
        out_act = None if act == "none" else (
            lambda c: (lut_fx(c, tanh_lut if act == "tanh" else sigm_lut, cell_q), one))
        for t in _order(x.shape[0], backward):
            ir = _fx_series_sum([xw[t], w_out(h)], [in_q + w_in_q - ir_fb, h_q + w_out_q - ir_fb], acc_bits)
            i = lut_fx(ir[0], sigm_lut, ir_fb)
            g = lut_fx(ir[1], tanh_lut, ir_fb)
            f = lut_fx(ir[2], sigm_lut, ir_fb)
            o = lut_fx(ir[3], sigm_lut, ir_fb)
            c, h = _lstm_state(eltwise_fx, c, (i, g, f, o), cell_q, one, one, out_act, out_q)
            h_q = out_q
            outs.append(h)
    res = np.stack(outs) if all_results else outs[-1][None]
    return res, c


def gru_cell_reference(x: np.ndarray, prev_out: np.ndarray, w_in: np.ndarray, w_out: np.ndarray,
                       bias: np.ndarray, tanh_lut: Lut, sigm_lut: Lut, *, kind: str, in_q: int | SaQ,
                       prev_q: int | SaQ, w_in_q: int | SaQ, w_out_q: int | SaQ, b_q: int | SaQ,
                       out_q: int | SaQ, backward: bool = False, all_results: bool = False) -> np.ndarray:
    """:func:`pymli.kernels.recurrent.gru_cell` as first written (same arguments and result)."""
    x, h, w_out, bias = (np.asarray(v, I64) for v in (x, prev_out, w_out, bias))
    w_in = MacPlan(w_in)
    w_zr, w_u = MacPlan(w_out[:2]), MacPlan(w_out[2:3])
    outs, h_q = [], prev_q
    if kind == "sa8":
        ir_q = SaQ.of(0, 21, 9)
        irt = ir_q.triple
        oq = out_q.triple
        one_q = (-128, 1, 8)
        xw, x_other = _sa_inputs(x, w_in, bias, in_q, w_in_q)
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
            hr, hz, z1 = _gru_gated(eltwise_sa8, h, z, r, hq, _SIGM_Q, 127, one_q)
            hrw, hr_other = _sa_series(hr, w_u, h_q.zero_point, w_out_q.zero_point)
            u = _sa_series_sum([xw[t, 2:3], hrw], [int(x_other[t]), int(hr_other)],
                               [req_x_u, _sa_requant(h_q, ir_q, w_out_u)], 0)[0]
            u = lut_sa8(u, tanh_lut, *irt, *K_TANH_OUT)
            tmp = eltwise_sa8("mul", u, z1, _TANH_Q, _SIGM_Q, oq)
            h = eltwise_sa8("add", tmp, hz, oq, hq, oq)
            h_q = out_q
            outs.append(h)
    else:
        acc_bits, ir_fb, xw = _fx_inputs(x, w_in, bias, kind, in_q, w_in_q, b_q, _GRU_IR_FX)
        one = _FX_ONE
        x_shift = in_q + w_in_q - ir_fb
        for t in _order(x.shape[0], backward):
            h_shift = h_q + w_out_q - ir_fb
            zr = _fx_series_sum([xw[t, :2], w_zr(h)], [x_shift, h_shift], acc_bits)
            z = lut_fx(zr[0], sigm_lut, ir_fb)
            r = lut_fx(zr[1], sigm_lut, ir_fb)
            hr, hz, z1 = _gru_gated(eltwise_fx, h, z, r, h_q, one, 32767, one)
            u = _fx_series_sum([xw[t, 2:3], w_u(hr)], [x_shift, h_shift], acc_bits)[0]
            u = lut_fx(u, tanh_lut, ir_fb)
            tmp = eltwise_fx("mul", u, z1, one, one, out_q)
            h = eltwise_fx("add", tmp, hz, out_q, h_q, out_q)
            h_q = out_q
            outs.append(h)
    return np.stack(outs) if all_results else outs[-1][None]
