"""Facade of the recurrent kernels: argument checks, struct rewriting, untouched outputs on failure."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pymli import capi
from pymli.capi.types import RnnCellCfg, RnnDenseCfg, RnnDirection, RnnOutActivation, RnnResults
from pymli.errors import MliError, Status
from pymli.formats import ElType
from pymli.kernels.recurrent import SaQ, _gru_candidate_scales
from pymli.ops.lut_activations import activation_lut
from pymli.tensor import Tensor

from ..oracles.rnn_operands import cell_operands, fx


def _lstm_args(kind="fx16", t=3, n=4, m=5, results=RnnResults.ALL, seed=0):
    ops = cell_operands(np.random.default_rng(seed), kind, 4, t, n, m)
    el = ops["x"].el_type
    steps = t if results == RnnResults.ALL else 1
    h0 = Tensor.zeros([m], el, **ops["out_quant"])
    cell = Tensor.zeros([m], el, **ops["cell_quant"])
    out = Tensor.from_numpy(np.full(steps * m + 3, 77), el, **ops["out_quant"])  # sentinel tail
    out.shape, out.mem_stride, out.rank = [steps * m + 3], [1], 1
    cfg = RnnCellCfg(RnnDirection.FORWARD, results, RnnOutActivation.TANH, scratch_capacity=4 * m * el.size)
    return dict(in_=ops["x"], prev_out=h0, weights_in=ops["weights_in"], weights_out=ops["weights_out"],
                bias=ops["bias"], tanh_lut=activation_lut("tanh"), sigm_lut=activation_lut("sigm"), cfg=cfg,
                cell=cell, out=out)


def _call(fn, args):
    return fn(*args.values())


@pytest.mark.parametrize("results", [RnnResults.ALL, RnnResults.LAST])
def test_lstm_rewrites_out_struct_and_keeps_tail(results):
    a = _lstm_args(results=results)
    assert _call(capi.mli_krn_lstm_cell_fx16, a) is Status.OK
    steps = 3 if results == RnnResults.ALL else 1
    out = a["out"]
    assert (out.rank, out.shape, out.mem_stride) == (2, [steps, 5], [5, 1])
    assert np.all(out.data[steps * 5:] == 77)          # nothing written past the results
    assert not np.all(out.data[: steps * 5] == 77)


@pytest.mark.parametrize("mutate, status", [
    (lambda a: a.__setitem__("cfg", dataclasses.replace(a["cfg"], scratch_capacity=4 * 5 * 2 - 1)), Status.BAD_FUNC_CFG),
    (lambda a: (setattr(a["out"], "capacity", 3 * 5 * 2 - 2), setattr(a["out"], "shape", [1])), Status.BAD_TENSOR),
    (lambda a: setattr(a["tanh_lut"], "capacity", 100), Status.NOT_ENGH_MEM),
    (lambda a: a.__setitem__("weights_in", fx(np.zeros((4, 3, 5)), 15)), Status.SHAPE_MISMATCH),
    (lambda a: a.__setitem__("bias", fx(np.zeros((3, 5)), 12)), Status.SHAPE_MISMATCH),
    (lambda a: a.__setitem__("cell", fx(np.zeros(4), 12)), Status.SHAPE_MISMATCH),
    (lambda a: a.__setitem__("bias", fx(np.zeros((4, 5)), 30)), Status.INCOMPATEBLE_TENSORS),
    (lambda a: a.__setitem__("cell", fx(np.zeros(5), 12, "FX_8")), Status.TYPE_MISMATCH),
    (lambda a: setattr(a["in_"], "rank", 1), Status.SHAPE_MISMATCH),
])
def test_lstm_checks(mutate, status):
    a = _lstm_args()
    a["tanh_lut"] = dataclasses.replace(a["tanh_lut"])
    mutate(a)
    out_before, cell_before = a["out"].data.copy(), a["cell"].data.copy()
    with pytest.raises(MliError) as e:
        _call(capi.mli_krn_lstm_cell_fx16, a)
    assert e.value.status == status
    assert np.array_equal(a["out"].data, out_before) and np.array_equal(a["cell"].data, cell_before)
    assert a["out"].rank == 1


def test_lstm_sa8_rejects_mixed_quantisation_levels():
    a = _lstm_args(kind="sa8")
    w = a["weights_in"]
    a["weights_in"] = Tensor.from_numpy(w.numpy(), "SA_8", zero_point=np.zeros(4), scale=[w.scale] * 4,
                                        scale_frac_bits=[w.scale_frac_bits] * 4, dim=0)
    with pytest.raises(MliError) as e:
        _call(capi.mli_krn_lstm_cell_sa8_sa8_sa32, a)
    assert e.value.status == Status.INCOMPATEBLE_TENSORS


def test_lstm_sa8_checks_bias_scale():
    a = _lstm_args(kind="sa8")
    a["bias"].scale = int(a["bias"].scale) + 5
    with pytest.raises(MliError) as e:
        _call(capi.mli_krn_lstm_cell_sa8_sa8_sa32, a)
    assert e.value.status == Status.INCOMPATEBLE_TENSORS


def test_gru_out_capacity_uses_input_element_size():
    a = _lstm_args(t=2, m=3)
    ops = cell_operands(np.random.default_rng(1), "fx16", 3, 2, 4, 3)
    args = [ops["x"], a["prev_out"], ops["weights_in"], ops["weights_out"], ops["bias"], a["tanh_lut"],
            a["sigm_lut"], dataclasses.replace(a["cfg"], scratch_capacity=3 * 3 * 2), a["out"]]
    assert capi.mli_krn_gru_cell_fx16(*args) is Status.OK
    a2 = _lstm_args(t=2, m=3)
    args[-1] = a2["out"]
    args[-1].capacity = 2 * 3 * 2 - 1   # out may have any shape: only the capacity is too small
    args[-1].shape = [2]
    with pytest.raises(MliError) as e:
        capi.mli_krn_gru_cell_fx16(*args)
    assert e.value.status == Status.BAD_TENSOR


def _dense_args():
    rng = np.random.default_rng(5)
    xs = [fx(rng.uniform(-1, 1, 3), 14), fx(rng.uniform(-1, 1, (2, 2)), 14)]
    ws = [fx(rng.uniform(-1, 1, (3, 4)), 14), fx(rng.uniform(-1, 1, (4, 4)), 14)]
    b = fx(rng.uniform(-1, 1, 4), 12)
    out = fx(np.zeros(4), 12)
    return xs, ws, b, RnnDenseCfg(inputs_num=2), out


@pytest.mark.parametrize("mutate, status", [
    (lambda xs, ws, b, c, o: dataclasses.replace(c, inputs_num=0), Status.BAD_FUNC_CFG),
    (lambda xs, ws, b, c, o: dataclasses.replace(c, inputs_num=5), Status.BAD_FUNC_CFG),
    (lambda xs, ws, b, c, o: ws.__setitem__(1, fx(np.zeros((3, 4)), 14)), Status.SHAPE_MISMATCH),
    (lambda xs, ws, b, c, o: setattr(o, "frac_bits", 29), Status.INCOMPATEBLE_TENSORS),
    (lambda xs, ws, b, c, o: setattr(o, "el_type", ElType.FX_8), Status.TYPE_MISMATCH),
])
def test_rnn_dense_checks(mutate, status):
    xs, ws, b, cfg, out = _dense_args()
    changed = mutate(xs, ws, b, cfg, out)
    cfg = changed if isinstance(changed, RnnDenseCfg) else cfg  # cfgs are frozen: a mutation returns a new one
    before = out.data.copy()
    with pytest.raises(MliError) as e:
        capi.mli_krn_rnn_dense_fx16(xs, ws, b, cfg, out)
    assert e.value.status == status
    assert np.array_equal(out.data, before)


def test_rnn_dense_uses_only_inputs_num_tensors():
    xs, ws, b, cfg, out = _dense_args()
    capi.mli_krn_rnn_dense_fx16(xs, ws, b, cfg, out)
    full = out.numpy().copy()
    cfg = dataclasses.replace(cfg, inputs_num=1)
    capi.mli_krn_rnn_dense_fx16(xs, ws, b, cfg, out)
    assert not np.array_equal(full, out.numpy())


def test_rnn_dense_rejects_overlapping_input_and_output():
    xs, ws, b, cfg, out = _dense_args()
    out.data = xs[0].data  # out written over the first input
    out.capacity = xs[0].capacity
    out.shape = [3]
    b2 = fx(np.zeros(3), 12)
    ws2 = [fx(np.zeros((3, 3)), 14), fx(np.zeros((4, 3)), 14)]
    with pytest.raises(MliError) as e:
        capi.mli_krn_rnn_dense_fx16(xs, ws2, b2, cfg, out)
    assert e.value.status == Status.INCOMPATEBLE_TENSORS


def test_basic_rnn_cell_is_listed_unsupported():
    for name in ("mli_krn_basic_rnn_cell_fx16", "mli_krn_basic_rnn_cell_fx8", "mli_krn_basic_rnn_cell_fx8w16d"):
        assert name in capi.UNSUPPORTED and name not in capi.FUNCTIONS


def test_gru_candidate_scales_reproduce_the_c_pointer_step():
    per_tensor = SaQ.of(0, 32766, 127)
    assert _gru_candidate_scales(per_tensor) == ((-32766,), (-127,))   # int16 / int8 wrap-around
    per_gate = SaQ(0, (10, 11, 12), (3, 4, 5), True)
    assert _gru_candidate_scales(per_gate) == ((12,), (5,))


def test_lstm_short_out_buffer_writes_nothing():
    a = _lstm_args()
    a["out"].data = a["out"].data[:7]        # capacity still claims room for 3 x 5 results
    a["out"].shape = [7]
    cell_before = a["cell"].data.copy()
    with pytest.raises(MliError) as e:
        _call(capi.mli_krn_lstm_cell_fx16, a)
    assert e.value.status == Status.NOT_ENGH_MEM
    assert np.array_equal(a["cell"].data, cell_before) and a["out"].rank == 1
