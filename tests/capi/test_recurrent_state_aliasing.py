"""Recurrent state buffers shared with the output, as the C checks allow.

``mli_chk_lstm_cell`` / ``mli_chk_gru_cell`` do not forbid ``prev_out`` sharing the memory of
``out`` (feeding the output back as the next call's state), nor ``cell`` sharing ``prev_out``'s.
The C cells read the whole previous state before the first write, so these calls give the same
results as with separate buffers (checked against the C library with random cases).
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

from pymli import capi
from pymli.capi.types import RnnCellCfg, RnnDirection, RnnOutActivation, RnnResults
from pymli.ops.lut_activations import activation_lut
from pymli.tensor import Tensor

from ..oracles.rnn_operands import KINDS, cell_operands

_SUFFIX = {"fx16": "fx16", "fx16_fx8_fx8": "fx16_fx8_fx8", "sa8": "sa8_sa8_sa32"}


def _args(kind: str, gates: int, seed: int, backward: bool) -> dict:
    t, n, m = 3, 4, 5
    rng = np.random.default_rng(seed)
    ops = cell_operands(rng, kind, gates, t, n, m, per_gate=kind == "sa8" and seed % 2 == 1)
    el = ops["x"].el_type
    lo, hi = (-128, 127) if el.size == 1 else (-20000, 20000)
    h0 = Tensor.from_numpy(rng.integers(lo, hi, m), el, **ops["out_quant"])
    c0 = Tensor.from_numpy(rng.integers(lo, hi, m), el, **ops["cell_quant"])
    cfg = RnnCellCfg(RnnDirection.BACKWARD if backward else RnnDirection.FORWARD, RnnResults.LAST,
                     RnnOutActivation.TANH, scratch_capacity=gates * m * el.size)
    out = Tensor.from_numpy(np.zeros(m, np.int64), el, **ops["out_quant"])
    return {"x": ops["x"], "h": h0, "wi": ops["weights_in"], "wo": ops["weights_out"], "b": ops["bias"],
            "cfg": cfg, "c": c0, "out": out}


def _run(a: dict, lstm: bool, kind: str) -> None:
    luts = (activation_lut("tanh"), activation_lut("sigm"))
    if lstm:
        fn = capi.FUNCTIONS[f"mli_krn_lstm_cell_{_SUFFIX[kind]}"]
        fn(a["x"], a["h"], a["wi"], a["wo"], a["b"], *luts, a["cfg"], a["c"], a["out"])
    else:
        fn = capi.FUNCTIONS[f"mli_krn_gru_cell_{_SUFFIX[kind]}"]
        fn(a["x"], a["h"], a["wi"], a["wo"], a["b"], *luts, a["cfg"], a["out"])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("lstm", [True, False])
@pytest.mark.parametrize("backward", [False, True])
def test_prev_out_sharing_out_memory(kind, lstm, backward):
    ref = _args(kind, 4 if lstm else 3, seed=len(kind) + lstm, backward=backward)
    shared = copy.deepcopy(ref)
    _run(ref, lstm, kind)
    shared["out"].data = shared["h"].data        # the state buffer is also the output buffer
    _run(shared, lstm, kind)
    assert np.array_equal(shared["h"].data, ref["out"].data)
    if lstm:
        assert np.array_equal(shared["c"].data, ref["c"].data)


@pytest.mark.parametrize("kind", KINDS)
def test_lstm_cell_sharing_prev_out_memory(kind):
    ref = _args(kind, 4, seed=3, backward=False)
    ref["c"].data = ref["h"].data.copy()
    ref["c"].zero_point, ref["c"].frac_bits = ref["h"].zero_point, ref["h"].frac_bits
    ref["c"].scale, ref["c"].scale_frac_bits = ref["h"].scale, ref["h"].scale_frac_bits
    shared = copy.deepcopy(ref)
    _run(ref, True, kind)
    shared["c"].data = shared["h"].data          # cell state and previous output in one buffer
    _run(shared, True, kind)
    assert np.array_equal(shared["out"].data, ref["out"].data)
    assert np.array_equal(shared["h"].data, ref["c"].data)   # the buffer ends up holding the new cell
