"""``mli_krn_rnn_dense_*``, ``mli_krn_lstm_cell_*``, ``mli_krn_gru_cell_*`` (recurrent kernels).

Each function runs the argument checks of ``private/mli_check.cc`` (``mli_chk_rnn_dense*``,
``mli_chk_lstm_cell*``, ``mli_chk_gru_cell*``), then the kernel of
:mod:`pymli.kernels.recurrent`. The cells update ``cell`` (LSTM) in place and rewrite the ``out``
struct to rank 2, shape ``(1 or sequence length, M)``, dense strides, as the C library does. The
scratch buffer of ``mli_rnn_cell_cfg`` is only checked for its capacity: pymli keeps the
intermediate results in its own arrays.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..checks.recurrent import MLI_RNN_MAX_INPUT, SIGM_LUT_BYTES, TANH_LUT_BYTES  # noqa: F401  (old import path)
from ..checks.recurrent import check_rnn_cell, check_rnn_dense
from ..checks.tensor import shape_at
from ..errors import Status
from ..kernels import recurrent as krn
from ..tensor import Lut, Tensor
from ._registry import mli_function, unsupported
from .types import RnnCellCfg, RnnDenseCfg, RnnDirection, RnnOutActivation, RnnResults

__all__ = [
    "mli_krn_rnn_dense_fx16", "mli_krn_rnn_dense_fx16_fx8_fx8", "mli_krn_rnn_dense_sa8_sa8_sa32",
    "mli_krn_lstm_cell_fx16", "mli_krn_lstm_cell_fx16_fx8_fx8", "mli_krn_lstm_cell_sa8_sa8_sa32",
    "mli_krn_gru_cell_fx16", "mli_krn_gru_cell_fx16_fx8_fx8", "mli_krn_gru_cell_sa8_sa8_sa32",
]

for _name in ("mli_krn_basic_rnn_cell_fx16", "mli_krn_basic_rnn_cell_fx8", "mli_krn_basic_rnn_cell_fx8w16d"):
    unsupported(_name, "MLI 1.x API: declared (deprecated) in the MLI 2.0.2 header but not implemented "
                       "there; use mli_krn_rnn_dense_* with the activation kernels")


# ------------------------------------------------------------------------------ helpers


def _q(t: Tensor, kind: str) -> int | krn.SaQ:
    """Quantisation of ``t`` as the kernels take it."""
    if kind != "sa8":
        return int(t.frac_bits)
    if t.dim >= 0:
        n = shape_at(t, t.dim)
        return krn.SaQ(int(t.quant_vector("zero_point", n)[0]), tuple(int(v) for v in t.quant_vector("scale", n)),
                       tuple(int(v) for v in t.quant_vector("scale_frac_bits", n)), True)
    return krn.SaQ.of(int(t.zero_point), int(t.scale), int(t.scale_frac_bits))


# ------------------------------------------------------------------------------ RNN dense


def _rnn_dense(kind: str, inputs: list[Tensor], weights: list[Tensor], bias: Tensor, cfg: RnnDenseCfg,
               out: Tensor) -> Status:
    n = check_rnn_dense(kind, inputs, weights, bias, cfg, out)
    res = krn.rnn_dense([inputs[i].view() for i in range(n)], [weights[i].view() for i in range(n)],
                        bias.view(), kind=kind, in_q=[_q(inputs[i], kind) for i in range(n)],
                        w_q=[_q(weights[i], kind) for i in range(n)], b_q=_q(bias, kind), out_q=_q(out, kind))
    out.view()[...] = res
    return Status.OK


@mli_function()
def mli_krn_rnn_dense_fx16(inputs: list[Tensor], weights: list[Tensor], bias: Tensor, cfg: RnnDenseCfg,
                           out: Tensor) -> Status:
    """RNN dense, fx16 data, weights and bias (40-bit accumulation)."""
    return _rnn_dense("fx16", inputs, weights, bias, cfg, out)


@mli_function()
def mli_krn_rnn_dense_fx16_fx8_fx8(inputs: list[Tensor], weights: list[Tensor], bias: Tensor, cfg: RnnDenseCfg,
                                   out: Tensor) -> Status:
    """RNN dense, fx16 data, fx8 weights and bias (32-bit accumulation)."""
    return _rnn_dense("fx16_fx8_fx8", inputs, weights, bias, cfg, out)


@mli_function()
def mli_krn_rnn_dense_sa8_sa8_sa32(inputs: list[Tensor], weights: list[Tensor], bias: Tensor, cfg: RnnDenseCfg,
                                   out: Tensor) -> Status:
    """RNN dense, sa8 data and weights, sa32 bias."""
    return _rnn_dense("sa8", inputs, weights, bias, cfg, out)


# ------------------------------------------------------------------------------ cells


def _cell_out_view(out: Tensor, res: np.ndarray) -> tuple[Tensor, np.ndarray]:
    """The (steps, M) dense struct the C cells leave in ``out`` and a view of its memory."""
    steps, m = res.shape
    new = dataclasses.replace(out, rank=2, shape=[int(steps), int(m)], mem_stride=[int(m), 1])
    return new, new.view()


def _store_cell_out(out: Tensor, new: Tensor, view: np.ndarray, res: np.ndarray) -> None:
    view[...] = res
    out.rank, out.shape, out.mem_stride = new.rank, new.shape, new.mem_stride


def _lstm(kind: str, inp: Tensor, prev_out: Tensor, w_in: Tensor, w_out: Tensor, bias: Tensor, tanh_lut: Lut,
          sigm_lut: Lut, cfg: RnnCellCfg, cell: Tensor, out: Tensor) -> Status:
    check_rnn_cell(kind, 4, inp, prev_out, w_in, w_out, bias, tanh_lut, sigm_lut, cfg, cell, out)
    act = {RnnOutActivation.NONE: "none", RnnOutActivation.TANH: "tanh", RnnOutActivation.SIGM: "sigm"}[cfg.act]
    res, c = krn.lstm_cell(inp.view(), prev_out.view(), cell.view(), w_in.view(), w_out.view(), bias.view(),
                           tanh_lut, sigm_lut, kind=kind, in_q=_q(inp, kind),
                           prev_q=_q(prev_out, kind), w_in_q=_q(w_in, kind), w_out_q=_q(w_out, kind),
                           b_q=_q(bias, kind), cell_q=_q(cell, kind), out_q=_q(out, kind),
                           backward=cfg.direction == RnnDirection.BACKWARD,
                           all_results=cfg.results == RnnResults.ALL, act=act)
    new, view = _cell_out_view(out, res)  # may raise: nothing is written before
    cell.view()[...] = c
    _store_cell_out(out, new, view, res)
    return Status.OK


def _gru(kind: str, inp: Tensor, prev_out: Tensor, w_in: Tensor, w_out: Tensor, bias: Tensor, tanh_lut: Lut,
         sigm_lut: Lut, cfg: RnnCellCfg, out: Tensor) -> Status:
    check_rnn_cell(kind, 3, inp, prev_out, w_in, w_out, bias, tanh_lut, sigm_lut, cfg, None, out)
    res = krn.gru_cell(inp.view(), prev_out.view(), w_in.view(), w_out.view(), bias.view(), tanh_lut,
                       sigm_lut, kind=kind, in_q=_q(inp, kind), prev_q=_q(prev_out, kind),
                       w_in_q=_q(w_in, kind), w_out_q=_q(w_out, kind), b_q=_q(bias, kind), out_q=_q(out, kind),
                       backward=cfg.direction == RnnDirection.BACKWARD, all_results=cfg.results == RnnResults.ALL)
    new, view = _cell_out_view(out, res)
    _store_cell_out(out, new, view, res)
    return Status.OK


@mli_function()
def mli_krn_lstm_cell_fx16(in_: Tensor, prev_out: Tensor, weights_in: Tensor, weights_out: Tensor, bias: Tensor,
                           tanh_lut: Lut, sigm_lut: Lut, cfg: RnnCellCfg, cell: Tensor, out: Tensor) -> Status:
    """LSTM cell over a sequence, fx16 everything; updates ``cell`` and rewrites ``out``'s shape."""
    return _lstm("fx16", in_, prev_out, weights_in, weights_out, bias, tanh_lut, sigm_lut, cfg, cell, out)


@mli_function()
def mli_krn_lstm_cell_fx16_fx8_fx8(in_: Tensor, prev_out: Tensor, weights_in: Tensor, weights_out: Tensor,
                                   bias: Tensor, tanh_lut: Lut, sigm_lut: Lut, cfg: RnnCellCfg, cell: Tensor,
                                   out: Tensor) -> Status:
    """LSTM cell over a sequence, fx16 data and cell, fx8 weights and bias."""
    return _lstm("fx16_fx8_fx8", in_, prev_out, weights_in, weights_out, bias, tanh_lut, sigm_lut, cfg, cell, out)


@mli_function()
def mli_krn_lstm_cell_sa8_sa8_sa32(in_: Tensor, prev_out: Tensor, weights_in: Tensor, weights_out: Tensor,
                                   bias: Tensor, tanh_lut: Lut, sigm_lut: Lut, cfg: RnnCellCfg, cell: Tensor,
                                   out: Tensor) -> Status:
    """LSTM cell over a sequence, sa8 data, cell and weights, sa32 bias."""
    return _lstm("sa8", in_, prev_out, weights_in, weights_out, bias, tanh_lut, sigm_lut, cfg, cell, out)


@mli_function()
def mli_krn_gru_cell_fx16(in_: Tensor, prev_out: Tensor, weights_in: Tensor, weights_out: Tensor, bias: Tensor,
                          tanh_lut: Lut, sigm_lut: Lut, cfg: RnnCellCfg, out: Tensor) -> Status:
    """GRU cell over a sequence, fx16 everything; rewrites ``out``'s shape."""
    return _gru("fx16", in_, prev_out, weights_in, weights_out, bias, tanh_lut, sigm_lut, cfg, out)


@mli_function()
def mli_krn_gru_cell_fx16_fx8_fx8(in_: Tensor, prev_out: Tensor, weights_in: Tensor, weights_out: Tensor,
                                  bias: Tensor, tanh_lut: Lut, sigm_lut: Lut, cfg: RnnCellCfg, out: Tensor) -> Status:
    """GRU cell over a sequence, fx16 data, fx8 weights and bias."""
    return _gru("fx16_fx8_fx8", in_, prev_out, weights_in, weights_out, bias, tanh_lut, sigm_lut, cfg, out)


@mli_function()
def mli_krn_gru_cell_sa8_sa8_sa32(in_: Tensor, prev_out: Tensor, weights_in: Tensor, weights_out: Tensor,
                                  bias: Tensor, tanh_lut: Lut, sigm_lut: Lut, cfg: RnnCellCfg, out: Tensor) -> Status:
    """GRU cell over a sequence, sa8 data and weights, sa32 bias."""
    return _gru("sa8", in_, prev_out, weights_in, weights_out, bias, tanh_lut, sigm_lut, cfg, out)
