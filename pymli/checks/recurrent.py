"""Checks of ``mli_krn_rnn_dense_*``, ``mli_krn_lstm_cell_*`` and ``mli_krn_gru_cell_*``.

Mirrors ``mli_chk_rnn_dense*``, ``mli_chk_lstm_cell*`` and ``mli_chk_gru_cell*``.
"""

from __future__ import annotations

from typing import Any

from ..errors import Status
from ..formats import MAC_TYPES
from ..tensor import Lut, Tensor
from .conv import check_bias_scale_asym
from .tensor import (check_lut, check_quant_params, check_tensor, count_elements, fail, inner_most_dimension_is_one,
                     layout_is_contiguous, shape_at, tensors_not_overlapped)

__all__ = ["check_rnn_dense", "check_rnn_cell", "MLI_RNN_MAX_INPUT", "TANH_LUT_BYTES", "SIGM_LUT_BYTES"]

MLI_RNN_MAX_INPUT = 4
TANH_LUT_BYTES = 344 * 2   # capacity of MLI's tanh table (mli_chk_lut reference size)
SIGM_LUT_BYTES = 320 * 2   # capacity of MLI's sigmoid table
_RESULTS_ALL = 1           # RNN_OUT_ALL of mli_rnn_results

# kind -> (data type, weights type, bias type)
_TYPES = {"fx16": MAC_TYPES["fx16"], "fx16_fx8_fx8": MAC_TYPES["fx16_fx8_fx8"], "sa8": MAC_TYPES["sa8_sa8_sa32"]}
_ZP_BYTE = 7   # kZeroPointBitsByteRange
_ZP_ZERO = 0   # kZeroPointBitsZero


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


def check_rnn_dense(kind: str, inputs: list[Tensor], weights: list[Tensor], bias: Tensor,
                     cfg: Any, out: Tensor) -> int:
    """``mli_chk_rnn_dense_<kind>``: inputs and weights pairwise, bias and output of M values.

    Args:
        kind: "fx16", "fx16_fx8_fx8" or "sa8".
        inputs, weights: the first ``cfg.inputs_num`` are used; bias: (M,); out: (M,).
        cfg: ``mli_rnn_dense_cfg``.

    Returns:
        The number of (input, weights) pairs.

    Raises:
        MliError: BAD_FUNC_CFG, BAD_TENSOR, NOT_ENGH_MEM, SHAPE_MISMATCH,
            INCOMPATEBLE_TENSORS or TYPE_MISMATCH.
    """
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
        if w.rank != 2 or count_elements(inp) != shape_at(w, 0) or shape_at(w, 1) != shape_at(weights[0], 1):
            fail(Status.SHAPE_MISMATCH, f"input {idx} ({count_elements(inp)} values) and weights shape "
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
    check_bias_scale_asym(inputs[0], weights[0], bias)
    return n


def check_rnn_cell(kind: str, gates: int, inp: Tensor, prev_out: Tensor, w_in: Tensor, w_out: Tensor, bias: Tensor,
                tanh_lut: Lut, sigm_lut: Lut, cfg: Any, cell: Tensor | None, out: Tensor) -> None:
    """``mli_chk_lstm_cell*`` (``cell`` given, 4 gates) or ``mli_chk_gru_cell*`` (3 gates).

    Args:
        kind: "fx16", "fx16_fx8_fx8" or "sa8"; gates: 4 (LSTM) or 3 (GRU);
        inp: (steps, N) input; prev_out: (M,) previous output; w_in: (gates, N, M); w_out: (gates, M, M);
        bias: (gates, M); tanh_lut, sigm_lut: the LUTs; cfg: ``mli_rnn_cell_cfg``;
        cell: (M,) LSTM cell state, or None for a GRU; out: output buffer.

    Raises:
        MliError: BAD_FUNC_CFG, NOT_ENGH_MEM, BAD_TENSOR, SHAPE_MISMATCH, INCOMPATEBLE_TENSORS or
            TYPE_MISMATCH.
    """
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
    n_in = count_elements(inp, 1)
    m = count_elements(prev_out)
    seq_out = shape_at(inp, 0) if int(cfg.results) == _RESULTS_ALL else 1
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
    check_bias_scale_asym(inp, w_in, bias)
