"""pymli.tflm.quant_util against slow pure-Python integer oracles (exhaustive where small)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from pymli.tflm import quant_util as qu

I32 = st.integers(-(2**31), 2**31 - 1)


def _c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def o_srdhm(a: int, b: int, bits: int = 32) -> int:
    lo = -(1 << (bits - 1))
    if a == lo and b == lo:
        return -lo - 1
    ab = a * b
    nudge = (1 << (bits - 2)) if ab >= 0 else 1 - (1 << (bits - 2))
    return _c_div(ab + nudge, 1 << (bits - 1))


def o_rdbp(x: int, e: int) -> int:
    # nearest, ties away from zero, by exact rational arithmetic
    f = Fraction(x, 1 << e)
    fl = f.numerator // f.denominator
    r = f - fl
    if r > Fraction(1, 2) or (r == Fraction(1, 2) and x >= 0):
        return fl + 1
    return fl


def o_wrap32(v: int) -> int:
    return ((v + 2**31) % 2**32) - 2**31


def o_mbqm(x: int, m: int, s: int) -> int:
    left, right = max(s, 0), max(-s, 0)
    return o_rdbp(o_srdhm(o_wrap32(x * (1 << left)), m), right)


def o_mbqm64(x: int, m: int, s: int) -> int:
    red = (m + (1 << 15)) >> 16 if m < 0x7FFF0000 else 0x7FFF
    t = 15 - s
    return o_wrap32((x * red + (1 << (t - 1))) >> t)


def o_quantize_multiplier(m: float) -> tuple[int, int]:
    if m == 0:
        return 0, 0
    f = Fraction(m)
    e = 0
    while abs(f) >= 1:
        f /= 2
        e += 1
    while abs(f) < Fraction(1, 2):
        f *= 2
        e -= 1
    v = abs(f) * 2**31
    n = int(v)
    if v - n >= Fraction(1, 2):
        n += 1
    q = n if f > 0 else -n
    if q == 2**31:
        q, e = q // 2, e + 1
    if e < -31:
        return 0, 0
    return q, e


def test_srdhm_int16_exhaustive_against_one_operand() -> None:
    a = np.arange(-(2**15), 2**15, dtype=np.int64)
    for b in (-(2**15), -12345, -1, 0, 1, 777, 16384, 2**15 - 1):
        got = qu.srdhm(a, b, bits=16)
        want = np.array([o_srdhm(int(v), b, 16) for v in a], np.int64)
        assert np.array_equal(got, want)


def test_rdbp_exhaustive_int16_all_exponents() -> None:
    x = np.arange(-(2**15), 2**15, dtype=np.int64)
    for e in range(0, 17):
        want = np.array([o_rdbp(int(v), e) for v in x[::7]], np.int64)
        assert np.array_equal(qu.rounding_divide_by_pot(x[::7], e), want)


@given(st.lists(st.tuples(I32, I32), min_size=1, max_size=50))
def test_srdhm_int32(pairs: list[tuple[int, int]]) -> None:
    a = np.array([p[0] for p in pairs], np.int64)
    b = np.array([p[1] for p in pairs], np.int64)
    assert qu.srdhm(a, b).tolist() == [o_srdhm(x, y) for x, y in pairs]


@given(st.lists(st.tuples(I32, st.integers(0, 2**31 - 1), st.integers(-31, 30)), min_size=1, max_size=40))
def test_mbqm_int32(cases: list[tuple[int, int, int]]) -> None:
    x, m, s = (np.array(c, np.int64) for c in zip(*cases))
    assert qu.multiply_by_quantized_multiplier(x, m, s).tolist() == [o_mbqm(*c) for c in cases]


@given(st.lists(st.tuples(st.integers(-(2**47), 2**47 - 1), st.integers(0, 2**31 - 1),
                          st.integers(-31, 7)), min_size=1, max_size=40))
def test_mbqm_int64(cases: list[tuple[int, int, int]]) -> None:
    x, m, s = (np.array(c, np.int64) for c in zip(*cases))
    assert qu.multiply_by_quantized_multiplier_int64(x, m, s).tolist() == [o_mbqm64(*c) for c in cases]


@given(st.floats(min_value=1e-12, max_value=1e6, allow_nan=False) | st.sampled_from(
    [0.0, 1.0, 0.5, 0.9999999999, 1 - 2.0**-33, 2.0**-31, 2.0**-32, 3e-10, -0.25, -0.75]))
def test_quantize_multiplier(m: float) -> None:
    assert qu.quantize_multiplier(m) == o_quantize_multiplier(m)


def test_quantize_multiplier_round_up_to_pow2() -> None:
    # q * 2**31 rounds to 2**31: the multiplier is halved and the shift incremented
    m = 1 - 2.0**-33
    assert qu.quantize_multiplier(m) == (2**30, 1)
    mm, ss = qu.quantize_multipliers(np.array([m, 0.5, 0.0]))
    assert mm.tolist() == [2**30, 2**30, 0] and ss.tolist() == [1, 0, 0]


def test_wrap_and_saturate() -> None:
    v = np.array([2**31, -(2**31) - 1, 5, 300, -129], np.int64)
    assert qu.wrap(v, 32).tolist() == [-(2**31), 2**31 - 1, 5, 300, -129]
    assert qu.wrap(v, 8).tolist() == [0, -1, 5, 44, 127]
    assert qu.saturate(v, 8).tolist() == [127, -128, 5, 127, -128]


def test_downscale_multiplier() -> None:
    assert qu.downscale_int32_to_int16_multiplier(2**31 - 1) == 32767
    assert qu.downscale_int32_to_int16_multiplier(2**30) == 2**14
    assert qu.downscale_int32_to_int16_multiplier(2**30 + 2**15) == 2**14 + 1


@given(st.lists(st.tuples(I32, st.integers(0, 2**31 - 1)), min_size=1, max_size=30), st.integers(-31, 30))
def test_mbqm_int32_scalar_multiplier_and_shift(cases: list[tuple[int, int]], s: int) -> None:
    x = np.array([c[0] for c in cases], np.int64)
    m = cases[0][1]
    assert qu.multiply_by_quantized_multiplier(x, m, s).tolist() == [o_mbqm(int(v), m, s) for v in x]
    assert qu.multiply_by_quantized_multiplier(x, np.int64(m), np.int64(s)).tolist() == \
        [o_mbqm(int(v), m, s) for v in x]


def test_srdhm_saturates_only_min_times_min() -> None:
    lo = -(2**31)
    a = np.array([lo, lo, lo + 1, 2**31 - 1, lo], np.int64)
    b = np.array([lo, lo + 1, lo, lo, 2**31 - 1], np.int64)
    assert qu.srdhm(a, b).tolist() == [o_srdhm(int(x), int(y)) for x, y in zip(a, b)]
    assert qu.srdhm(a, lo).tolist() == [o_srdhm(int(x), lo) for x in a]


@given(st.lists(st.tuples(st.integers(-(2**61), 2**61), st.integers(0, 60)), min_size=1, max_size=40))
def test_rdbp_wide_values_scalar_and_array_exponents(cases: list[tuple[int, int]]) -> None:
    x = np.array([c[0] for c in cases], np.int64)
    e = np.array([c[1] for c in cases], np.int64)
    assert qu.rounding_divide_by_pot(x, e).tolist() == [o_rdbp(*c) for c in cases]
    k = cases[0][1]
    assert qu.rounding_divide_by_pot(x, k).tolist() == [o_rdbp(int(v), k) for v in x]


@given(st.lists(st.tuples(I32, st.integers(0, 63)), min_size=1, max_size=40))
def test_rdbp_int32_release_build_exponents(cases: list[tuple[int, int]]) -> None:
    def oracle(x: int, e: int) -> int:
        return o_rdbp(x, e) if e < 32 else (x >> (e - 32)) + (x >= 0)
    x = np.array([c[0] for c in cases], np.int64)
    e = np.array([c[1] for c in cases], np.int64)
    assert qu.rounding_divide_by_pot_int32(x, e).tolist() == [oracle(*c) for c in cases]
    k = cases[0][1]
    assert qu.rounding_divide_by_pot_int32(x, k).tolist() == [oracle(int(v), k) for v in x]
