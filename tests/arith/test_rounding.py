"""pymli.arith.rounding against the pure-Python oracle: exhaustive for int8/int16, hypothesis for 32/64 bits."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymli import EM, VPX, RoundMode, use_platform
from pymli.arith import rounding as R

from ..oracles import c_math as O

MODES = {O.UP: RoundMode.UP, O.CONV: RoundMode.CONVERGENT}


def _all(bits: int) -> np.ndarray:
    lo, hi = O.lim(bits)
    return np.arange(lo, hi + 1, dtype=np.int64)


SHIFTS8 = list(range(-10, 11))
# every shift from "over-wide left" to "over-wide right" for int16 values
SHIFTS16 = list(range(-17, 18))


@pytest.mark.parametrize("bits,shifts", [(8, SHIFTS8), (16, SHIFTS16)])
@pytest.mark.parametrize("fn", ["asr", "asl"])
def test_shift_exhaustive(bits: int, shifts: list[int], fn: str) -> None:
    xs = _all(bits)
    ref = getattr(O, fn)
    for n in shifts:
        got = getattr(R, fn)(xs, n, bits)
        want = np.array([ref(int(x), n, bits) for x in xs.tolist()], dtype=np.int64)
        assert np.array_equal(got, want), (fn, bits, n, xs[got != want][:5])


@pytest.mark.parametrize("bits,shifts", [(8, SHIFTS8), (16, SHIFTS16)])
@pytest.mark.parametrize("mode", [O.UP, O.CONV])
def test_asr_rnd_exhaustive(bits: int, shifts: list[int], mode: str) -> None:
    xs = _all(bits)
    for n in shifts:
        got = R.asr_rnd(xs, n, bits, MODES[mode])
        want = np.array([O.asr_rnd(int(x), n, bits, mode) for x in xs.tolist()], dtype=np.int64)
        assert np.array_equal(got, want), (bits, n, mode, xs[got != want][:5])


@pytest.mark.parametrize("mode", [O.UP, O.CONV])
def test_asr_rnd_array_shifts_match_scalar_shifts(mode: str) -> None:
    xs = _all(8)
    ns = np.array(SHIFTS8, dtype=np.int64)
    got = R.asr_rnd(xs[:, None], ns[None, :], 8, MODES[mode])
    for j, n in enumerate(SHIFTS8):
        assert np.array_equal(got[:, j], R.asr_rnd(xs, n, 8, MODES[mode]))


def test_asr_asl_array_shifts_match_scalar_shifts() -> None:
    xs = _all(8)
    ns = np.array(SHIFTS8, dtype=np.int64)
    for fn in (R.asr, R.asl):
        got = fn(xs[:, None], ns[None, :], 8)
        for j, n in enumerate(SHIFTS8):
            assert np.array_equal(got[:, j], fn(xs, n, 8)), (fn.__name__, n)


def test_platform_rounding_is_used_by_default() -> None:
    x = np.array([5, 3, -5, -3], dtype=np.int64)  # 2.5, 1.5, -2.5, -1.5 in Q1
    with use_platform(VPX):
        assert R.asr_rnd(x, 1, 32).tolist() == [3, 2, -2, -1]
    with use_platform(EM):
        assert R.asr_rnd(x, 1, 32).tolist() == [2, 2, -2, -2]


def test_add_sub_sat_exhaustive_int8() -> None:
    a = _all(8)[:, None]
    b = _all(8)[None, :]
    ga, gs = R.add_sat(a, b, 8), R.sub_sat(a, b, 8)
    al, bl = a.ravel().tolist(), b.ravel().tolist()
    wa = np.array([[O.add_sat(x, y, 8) for y in bl] for x in al])
    ws = np.array([[O.sub_sat(x, y, 8) for y in bl] for x in al])
    assert np.array_equal(ga, wa) and np.array_equal(gs, ws)


@pytest.mark.parametrize("bits", [8, 16])
def test_sat_fx_wrap_sat_exhaustive(bits: int) -> None:
    xs = _all(bits)
    for nbits in range(0, bits + 2):
        got = R.sat_fx(xs, nbits, bits)
        want = np.array([O.sat_fx(int(x), nbits, bits) for x in xs.tolist()])
        assert np.array_equal(got, want), nbits
    wide = np.arange(-(1 << bits) - 3, (1 << bits) + 3, dtype=np.int64)
    assert np.array_equal(R.wrap(wide, bits), [O.wrap(int(v), bits) for v in wide.tolist()])
    lo, hi = O.lim(bits)
    assert np.array_equal(R.sat(wide, bits), np.clip(wide, lo, hi))


@pytest.mark.parametrize("mode", [O.UP, O.CONV])
def test_cast_fx_exhaustive_int16_to_int8(mode: str) -> None:
    xs = _all(16)
    for n in (-1, 0, 1, 4, 8, 15, 16):
        got = R.cast_fx(xs, n, 16, 8, MODES[mode])
        want = [max(-128, min(127, O.asr_rnd(int(x), n, 16, mode))) for x in xs.tolist()]
        assert np.array_equal(got, want), n


def _ints(bits: int) -> st.SearchStrategy[int]:
    lo, hi = O.lim(bits)
    edge = st.sampled_from([lo, lo + 1, -1, 0, 1, hi - 1, hi, 1 << (bits - 2), -(1 << (bits - 2))])
    return st.one_of(st.integers(lo, hi), edge)


@pytest.mark.parametrize("bits", [32, 64])
@given(data=st.data())
def test_wide_shifts_hypothesis(bits: int, data: st.DataObject) -> None:
    xs = data.draw(st.lists(_ints(bits), min_size=1, max_size=8))
    n = data.draw(st.integers(-bits - 2, bits + 2))
    mode = data.draw(st.sampled_from([O.UP, O.CONV]))
    arr = np.array(xs, dtype=np.int64)
    assert R.asr(arr, n, bits).tolist() == [O.asr(x, n, bits) for x in xs]
    assert R.asl(arr, n, bits).tolist() == [O.asl(x, n, bits) for x in xs]
    assert R.asr_rnd(arr, n, bits, MODES[mode]).tolist() == [O.asr_rnd(x, n, bits, mode) for x in xs]
    # per-element shifts take the same path
    ns = np.full(len(xs), n, dtype=np.int64)
    assert R.asr_rnd(arr, ns, bits, MODES[mode]).tolist() == [O.asr_rnd(x, n, bits, mode) for x in xs]


@pytest.mark.parametrize("bits", [32, 64])
@given(data=st.data())
def test_wide_add_sub_hypothesis(bits: int, data: st.DataObject) -> None:
    a = data.draw(st.lists(_ints(bits), min_size=1, max_size=8))
    b = data.draw(st.lists(_ints(bits), min_size=len(a), max_size=len(a)))
    A, B = np.array(a, dtype=np.int64), np.array(b, dtype=np.int64)
    assert R.add_sat(A, B, bits).tolist() == [O.add_sat(x, y, bits) for x, y in zip(a, b)]
    assert R.sub_sat(A, B, bits).tolist() == [O.sub_sat(x, y, bits) for x, y in zip(a, b)]


def test_add_sub_sat_64_edges_and_random() -> None:
    # Every pair of values near the ends, zero and the quarter points (where the halving of the
    # 64-bit path carries), plus seeded random pairs: against Python's unbounded ints.
    lo, hi = O.lim(64)
    q = 1 << 62
    edge = [lo, lo + 1, lo + 2, -q - 1, -q, -q + 1, -2, -1, 0, 1, 2, q - 1, q, q + 1, hi - 2, hi - 1, hi]
    rng = np.random.default_rng(12)
    rand = rng.integers(lo, hi, size=64, dtype=np.int64, endpoint=True).tolist()
    vals = edge + rand + [v ^ 1 for v in rand]
    a = [x for x in vals for _ in vals]
    b = [y for _ in vals for y in vals]
    A, B = np.array(a, dtype=np.int64), np.array(b, dtype=np.int64)
    assert R.add_sat(A, B, 64).tolist() == [max(lo, min(hi, x + y)) for x, y in zip(a, b)]
    assert R.sub_sat(A, B, 64).tolist() == [max(lo, min(hi, x - y)) for x, y in zip(a, b)]
