"""Pythonic recurrent layers: ``rnn_dense``, ``lstm`` and ``gru`` over whole sequences.

They run the checked MLI kernels (``mli_krn_rnn_dense_*``, ``mli_krn_lstm_cell_*``,
``mli_krn_gru_cell_*``), choosing the variant from the element types (FX_16 data with FX_16 or FX_8
weights, or SA_8 data and weights with SA_32 bias), create the sigmoid / tanh tables internally and
allocate the outputs. The output quantisation is the caller's choice: ``out_quant`` holds the
tensor fields, ``{"frac_bits": 12}`` for FX or ``{"zero_point": 3, "scale": 17000,
"scale_frac_bits": 22}`` for SA. Inputs are never modified.

Example:
    >>> import numpy as np
    >>> from pymli.tensor import Tensor
    >>> from pymli.ops import lstm
    >>> x = Tensor.from_numpy(np.zeros((3, 2), np.int16), "FX_16", frac_bits=12)
    >>> w_in = Tensor.from_numpy(np.zeros((4, 2, 5), np.int16), "FX_16", frac_bits=14)
    >>> w_out = Tensor.from_numpy(np.zeros((4, 5, 5), np.int16), "FX_16", frac_bits=14)
    >>> b = Tensor.from_numpy(np.zeros((4, 5), np.int16), "FX_16", frac_bits=12)
    >>> res = lstm(x, w_in, w_out, b, out_quant={"frac_bits": 14})
    >>> res.out.shape, res.state.shape, res.cell.shape
    ([3, 5], [5], [5])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from ..capi.types import RnnCellCfg, RnnDenseCfg, RnnDirection, RnnOutActivation, RnnResults
from ..errors import MliError, Status
from ..formats import ElType
from ..graph import args
from ..graph.registry import KernelMissing, Op, lookup
from ..tensor import Tensor
from .lut_activations import activation_lut

__all__ = ["rnn_dense", "lstm", "gru", "RnnResult"]


class RnnResult(NamedTuple):
    """Result of :func:`lstm` / :func:`gru`.

    Attributes:
        out: outputs ``(T, M)`` (``results="all"``) or ``(1, M)`` (``"last"``).
        state: the last output ``(M,)``, ready to be passed as the next call's ``prev_out``.
        cell: the LSTM cell state after the last step ``(M,)`` (``None`` for a GRU).
    """

    out: Tensor
    state: Tensor
    cell: Tensor | None


def _function(op: Op, x: Tensor, w: Tensor, what: str) -> Callable[..., Any]:
    try:
        return lookup(op, x.el_type, w.el_type)
    except KernelMissing:
        raise MliError(Status.NOT_SUPPORTED, f"{what}: data {x.el_type.name} with weights {w.el_type.name} is not "
                                             "supported (FX_16+FX_16, FX_16+FX_8 or SA_8+SA_8)") from None


def _zeros(shape: list[int], el: ElType, quant: dict[str, Any]) -> Tensor:
    """A tensor of real zeros (the zero point for SA) with the given quantisation fields."""
    t = Tensor.zeros(shape, el, **quant)
    if el.is_sa:
        t.write(np.full(shape, int(t.quant_vector("zero_point")[0])))
    return t


def _direction(direction: str, what: str) -> RnnDirection:
    return args.choice(direction, {"forward": RnnDirection.FORWARD, "backward": RnnDirection.BACKWARD}, "direction",
                       what=what)


def _results(results: str, what: str) -> RnnResults:
    return args.choice(results, {"all": RnnResults.ALL, "last": RnnResults.LAST}, "results", what=what)


def rnn_dense(inputs: Sequence[Tensor], weights: Sequence[Tensor], bias: Tensor, *,
              out_quant: dict[str, Any]) -> Tensor:
    """``bias + sum_i inputs[i] @ weights[i]`` (mli_krn_rnn_dense_*).

    Args:
        inputs: up to 4 tensors of any shape (N_i elements each), all of the same type.
        weights: one ``(N_i, M)`` tensor per input.
        bias: ``(M,)``.
        out_quant: output quantisation fields (``frac_bits`` or ``zero_point/scale/scale_frac_bits``).

    Returns:
        A new ``(M,)`` tensor of the input type.

    Raises:
        MliError: BAD_FUNC_CFG (not 1..4 inputs, as many weights, a malformed ``out_quant``),
            BAD_TENSOR (a non-tensor), NOT_SUPPORTED (types), SHAPE_MISMATCH (bias rank) or the status
            of ``mli_krn_rnn_dense_*``.
    """
    what = "rnn_dense"
    inputs = args.tensor_list(inputs, "inputs", what=what, max_len=4)
    weights = args.tensor_list(weights, "weights", what=what, min_len=len(inputs), max_len=len(inputs))
    args.tensor(bias, "bias", what=what)
    fn = _function(Op.RNN_DENSE, inputs[0], weights[0], what)
    args.tensor(bias, "bias", what=what, ranks=(1,))
    quant = args.quant_fields(out_quant, inputs[0].el_type, "out_quant", what=what)
    out = Tensor.zeros([int(bias.shape[0])], inputs[0].el_type, **quant)
    fn(list(inputs), list(weights), bias, RnnDenseCfg(inputs_num=len(inputs)), out)
    return out


def _cell_setup(what: str, x: Tensor, w_in: Tensor, w_out: Tensor, bias: Tensor, prev_out: Tensor | None,
                out_quant: Any, results: RnnResults, gates: int) -> tuple[Tensor, Tensor, int, int, dict[str, Any]]:
    """Check a cell's arguments; its initial state, output tensor, units, scratch bytes and output fields."""
    for name, t in (("w_in", w_in), ("w_out", w_out), ("bias", bias)):
        args.tensor(t, name, what=what)
    if prev_out is not None:
        args.tensor(prev_out, "prev_out", what=what)
    args.tensor(x, "x", what=what, ranks=(2,))
    args.tensor(bias, "bias", what=what, ranks=(2,))
    out_quant = args.quant_fields(out_quant, x.el_type, "out_quant", what=what)
    m = int(bias.shape[1])
    steps = int(x.shape[0]) if results is RnnResults.ALL else 1
    h0 = prev_out if prev_out is not None else _zeros([m], x.el_type, out_quant)
    out = Tensor.zeros([steps, m], x.el_type, **out_quant)
    return h0, out, m, gates * m * x.el_type.size, out_quant


def _state(out: Tensor, quant: dict[str, Any]) -> Tensor:
    return Tensor.from_numpy(out.numpy()[-1], out.el_type, **quant)


def lstm(x: Tensor, weights_in: Tensor, weights_out: Tensor, bias: Tensor, *, out_quant: dict[str, Any],
         prev_out: Tensor | None = None, cell: Tensor | None = None, cell_quant: dict[str, Any] | None = None,
         direction: str = "forward", results: str = "all", activation: str = "tanh") -> RnnResult:
    """LSTM over the sequence ``x`` (mli_krn_lstm_cell_*), gates stacked i, g, f, o.

    Args:
        x: input frames ``(T, N)``.
        weights_in: ``(4, N, M)``; weights_out: ``(4, M, M)``; bias: ``(4, M)``.
        out_quant: quantisation fields of the outputs (also the format of the fed-back output).
        prev_out: previous output ``(M,)``; zeros in ``out_quant`` if omitted.
        cell: previous cell state ``(M,)`` (not modified: the new state is returned);
            zeros in ``cell_quant`` (default ``out_quant``) if omitted.
        direction: "forward" or "backward" (frames last to first).
        results: "all" (one output per step, in processing order) or "last".
        activation: "tanh", "sigm" or "none" applied to the cell before the output gate.

    Returns:
        :class:`RnnResult` (out, last output, new cell state).

    Raises:
        MliError: BAD_TENSOR (a non-tensor), NOT_SUPPORTED (types), SHAPE_MISMATCH (ranks),
            BAD_FUNC_CFG (unknown ``direction`` / ``results`` / ``activation`` names, any case; a
            malformed ``out_quant`` / ``cell_quant``) or the status of ``mli_krn_lstm_cell_*``.
    """
    what = "lstm"
    args.tensor(x, "x", what=what)
    args.tensor(weights_in, "weights_in", what=what)
    fn = _function(Op.LSTM_CELL, x, weights_in, what)
    res, dirn = _results(results, what), _direction(direction, what)
    act = args.choice(activation, {"tanh": RnnOutActivation.TANH, "sigm": RnnOutActivation.SIGM,
                                   "sigmoid": RnnOutActivation.SIGM, "none": RnnOutActivation.NONE},
                      "activation", what=what)
    h0, out, m, scratch, out_quant = _cell_setup(what, x, weights_in, weights_out, bias, prev_out, out_quant, res, 4)
    if cell is None:
        cq = out_quant if cell_quant is None else args.quant_fields(cell_quant, x.el_type, "cell_quant", what=what)
        c = _zeros([m], x.el_type, cq)
    else:
        c = args.tensor(cell, "cell", what=what).copy()
    cfg = RnnCellCfg(direction=dirn, results=res, act=act, scratch_capacity=scratch)
    fn(x, h0, weights_in, weights_out, bias, activation_lut("tanh"), activation_lut("sigm"), cfg, c, out)
    return RnnResult(out, _state(out, out_quant), c)


def gru(x: Tensor, weights_in: Tensor, weights_out: Tensor, bias: Tensor, *, out_quant: dict[str, Any],
        prev_out: Tensor | None = None, direction: str = "forward", results: str = "all") -> RnnResult:
    """GRU over the sequence ``x`` (mli_krn_gru_cell_*), gates stacked z, r, u.

    The reset gate multiplies the hidden state before the candidate's recurrent weights;
    ``h = z * h_prev + (1 - z) * u``.

    Args:
        x: input frames ``(T, N)``.
        weights_in: ``(3, N, M)``; weights_out: ``(3, M, M)``; bias: ``(3, M)``.
        out_quant: quantisation fields of the outputs (also the format of the fed-back output).
        prev_out: previous output ``(M,)``; zeros in ``out_quant`` if omitted.
        direction: "forward" or "backward".
        results: "all" or "last".

    Returns:
        :class:`RnnResult` (out, last output, ``None``).

    Raises:
        MliError: BAD_TENSOR (a non-tensor), NOT_SUPPORTED (types), SHAPE_MISMATCH (ranks),
            BAD_FUNC_CFG (unknown ``direction`` / ``results`` names, any case; a malformed
            ``out_quant``) or the status of ``mli_krn_gru_cell_*``.
    """
    what = "gru"
    args.tensor(x, "x", what=what)
    args.tensor(weights_in, "weights_in", what=what)
    fn = _function(Op.GRU_CELL, x, weights_in, what)
    res, dirn = _results(results, what), _direction(direction, what)
    h0, out, _, scratch, out_quant = _cell_setup(what, x, weights_in, weights_out, bias, prev_out, out_quant, res, 3)
    cfg = RnnCellCfg(direction=dirn, results=res, act=RnnOutActivation.TANH, scratch_capacity=scratch)
    fn(x, h0, weights_in, weights_out, bias, activation_lut("tanh"), activation_lut("sigm"), cfg, out)
    return RnnResult(out, _state(out, out_quant), None)
