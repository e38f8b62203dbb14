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

from ..arith.rounding import asr_rnd, wrap
from ..checks import (
    calc_shift_idx,
    check_lut,
    check_quant_params,
    check_tensor,
    fail,
    inner_most_dimension_is_one,
    layout_is_contiguous,
    shape_at,
    tensors_not_overlapped,
)
from ..errors import Status
from ..formats import ElType
from ..kernels import recurrent as krn
from ..tensor import Lut, Tensor
from ._registry import mli_function, unsupported
from .types import RnnCellCfg, RnnDenseCfg, RnnDirection, RnnOutActivation, RnnResults

__all__ = [
    "mli_krn_rnn_dense_fx16", "mli_krn_rnn_dense_fx16_fx8_fx8", "mli_krn_rnn_dense_sa8_sa8_sa32",
    "mli_krn_lstm_cell_fx16", "mli_krn_lstm_cell_fx16_fx8_fx8", "mli_krn_lstm_cell_sa8_sa8_sa32",
    "mli_krn_gru_cell_fx16", "mli_krn_gru_cell_fx16_fx8_fx8", "mli_krn_gru_cell_sa8_sa8_sa32",
]

MLI_RNN_MAX_INPUT = 4
TANH_LUT_BYTES = 344 * 2   # capacity of MLI's tanh table (mli_chk_lut reference size)
SIGM_LUT_BYTES = 320 * 2   # capacity of MLI's sigmoid table

# kind -> (data type, weights type, bias type)
_TYPES = {
    "fx16": (ElType.FX_16, ElType.FX_16, ElType.FX_16),
    "fx16_fx8_fx8": (ElType.FX_16, ElType.FX_8, ElType.FX_8),
    "sa8": (ElType.SA_8, ElType.SA_8, ElType.SA_32),
}
_ZP_BYTE = 7   # kZeroPointBitsByteRange
_ZP_ZERO = 0   # kZeroPointBitsZero

for _name in ("mli_krn_basic_rnn_cell_fx16", "mli_krn_basic_rnn_cell_fx8", "mli_krn_basic_rnn_cell_fx8w16d"):
    unsupported(_name, "MLI 1.x API: declared (deprecated) in the MLI 2.0.2 header but not implemented "
                       "there; use mli_krn_rnn_dense_* with the activation kernels")


# ------------------------------------------------------------------------------ helpers
def _count(t: Tensor, start: int = 0) -> int:
    n = 1
    for i in range(start, t.rank):
        n *= shape_at(t, i)
    return n


def _q(t: Tensor, kind: str) -> int | krn.SaQ:
    """Quantisation of ``t`` as the kernels take it."""
    if kind != "sa8":
        return int(t.frac_bits)
    if t.dim >= 0:
        n = shape_at(t, t.dim)
        return krn.SaQ(int(t.quant_vector("zero_point", n)[0]), tuple(int(v) for v in t.quant_vector("scale", n)),
                       tuple(int(v) for v in t.quant_vector("scale_frac_bits", n)), True)
    return krn.SaQ.of(int(t.zero_point), int(t.scale), int(t.scale_frac_bits))


def _check_bias_scale_asym(inp: Tensor, w: Tensor, bias: Tensor) -> None:
    """``mli_chk_bias_scale_asym``: bias scale = input scale x weights scale (+-1 after rescaling)."""
    n = shape_at(w, w.dim) if w.dim >= 0 else 1
    w_scales = w.quant_vector("scale", n)
    b_scales = bias.quant_vector("scale", n) if bias.dim >= 0 else np.array([int(bias.scale)] * n)
    in_scale = int(inp.scale)
    for idx in range(n):
        expected = in_scale * int(w_scales[idx])
        sh = calc_shift_idx(inp, w, bias, idx)
        expected = int(asr_rnd(expected, sh, 32)) if sh > 0 else int(wrap(expected << -sh, 32))
        if abs(expected - int(b_scales[idx])) > 1:
            fail(Status.INCOMPATEBLE_TENSORS, f"bias scale {int(b_scales[idx])} is not input scale x weights "
                                              f"scale ({expected}) at index {idx}")


def _check_types(kind: str, data: list[Tensor], weights: list[Tensor], bias: Tensor) -> None:
    d_t, w_t, b_t = _TYPES[kind]
    for t in data:
        if t.el_type != d_t:
            fail(Status.TYPE_MISMATCH, f"{t.el_type.c_name} where {d_t.c_name} is expected")
    for t in weights:
        if t.el_type != w_t:
            fail(Status.TYPE_MISMATCH, f"weights of type {t.el_type.c_name}, expected {w_t.c_name}")
    if bias.el_type != b_t:
        fail(Status.TYPE_MISMATCH, f"bias of type {bias.el_type.c_name}, expected {b_t.c_name}")


def _check_frac(inp: Tensor, w: Tensor, other: Tensor, what: str) -> None:
    """``mli_chk_bias_frac_fx`` / ``mli_chk_out_frac_fx``."""
    if other.frac_bits > inp.frac_bits + w.frac_bits:
        fail(Status.INCOMPATEBLE_TENSORS, f"{what} frac_bits {other.frac_bits} > in {inp.frac_bits} + "
                                          f"weights {w.frac_bits}")


# ------------------------------------------------------------------------------ RNN dense
def _check_rnn_dense(kind: str, inputs: list[Tensor], weights: list[Tensor], bias: Tensor,
                     cfg: RnnDenseCfg | None, out: Tensor) -> int:
    if cfg is None:
        fail(Status.BAD_FUNC_CFG, "NULL cfg")
    n = int(cfg.inputs_num)
    if not 0 < n <= MLI_RNN_MAX_INPUT:
        fail(Status.BAD_FUNC_CFG, f"inputs_num {n} outside [1, {MLI_RNN_MAX_INPUT}]")
    if len(inputs) < n or len(weights) < n:
        fail(Status.BAD_FUNC_CFG, f"inputs_num {n} but {len(inputs)} inputs and {len(weights)} weights given")
    for idx in range(n):
        inp, w = inputs[idx], weights[idx]
        check_tensor(inp)
        check_tensor(w)
        if w.rank != 2 or _count(inp) != shape_at(w, 0) or shape_at(w, 1) != shape_at(weights[0], 1):
            fail(Status.SHAPE_MISMATCH, f"input {idx} ({_count(inp)} values) and weights shape "
                                        f"{w.shape[:w.rank]} do not match")
        if not layout_is_contiguous(inp) or not inner_most_dimension_is_one(w):
            fail(Status.INCOMPATEBLE_TENSORS, f"input {idx} not contiguous or weights innermost stride not 1")
        if out is None or not tensors_not_overlapped(inp, out):
            fail(Status.INCOMPATEBLE_TENSORS, f"input {idx} and out overlap")
    check_tensor(bias)
    if bias.rank != 1 or shape_at(weights[0], 1) != shape_at(bias, 0):
        fail(Status.SHAPE_MISMATCH, "bias must be of shape (M,)")
    check_tensor(out)
    if out.rank != 1 or shape_at(out, 0) != shape_at(bias, 0):
        fail(Status.SHAPE_MISMATCH, "out must be of shape (M,)")
    if out.el_type != inputs[0].el_type:
        fail(Status.TYPE_MISMATCH, "out and inputs[0] types differ")
    if not inner_most_dimension_is_one(bias) or not layout_is_contiguous(out):
        fail(Status.INCOMPATEBLE_TENSORS, "bias innermost stride not 1 or out not contiguous")

    _check_types(kind, inputs[:n], weights[:n], bias)
    if kind != "sa8":
        for idx in range(n):
            _check_frac(inputs[idx], weights[idx], out, "out")
        _check_frac(inputs[0], weights[0], bias, "bias")
        return n
    bad_dim = False
    for idx in range(n):
        check_quant_params(inputs[idx], _ZP_BYTE)
        check_quant_params(weights[idx], _ZP_ZERO)
        bad_dim |= inputs[idx].dim >= 0 or weights[idx].dim >= 0
    check_quant_params(out, _ZP_BYTE)
    check_quant_params(bias, _ZP_ZERO)
    if bad_dim or out.dim >= 0 or bias.dim >= 0:
        fail(Status.INCOMPATEBLE_TENSORS, "rnn_dense sa8 tensors must be quantised per tensor")
    _check_bias_scale_asym(inputs[0], weights[0], bias)
    return n


def _rnn_dense(kind: str, inputs: list[Tensor], weights: list[Tensor], bias: Tensor, cfg: RnnDenseCfg,
               out: Tensor) -> Status:
    n = _check_rnn_dense(kind, inputs, weights, bias, cfg, out)
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
def _check_cell(kind: str, gates: int, inp: Tensor, prev_out: Tensor, w_in: Tensor, w_out: Tensor, bias: Tensor,
                tanh_lut: Lut, sigm_lut: Lut, cfg: RnnCellCfg | None, cell: Tensor | None, out: Tensor) -> None:
    """``mli_chk_lstm_cell*`` (``cell`` given, 4 gates) or ``mli_chk_gru_cell*`` (3 gates)."""
    if cfg is None:
        fail(Status.BAD_FUNC_CFG, "NULL cfg")
    check_lut(tanh_lut, TANH_LUT_BYTES)
    check_lut(sigm_lut, SIGM_LUT_BYTES)
    check_tensor(inp)
    check_tensor(prev_out)
    if inp.rank != 2 or prev_out.rank != 1:
        fail(Status.SHAPE_MISMATCH, f"in rank {inp.rank} (2 expected), prev_out rank {prev_out.rank} (1 expected)")
    if not layout_is_contiguous(inp) or not inner_most_dimension_is_one(prev_out):
        fail(Status.INCOMPATEBLE_TENSORS, "in must be contiguous and prev_out's innermost stride 1")
    n_in = _count(inp, 1)
    m = _count(prev_out)
    seq_out = shape_at(inp, 0) if cfg.results == RnnResults.ALL else 1
    check_tensor(w_in)
    check_tensor(w_out)
    if (w_in.rank != 3 or w_out.rank != 3 or [shape_at(w_in, i) for i in range(3)] != [gates, n_in, m]
            or [shape_at(w_out, i) for i in range(3)] != [gates, m, m]):
        fail(Status.SHAPE_MISMATCH, f"weights shapes {w_in.shape[:w_in.rank]}, {w_out.shape[:w_out.rank]}; expected "
                                    f"({gates}, {n_in}, {m}) and ({gates}, {m}, {m})")
    if not inner_most_dimension_is_one(w_in) or not inner_most_dimension_is_one(w_out):
        fail(Status.INCOMPATEBLE_TENSORS, "weights innermost stride must be 1")
    check_tensor(bias)
    if bias.rank != 2 or shape_at(bias, 0) != gates or shape_at(bias, 1) != m:
        fail(Status.SHAPE_MISMATCH, f"bias shape {bias.shape[:bias.rank]}, expected ({gates}, {m})")
    if cell is not None:
        check_tensor(cell)
        if cell.rank != 1 or shape_at(cell, 0) != m:
            fail(Status.SHAPE_MISMATCH, f"cell shape {cell.shape[:cell.rank]}, expected ({m},)")
    check_tensor(out)
    if out.el_type != inp.el_type:
        fail(Status.TYPE_MISMATCH, "out and in types differ")
    out_el = out.el_type.size if cell is not None else inp.el_type.size
    if seq_out * m * out_el > out.capacity:
        fail(Status.BAD_TENSOR, f"out capacity {out.capacity} < {seq_out * m * out_el} bytes")
    if gates * m * inp.el_type.size > int(cfg.scratch_capacity):
        fail(Status.BAD_FUNC_CFG, f"scratch capacity {cfg.scratch_capacity} < {gates * m * inp.el_type.size} bytes")
    if ((cell is not None and not inner_most_dimension_is_one(cell)) or not inner_most_dimension_is_one(bias)
            or not layout_is_contiguous(out)):
        fail(Status.INCOMPATEBLE_TENSORS, "cell / bias innermost stride must be 1 and out contiguous")

    data = [inp, out, prev_out] + ([cell] if cell is not None else [])
    _check_types(kind, data, [w_in, w_out], bias)
    if kind != "sa8":
        _check_frac(inp, w_in, bias, "bias")
        return
    bad = any(t.dim >= 0 for t in data)
    if w_in.dim < 0:
        bad |= w_out.dim >= 0 or bias.dim >= 0
    else:
        bad |= w_in.dim != 0 or w_out.dim != 0 or bias.dim != 0
    if bad:
        fail(Status.INCOMPATEBLE_TENSORS, "data must be quantised per tensor, weights and bias all per tensor "
                                          "or all per gate (dim 0)")
    for t in [inp, out, prev_out] + ([cell] if cell is not None else []):
        check_quant_params(t, _ZP_BYTE)
    for t in (w_in, w_out, bias):
        check_quant_params(t, _ZP_ZERO)
    _check_bias_scale_asym(inp, w_in, bias)


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
    _check_cell(kind, 4, inp, prev_out, w_in, w_out, bias, tanh_lut, sigm_lut, cfg, cell, out)
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
    _check_cell(kind, 3, inp, prev_out, w_in, w_out, bias, tanh_lut, sigm_lut, cfg, None, out)
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
