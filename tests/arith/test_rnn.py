"""pymli.arith.rnn against slow scalar oracles written from the C reference (tests/oracles/c_math.py)."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymli.arith.rnn import eltwise_fx, eltwise_sa8, mac, norm_cast, sa_ir_cast, sa_ir_requantize
from pymli.config import EM, VPX, use_platform

from ..oracles import c_math as C

MODES = {"up": VPX, "convergent": EM}


@functools.lru_cache(maxsize=None)
def _sa8_params(op, qa, qb, qo, mode):
    """Scale factors and shifts of eltwise_prepare_and_run (per-tensor sa8)."""
    (_, sa, fa), (_, sb, fb), (_, so, fo) = qa, qb, qo
    if op == "mul":
        f, sh = C.norm_cast(sa * sb, 32, 32, mode)
        f = C.cdiv(f, so)
        post = fa + fb - fo - sh
        s16, sh = C.norm_cast(f, 32, 16, mode)
        post -= sh
        sh = max(post - 31, 0) + min(31 + post, 0)
        return C.asr_rnd(s16, sh, 16, mode), post - sh
    res = []
    for s, f in ((sa, fa), (sb, fb)):
        sf, ns = C.norm_cast(s, 32, 32, mode)
        sf = C.cdiv(sf, so)
        pre = -ns + f - fo
        s16, ns = C.norm_cast(sf, 32, 16, mode)
        pre -= ns
        sh = max(pre - 23, 0) + min(31 + pre, 0)
        res.append((C.asr_rnd(s16, sh, 16, mode), pre - sh))
    return tuple(res)


def elt_sa8_(op, a, b, qa, qb, qo, mode):
    in1, in2 = C.sat(a - qa[0], 16), C.sat(b - qb[0], 16)
    zo = qo[0]
    if op == "mul":
        s16, post = _sa8_params(op, qa, qb, qo, mode)
        pre = min(max(post - 21, 0), 3)
        acc16 = C.sat(C.asr_rnd(in1 * in2, pre, 32, mode), 16)
        tmp = C.sat(C.asr_rnd(acc16 * s16, post - pre, 32, mode), 16)
        return C.sat(C.sat(tmp + zo, 16), 8)
    (s1, p1), (s2, p2) = _sa8_params(op, qa, qb, qo, mode)
    x1, x2 = C.asr_rnd(in1 * s1, p1, 32, mode), C.asr_rnd(in2 * s2, p2, 32, mode)
    acc = C.sat(x1 + x2 if op == "add" else x1 - x2, 32)
    return C.sat(C.sat(C.sat(acc, 16) + zo, 16), 8)


def elt_fx_(op, a, b, fa, fb, fo, mode):
    if op == "mul":
        return C.sat(C.asr_rnd(a * b, min(fa + fb - fo, 31), 64, mode), 16)
    x1 = C.asr_rnd(a, min(fa - fb, 0), 32, mode)
    x2 = C.asr_rnd(b, min(fb - fa, 0), 32, mode)
    acc = C.sat(x1 + x2 if op == "add" else x1 - x2, 32)
    return C.sat(C.asr_rnd(acc, min(max(fa, fb) - fo, 31), 64, mode), 16)


# ------------------------------------------------------------------ tests
_SA_CASES = [
    ((7, 28156, 21), (-128, 1, 8), (7, 28156, 21)),      # LSTM cell * forget gate
    ((0, 1, 7), (-128, 1, 8), (-2, 17627, 22)),          # tanh(cell) * out gate -> out
    ((-5, 30000, 15), (3, 20000, 14), (0, 25000, 13)),
    ((-128, 1, 8), (-128, 1, 8), (-128, 1, 8)),          # GRU 1 - z
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op", ["mul", "add", "sub"])
@pytest.mark.parametrize("q", _SA_CASES)
def test_eltwise_sa8_all_int8_pairs(mode, op, q):
    a = np.repeat(np.arange(-128, 128), 256)
    b = np.tile(np.arange(-128, 128), 256)
    if q != _SA_CASES[0]:  # one parameter set exhaustively, the others on every 7th pair
        a, b = a[::7], b[::7]
    with use_platform(MODES[mode]):
        got = eltwise_sa8(op, a, b, *q)
    want = [elt_sa8_(op, int(x), int(y), *q, mode) for x, y in zip(a, b)]
    assert got.tolist() == want


@settings(max_examples=40, deadline=None)
@given(op=st.sampled_from(["mul", "add", "sub"]), fa=st.integers(0, 15), fb=st.integers(0, 15),
       fo=st.integers(0, 15), mode=st.sampled_from(list(MODES)), seed=st.integers(0, 2**31))
def test_eltwise_fx_random(op, fa, fb, fo, mode, seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(-32768, 32768, 300)
    b = rng.integers(-32768, 32768, 300)
    a[:3] = [-32768, 32767, 0]
    with use_platform(MODES[mode]):
        got = eltwise_fx(op, a, b, fa, fb, fo)
        # int16 operands may take the int32 path of arith.eltwise: same values, still int64
        narrow = eltwise_fx(op, a.astype(np.int16), b.astype(np.int16), fa, fb, fo)
    assert got.tolist() == [elt_fx_(op, int(x), int(y), fa, fb, fo, mode) for x, y in zip(a, b)]
    assert narrow.dtype == np.int64 and np.array_equal(narrow, got)


@settings(max_examples=60, deadline=None)
@given(acc=st.integers(-(2**31), 2**31 - 1), mul=st.integers(-(2**31), 2**31 - 1), shift=st.integers(-5, 70),
       mode=st.sampled_from(list(MODES)))
def test_sa_ir_requantize(acc, mul, shift, mode):
    with use_platform(MODES[mode]):
        got = int(sa_ir_requantize(np.array([acc]), mul, shift)[0])
    assert got == C.sat(C.asr_rnd(acc * mul, min(shift, 63), 64, mode), 32)


def test_sa_ir_cast_saturates():
    assert sa_ir_cast(np.array([2**20, -(2**20), 5, 120]), 10).tolist() == [127, -128, 15, 127]


@settings(max_examples=60, deadline=None)
@given(x=st.integers(-(2**31), 2**31 - 1), out_bits=st.sampled_from([16, 32]), mode=st.sampled_from(list(MODES)))
def test_norm_cast(x, out_bits, mode):
    with use_platform(MODES[mode]):
        assert norm_cast(x, 32, out_bits) == C.norm_cast(x, 32, out_bits, mode)


def test_mac_exact_on_both_paths():
    rng = np.random.default_rng(0)
    x = rng.integers(-32768, 32768, 50)
    w = rng.integers(-32768, 32768, (3, 50, 7))
    exact = np.array([[sum(int(a) * int(b) for a, b in zip(x, w[g, :, m])) for m in range(7)] for g in range(3)])
    assert np.array_equal(mac(x, w), exact)              # float64 path (bound < 2**53)
    big = np.full(5, 2**40)
    assert mac(big, np.full((1, 5, 1), 2**20)).tolist() == [[5 * 2**60]]   # int64 path
    frames = rng.integers(-128, 128, (4, 50))
    assert np.array_equal(mac(frames, w), np.stack([mac(f, w) for f in frames]))
