"""The fused float64 gate inputs and the bounded products of the recurrent cells.

:class:`pymli.arith.rnn.FusedGates` against the series plans it replaces, ``fx_mul_plan`` with an
operand bound against ``eltwise_fx``, and whole cells with realistic quantisations (where the fused
steps and the 65536-entry tables are taken; the tests check that they are) against the oracles,
on both rounding platforms.
"""

from __future__ import annotations

import numpy as np
import pytest

from pymli import EM, VPX, use_platform
from pymli.arith.rnn import FusedGates, FxSeriesPlan, MacPlan, SaSeriesPlan, eltwise_fx, fx_mul_plan
from pymli.arith.rounding import limits
from pymli.kernels import recurrent as krn
from pymli.ops.lut_activations import activation_lut

from ..oracles.recurrent import gru_cell_reference, lstm_cell_reference

TANH, SIGM = activation_lut("tanh"), activation_lut("sigm")
PLATFORMS = {"up": VPX, "conv": EM}


def _clip(v: np.ndarray, bits: int) -> np.ndarray:
    lo, hi = limits(bits)
    return np.minimum(np.maximum(v, lo), hi)


def _assert_fused_equals_plan(plan, refused, xr, x, xr_bound, bits):  # type: ignore[no-untyped-def]
    """FusedGates of ``plan`` is None when ``refused`` (saturating / wrapping plans), else equals
    ``clip(xr + plan(x))`` shifted to start at 0, step by step."""
    fused = FusedGates.of(plan, xr, xr_bound, bits, 1 << (bits - 1))
    if refused:
        assert fused is None
        return
    assert fused is not None
    for i in range(len(x)):
        assert np.array_equal(fused(x[i], i), _clip(xr[i] + plan(x[i]), bits) + (1 << (bits - 1)))


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
@pytest.mark.parametrize("seed", range(10))
def test_fused_gates_equal_sa8_series_plan(platform, seed):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    g, n, m, t = int(rng.integers(1, 5)), int(rng.integers(1, 200)), int(rng.integers(1, 40)), 3
    w = MacPlan(rng.integers(-128, 128, (g, n, m)).astype(np.int8))
    zp = int(rng.integers(-128, 128)) if seed % 3 else 0
    # mul * 2**-shift around 2**-14: results across the int8 range (and beyond: the clip)
    shift = rng.integers(30, 41, (g, 1)) if seed % 2 else np.full((g, 1), int(rng.integers(30, 41)))
    mul = rng.integers(1 << (shift - 16), 1 << (shift - 12)) * rng.choice([-1, 1], (g, 1))
    xr = rng.integers(-3000, 3000, (t, g, m))
    xr[0, 0, :1] = 2999
    x = rng.integers(-128, 128, (t, n))
    x[0], x[1] = -128, 127  # the largest sums
    with use_platform(PLATFORMS[platform]):
        plan = SaSeriesPlan(w, zp, 0, mul, shift)
        _assert_fused_equals_plan(plan, plan.sat, xr, x, 3000, 8)


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
@pytest.mark.parametrize("acc_bits", [32, 40])
@pytest.mark.parametrize("seed", range(10))
def test_fused_gates_equal_fx_series_plan(platform, acc_bits, seed):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(50 + seed)
    g, n, m, t = int(rng.integers(1, 5)), int(rng.integers(1, 130)), int(rng.integers(1, 40)), 3
    w_hi = 128 if acc_bits == 32 else 1 << int(rng.integers(3, 16))
    w = MacPlan(rng.integers(-w_hi, w_hi, (g, n, m)).astype(np.int8 if acc_bits == 32 else np.int16))
    out_shift = int(rng.integers(1, 30))
    xr = rng.integers(-40000, 40000, (t, g, m))
    x = rng.integers(-32768, 32768, (t, n))
    x[0], x[1] = -32768, 32767
    with use_platform(PLATFORMS[platform]):
        plan = FxSeriesPlan(w, out_shift, acc_bits)
        _assert_fused_equals_plan(plan, plan.wrap, xr, x, 40000, 16)


def test_fused_gates_refuse_inexact_plans() -> None:
    w = MacPlan(np.full((1, 4, 2), 127, np.int8))
    assert FusedGates.of(SaSeriesPlan(w, 0, 3, np.ones((1, 1), np.int64) << 20, np.full((1, 1), 30)),
                         np.zeros((1, 1, 2)), 0, 8) is None  # weight zero point
    assert FusedGates.of(FxSeriesPlan(w, 0, 40), np.zeros((1, 1, 2)), 0, 16) is None  # no rounding shift
    assert FusedGates.of(FxSeriesPlan(w, 5, 40), np.zeros((1, 1, 2)), 1 << 50, 16) is None  # xr beyond 2**53


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
@pytest.mark.parametrize("a_max", [1, 1000, 32767, 32768])
@pytest.mark.parametrize("fa,fb,fo", [(15, 15, 15), (15, 3, 3), (15, 15, 0), (15, 12, 14), (15, 15, 20)])
def test_fx_mul_plan_bounded_operand_equals_eltwise_fx(platform, a_max, fa, fb, fo):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(a_max + fo)
    a = np.concatenate([rng.integers(-a_max, a_max + 1, 500), [a_max, -a_max, a_max, -a_max]])
    b = np.concatenate([rng.integers(-32768, 32768, 500), [-32768, -32768, 32767, 32767]])
    with use_platform(PLATFORMS[platform]):
        assert np.array_equal(fx_mul_plan(fa, fb, fo, a_max=a_max)(a, b), eltwise_fx("mul", a, b, fa, fb, fo))


def _cell_operands(rng: np.random.Generator, kind: str, gates: int, t: int, n: int, m: int) -> tuple[dict, dict]:
    """Operands in the ranges of a trained cell (bench_rnn's), where the fast paths apply."""
    if kind == "sa8":
        sa = krn.SaQ.of(0, 16384, 21)
        ops = dict(x=rng.integers(-128, 128, (t, n)), prev_out=rng.integers(-128, 128, m),
                   w_in=rng.integers(-127, 128, (gates, n, m)), w_out=rng.integers(-127, 128, (gates, m, m)),
                   bias=rng.integers(-2**20, 2**20, (gates, m)))
        q = dict(in_q=krn.SaQ.of(-3, 16384, 21), prev_q=krn.SaQ.of(5, 16384, 22), w_in_q=sa, w_out_q=sa,
                 b_q=krn.SaQ.of(0, 8192, 27), out_q=sa)
        return ops, dict(q, cell_q=krn.SaQ.of(2, 16384, 20))
    w_hi = 1 << 12 if kind == "fx16" else 100
    ops = dict(x=rng.integers(-2**14, 2**14, (t, n)), prev_out=rng.integers(-2**14, 2**14, m),
               w_in=rng.integers(-w_hi, w_hi, (gates, n, m)), w_out=rng.integers(-w_hi, w_hi, (gates, m, m)),
               bias=rng.integers(-w_hi, w_hi, (gates, m)))
    wq = 15 if kind == "fx16" else 7
    return ops, dict(in_q=14, prev_q=13, w_in_q=wq, w_out_q=wq, b_q=14 if kind == "fx16" else 6, out_q=15,
                     cell_q=12)


@pytest.fixture
def fused_calls(monkeypatch):  # type: ignore[no-untyped-def]
    """The results of every FusedGates.of call (to check that the fused steps ran)."""
    calls: list = []
    of = FusedGates.of.__func__

    def spy(cls, *args, **kw):  # type: ignore[no-untyped-def]
        r = of(cls, *args, **kw)
        calls.append(r)
        return r

    monkeypatch.setattr(FusedGates, "of", classmethod(spy))
    return calls


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
@pytest.mark.parametrize("kind", krn.KINDS)
@pytest.mark.parametrize("backward", [False, True])
@pytest.mark.parametrize("act", ["tanh", "sigm", "none"])
def test_lstm_fused_equals_reference(fused_calls, platform, kind, backward, act):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng([krn.KINDS.index(kind), backward, ("tanh", "sigm", "none").index(act)])
    t, n, m = 17, 24, 40  # at least _TABLE_MIN_STEPS steps: the tables too
    ops, q = _cell_operands(rng, kind, 4, t, n, m)
    cell = rng.integers(-128, 128, m) if kind == "sa8" else rng.integers(-2**14, 2**14, m)
    kw = dict(kind=kind, backward=backward, all_results=True, act=act, **q)
    with use_platform(PLATFORMS[platform]):
        got = krn.lstm_cell(ops["x"], ops["prev_out"], cell, ops["w_in"], ops["w_out"], ops["bias"], TANH, SIGM, **kw)
        ref = lstm_cell_reference(ops["x"], ops["prev_out"], cell, ops["w_in"], ops["w_out"], ops["bias"], TANH,
                                  SIGM, **kw)
    assert np.array_equal(got[0], ref[0]) and np.array_equal(got[1], ref[1])
    assert fused_calls and all(f is not None for f in fused_calls)


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
@pytest.mark.parametrize("kind", krn.KINDS)
@pytest.mark.parametrize("backward", [False, True])
@pytest.mark.parametrize("all_results", [False, True])
def test_gru_fused_equals_reference(fused_calls, platform, kind, backward, all_results):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng([10 + krn.KINDS.index(kind), backward, all_results])
    t, n, m = 17, 24, 40
    ops, q = _cell_operands(rng, kind, 3, t, n, m)
    q.pop("cell_q")
    kw = dict(kind=kind, backward=backward, all_results=all_results, **q)
    with use_platform(PLATFORMS[platform]):
        got = krn.gru_cell(ops["x"], ops["prev_out"], ops["w_in"], ops["w_out"], ops["bias"], TANH, SIGM, **kw)
        ref = gru_cell_reference(ops["x"], ops["prev_out"], ops["w_in"], ops["w_out"], ops["bias"], TANH, SIGM, **kw)
    assert np.array_equal(got, ref)
    assert fused_calls and all(f is not None for f in fused_calls)
