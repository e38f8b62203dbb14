"""Pythonic recurrent layers: sequences equal step-by-step runs, and FX results track float models."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymli.config import EM, VPX, use_platform
from pymli.errors import MliError, Status
from pymli.ops import gru, lstm, rnn_dense
from pymli.tensor import Tensor

from ..oracles.rnn_operands import KINDS, cell_operands, fx, fx_value, sa, sa_params


def _frame(x: Tensor, t: int) -> Tensor:
    """Frame ``t`` of a (T, N) sequence as a (1, N) tensor of the same quantisation."""
    q = {"frac_bits": x.frac_bits} if x.el_type.is_fx else dict(zero_point=x.zero_point, scale=x.scale,
                                                                  scale_frac_bits=x.scale_frac_bits)
    return Tensor.from_numpy(x.numpy()[t : t + 1], x.el_type, **q)


def _sig(v: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-v))


def lstm_float(x, wi, wo, b, h, c):
    """Float LSTM, gates i, g, f, o; returns (outputs (T, M), last cell)."""
    outs = []
    for t in range(x.shape[0]):
        z = x[t] @ wi + h @ wo + b
        i, g, f, o = _sig(z[0]), np.tanh(z[1]), _sig(z[2]), _sig(z[3])
        c = f * c + i * g
        h = o * np.tanh(c)
        outs.append(h)
    return np.array(outs), c


def gru_float(x, wi, wo, b, h):
    """Float GRU (reset applied before the recurrent product), gates z, r, u."""
    outs = []
    for t in range(x.shape[0]):
        z = _sig(x[t] @ wi[0] + h @ wo[0] + b[0])
        r = _sig(x[t] @ wi[1] + h @ wo[1] + b[1])
        u = np.tanh(x[t] @ wi[2] + (r * h) @ wo[2] + b[2])
        h = z * h + (1 - z) * u
        outs.append(h)
    return np.array(outs)


# ------------------------------------------------------------------ sequence == composed steps
@settings(max_examples=25, deadline=None)
@given(kind=st.sampled_from(KINDS), seed=st.integers(0, 2**31), t=st.integers(1, 5), n=st.integers(1, 6),
       m=st.integers(1, 6), backward=st.booleans(), act=st.sampled_from(["tanh", "sigm", "none"]),
       per_gate=st.booleans(), em=st.booleans())
def test_lstm_sequence_equals_single_steps(kind, seed, t, n, m, backward, act, per_gate, em):
    ops = cell_operands(np.random.default_rng(seed), kind, 4, t, n, m, per_gate)
    x, oq, cq = ops.pop("x"), ops.pop("out_quant"), ops.pop("cell_quant")
    direction = "backward" if backward else "forward"
    with use_platform(EM if em else VPX):
        full = lstm(x, **ops, out_quant=oq, cell_quant=cq, direction=direction, activation=act)
        last = lstm(x, **ops, out_quant=oq, cell_quant=cq, direction=direction, results="last", activation=act)
        state, cell, rows = None, None, []
        for step in (range(t - 1, -1, -1) if backward else range(t)):
            r = lstm(_frame(x, step), **ops, out_quant=oq, cell_quant=cq, prev_out=state, cell=cell, activation=act)
            state, cell = r.state, r.cell
            rows.append(r.out.numpy()[0])
    assert full.out.shape == [t, m] and last.out.shape == [1, m]
    assert np.array_equal(full.out.numpy(), np.array(rows))
    assert np.array_equal(last.out.numpy()[0], rows[-1])
    assert np.array_equal(full.cell.numpy(), cell.numpy())
    assert np.array_equal(full.state.numpy(), rows[-1])


@settings(max_examples=25, deadline=None)
@given(kind=st.sampled_from(KINDS), seed=st.integers(0, 2**31), t=st.integers(1, 5), n=st.integers(1, 6),
       m=st.integers(1, 6), backward=st.booleans(), per_gate=st.booleans(), em=st.booleans())
def test_gru_sequence_equals_single_steps(kind, seed, t, n, m, backward, per_gate, em):
    ops = cell_operands(np.random.default_rng(seed), kind, 3, t, n, m, per_gate)
    x, oq = ops.pop("x"), ops.pop("out_quant")
    ops.pop("cell_quant")
    direction = "backward" if backward else "forward"
    with use_platform(EM if em else VPX):
        full = gru(x, **ops, out_quant=oq, direction=direction)
        state, rows = None, []
        for step in (range(t - 1, -1, -1) if backward else range(t)):
            r = gru(_frame(x, step), **ops, out_quant=oq, prev_out=state)
            state = r.state
            rows.append(r.out.numpy()[0])
    assert np.array_equal(full.out.numpy(), np.array(rows))
    assert full.cell is None


def test_backward_differs_from_forward():
    ops = cell_operands(np.random.default_rng(3), "fx16", 4, 4, 3, 5)
    x, oq, cq = ops.pop("x"), ops.pop("out_quant"), ops.pop("cell_quant")
    fwd = lstm(x, **ops, out_quant=oq, cell_quant=cq, results="last")
    bwd = lstm(x, **ops, out_quant=oq, cell_quant=cq, results="last", direction="backward")
    assert not np.array_equal(fwd.out.numpy(), bwd.out.numpy())


def test_inputs_not_modified():
    ops = cell_operands(np.random.default_rng(4), "sa8", 4, 3, 3, 4)
    x, oq, cq = ops.pop("x"), ops.pop("out_quant"), ops.pop("cell_quant")
    h0 = sa(np.full(4, 0.25), *sa_params(-1, 1))
    c0 = Tensor.from_numpy(np.array([5, -3, 0, 7]), "SA_8", **cq)
    before = [t.numpy().copy() for t in (x, h0, c0)]
    res = lstm(x, **ops, out_quant=oq, prev_out=h0, cell=c0)
    assert all(np.array_equal(b, t.numpy()) for b, t in zip(before, (x, h0, c0)))
    assert not np.array_equal(res.cell.numpy(), c0.numpy())


# ------------------------------------------------------------------ against float models
@pytest.mark.parametrize("kind", ["fx16", "fx16_fx8_fx8"])
@pytest.mark.parametrize("seed", range(8))
def test_lstm_fx_matches_float(kind, seed):
    rng = np.random.default_rng(seed)
    t, n, m = int(rng.integers(1, 8)), int(rng.integers(1, 24)), int(rng.integers(1, 24))
    ops = cell_operands(rng, kind, 4, t, n, m)
    x, oq, cq = ops.pop("x"), ops.pop("out_quant"), ops.pop("cell_quant")
    res = lstm(x, **ops, out_quant=oq, cell_quant=cq)
    ref, ref_c = lstm_float(fx_value(x), fx_value(ops["weights_in"]), fx_value(ops["weights_out"]),
                            fx_value(ops["bias"]), np.zeros(m), np.zeros(m))
    # Gates go through a Q.10 intermediate and 2-LSB tables; the cell is Q.12: a few 1e-4 per step.
    assert np.abs(fx_value(res.out) - ref).max() < 3e-3
    assert np.abs(fx_value(res.cell) - ref_c).max() < 3e-3


@pytest.mark.parametrize("kind", ["fx16", "fx16_fx8_fx8"])
@pytest.mark.parametrize("seed", range(8))
def test_gru_fx_matches_float(kind, seed):
    rng = np.random.default_rng(100 + seed)
    t, n, m = int(rng.integers(1, 8)), int(rng.integers(1, 24)), int(rng.integers(1, 24))
    ops = cell_operands(rng, kind, 3, t, n, m)
    x, oq = ops.pop("x"), ops.pop("out_quant")
    h0 = fx(rng.uniform(-0.5, 0.5, m), 15)
    res = gru(x, ops["weights_in"], ops["weights_out"], ops["bias"], out_quant=oq, prev_out=h0)
    ref = gru_float(fx_value(x), fx_value(ops["weights_in"]), fx_value(ops["weights_out"]), fx_value(ops["bias"]),
                    fx_value(h0))
    assert np.abs(fx_value(res.out) - ref).max() < 3e-3


def test_lstm_sa8_tracks_float():
    rng = np.random.default_rng(7)
    ops = cell_operands(rng, "sa8", 4, 5, 8, 6)
    x, oq, cq = ops.pop("x"), ops.pop("out_quant"), ops.pop("cell_quant")
    res = lstm(x, **ops, out_quant=oq, cell_quant=cq)

    def val(t):
        return (t.numpy().astype(np.float64) - int(t.zero_point)) * int(t.scale) / 2.0 ** int(t.scale_frac_bits)

    ref, _ = lstm_float(val(x), val(ops["weights_in"]), val(ops["weights_out"]), val(ops["bias"]),
                        np.zeros(6), np.zeros(6))
    got = val(res.out)
    # 8-bit data and a Q.4 (sa8) intermediate: errors of a few output LSBs (1/127).
    assert np.abs(got - ref).max() < 0.08


def test_rnn_dense_fx16_matches_float():
    rng = np.random.default_rng(11)
    xs = [fx(rng.uniform(-1, 1, (2, 3)), 14), fx(rng.uniform(-1, 1, 5), 14)]
    ws = [fx(rng.uniform(-0.5, 0.5, (6, 4)), 15), fx(rng.uniform(-0.5, 0.5, (5, 4)), 15)]
    b = fx(rng.uniform(-1, 1, 4), 12)
    out = rnn_dense(xs, ws, b, out_quant={"frac_bits": 12})
    ref = fx_value(xs[0]).reshape(-1) @ fx_value(ws[0]) + fx_value(xs[1]) @ fx_value(ws[1]) + fx_value(b)
    assert out.shape == [4]
    # Each of the two series is rounded to Q.12 separately: at most one LSB each.
    assert np.abs(fx_value(out) - ref).max() <= 2 * 2.0**-12


def test_unsupported_type_combination():
    x = fx(np.zeros((2, 3)), 10)
    w = Tensor.from_numpy(np.zeros((4, 3, 2), np.int8), "SA_8", zero_point=0, scale=1, scale_frac_bits=0)
    with pytest.raises(MliError) as e:
        lstm(x, w, w, w, out_quant={"frac_bits": 10})
    assert e.value.status == Status.NOT_SUPPORTED
