"""The planned recurrent cells (tables, fused steps) against the first per-operation version.

Raw random integer operands and quantisations, including extreme shifts, so that both the fast
paths and their fallbacks run; each case runs with and without the 65536-entry tables.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymli import EM, VPX, use_platform
from pymli.arith.rnn import (
    FxSeriesPlan,
    MacPlan,
    RoundShift,
    SaSeriesPlan,
    eltwise_fx,
    fx_ir_requantize,
    fx_mul_plan,
    sa_ir_requantize,
)
from pymli.arith.rounding import add_sat, asr_rnd, wrap
from pymli.kernels import recurrent as krn
from pymli.ops.lut_activations import activation_lut

from ..oracles.recurrent import gru_cell_reference, lstm_cell_reference

TANH, SIGM = activation_lut("tanh"), activation_lut("sigm")
PLATFORMS = {"up": VPX, "conv": EM}


def _sa_q(rng: np.random.Generator, gates: int | None = None) -> krn.SaQ:
    if gates:
        return krn.SaQ(0, tuple(int(v) for v in rng.integers(1, 32768, gates)),
                       tuple(int(v) for v in rng.integers(0, 32, gates)), True)
    return krn.SaQ.of(int(rng.integers(-128, 128)), int(rng.integers(1, 32768)), int(rng.integers(0, 32)))


def _operands(rng: np.random.Generator, kind: str, gates: int, t: int, n: int, m: int) -> dict:
    d_lo, d_hi = (-128, 128) if kind == "sa8" else (-32768, 32768)
    w_hi = 128 if kind != "fx16" else 32768
    b_hi = 2**31 if kind == "sa8" else (128 if kind == "fx16_fx8_fx8" else 32768)
    small = rng.random() < 0.5  # small values keep the states away from saturation
    ops = dict(x=rng.integers(d_lo, d_hi, (t, n)), prev_out=rng.integers(d_lo, d_hi, m),
               w_in=rng.integers(-w_hi, w_hi, (gates, n, m)) // (16 if small else 1),
               w_out=rng.integers(-w_hi, w_hi, (gates, m, m)) // (16 if small else 1),
               bias=rng.integers(-b_hi, b_hi, (gates, m)) // (256 if small else 1))
    if kind == "sa8":
        per_gate = rng.random() < 0.5
        q = dict(in_q=_sa_q(rng), prev_q=_sa_q(rng), w_in_q=_sa_q(rng, gates if per_gate else None),
                 w_out_q=_sa_q(rng, gates if per_gate else None), b_q=_sa_q(rng), out_q=_sa_q(rng))
        q["w_in_q"] = q["w_in_q"]._replace(zero_point=0)
        q["w_out_q"] = q["w_out_q"]._replace(zero_point=0)
        cell_q = _sa_q(rng)
    else:
        in_q, w_q = int(rng.integers(0, 16)), int(rng.integers(0, 16 if kind == "fx16" else 8))
        q = dict(in_q=in_q, prev_q=int(rng.integers(0, 16)), w_in_q=w_q, w_out_q=int(rng.integers(0, 16)),
                 b_q=int(rng.integers(0, in_q + w_q + 1)), out_q=int(rng.integers(0, 20)))
        cell_q = int(rng.integers(0, 16))
    return ops, q, cell_q


@pytest.fixture(params=[0, 10**6], ids=["tables", "no_tables"])
def table_steps(request, monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setattr(krn, "_TABLE_MIN_STEPS", request.param)
    krn._TABLES.clear()
    return request.param


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
@pytest.mark.parametrize("kind", krn.KINDS)
@pytest.mark.parametrize("seed", range(6))
def test_lstm_planned_equals_reference(table_steps, platform, kind, seed):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    t, n, m = int(rng.integers(1, 6)), int(rng.integers(1, 9)), int(rng.integers(1, 9))
    ops, q, cell_q = _operands(rng, kind, 4, t, n, m)
    cell = rng.integers(-128, 128, m) if kind == "sa8" else rng.integers(-32768, 32768, m)
    kw = dict(kind=kind, cell_q=cell_q, backward=bool(seed % 2), all_results=True,
              act=("tanh", "sigm", "none")[seed % 3], **q)
    with use_platform(PLATFORMS[platform]):
        got = krn.lstm_cell(ops["x"], ops["prev_out"], cell, ops["w_in"], ops["w_out"], ops["bias"], TANH, SIGM, **kw)
        ref = lstm_cell_reference(ops["x"], ops["prev_out"], cell, ops["w_in"], ops["w_out"], ops["bias"], TANH,
                                  SIGM, **kw)
    assert np.array_equal(got[0], ref[0]) and np.array_equal(got[1], ref[1])


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
@pytest.mark.parametrize("kind", krn.KINDS)
@pytest.mark.parametrize("seed", range(6))
def test_gru_planned_equals_reference(table_steps, platform, kind, seed):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(100 + seed)
    t, n, m = int(rng.integers(1, 6)), int(rng.integers(1, 9)), int(rng.integers(1, 9))
    ops, q, _ = _operands(rng, kind, 3, t, n, m)
    kw = dict(kind=kind, backward=bool(seed % 2), all_results=True, **q)
    with use_platform(PLATFORMS[platform]):
        got = krn.gru_cell(ops["x"], ops["prev_out"], ops["w_in"], ops["w_out"], ops["bias"], TANH, SIGM, **kw)
        ref = gru_cell_reference(ops["x"], ops["prev_out"], ops["w_in"], ops["w_out"], ops["bias"], TANH, SIGM, **kw)
    assert np.array_equal(got, ref)


@settings(max_examples=60, deadline=None)
@given(st.integers(-40, 70), st.sampled_from([32, 64]), st.integers(0, 62), st.sampled_from(sorted(PLATFORMS)),
       st.integers(0, 2**32 - 1))
def test_round_shift_equals_asr_rnd(n, bits, bound_log2, platform, seed):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    bound = min(1 << bound_log2, (1 << (bits - 1)) - 1)
    x = rng.integers(-bound, bound + 1, 64)
    x[:4] = [bound, -bound, 0, min(1 << max(n - 1, 0), bound)]  # |x| <= bound, a tie if it fits
    with use_platform(PLATFORMS[platform]):
        assert np.array_equal(RoundShift(n, bits, bound)(x), asr_rnd(x, n, bits))
        per_row = rng.integers(-2, bits + 2, (3, 1))
        xr = x[:60].reshape(3, 20)
        assert np.array_equal(RoundShift(per_row, bits, bound)(xr), asr_rnd(xr, per_row, bits))


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
@pytest.mark.parametrize("seed", range(8))
def test_series_plans_equal_general_helpers(platform, seed):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    g, n, m = 3, int(rng.integers(1, 300)), int(rng.integers(1, 9))
    big = seed % 2 == 0
    w = rng.integers(-128 if big else -8, 128 if big else 8, (g, n, m))
    plan = MacPlan(w)
    x = rng.integers(-128, 128, (2, n))
    zp, w_zp = int(rng.integers(-128, 128)), int(rng.integers(-1, 2))
    mul = rng.integers(-(1 << 16), 1 << 16, (g, 1))
    shift = rng.integers(-2, 70, (g, 1)) if seed % 3 == 0 else rng.integers(1, 40, (g, 1))
    with use_platform(PLATFORMS[platform]):
        acc = wrap(plan(x) - zp * plan.colsum, 32)
        other = wrap(-w_zp * x.sum(axis=-1) + n * zp * w_zp, 32)
        if w_zp:
            acc = add_sat(acc, other[:, None, None], 32)
        assert np.array_equal(SaSeriesPlan(plan, zp, w_zp, mul, shift)(x), sa_ir_requantize(acc, mul, shift))
        xf = rng.integers(-32768, 32768, (2, n))
        for acc_bits in (32, 40):
            out_shift = int(rng.integers(-3, 45))
            want = fx_ir_requantize(wrap(plan(xf), 32 if acc_bits == 32 else 64), out_shift, acc_bits)
            fp = FxSeriesPlan(plan, out_shift, acc_bits)
            got = fp(xf)
            assert np.array_equal(got, want) and np.abs(got).max() <= fp.bound


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
@pytest.mark.parametrize("fa,fb,fo", [(15, 15, 15), (3, 15, 3), (15, 15, 0), (0, 0, 20), (15, 15, 40), (7, 9, 16)])
def test_fx_mul_plan_equals_eltwise_fx(platform, fa, fb, fo):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(fa * 100 + fo)
    a = np.concatenate([rng.integers(-32768, 32768, 500), [-32768, 32767, -32768, 0]])
    b = np.concatenate([rng.integers(-32768, 32768, 500), [-32768, -32768, 32767, 5]])
    with use_platform(PLATFORMS[platform]):
        assert np.array_equal(fx_mul_plan(fa, fb, fo)(a, b), eltwise_fx("mul", a, b, fa, fb, fo))
