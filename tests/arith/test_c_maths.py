"""The C maths helpers of pymli.arith.rounding (each written once) against pure-Python oracles."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from pymli.arith import geometry as G
from pymli.arith.rounding import bit_length, convergent_bump, norm, norm_cast, trunc_div, wrap_int
from pymli.formats import RoundMode


def _c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _norm(x: int, bits: int) -> int:
    x = ((x + (1 << (bits - 1))) % (1 << bits)) - (1 << (bits - 1))
    n = 0
    while n < bits - 1 and -(1 << (bits - 2 - n)) <= x < (1 << (bits - 2 - n)):
        n += 1
    return n


def test_wrap_int_exhaustive_16_bits() -> None:
    for v in range(-70000, 70000, 7):
        assert wrap_int(v, 16) == int(np.int64(v).astype(np.int16))
        assert wrap_int(v, 16, signed=False) == int(np.int64(v).astype(np.uint16))
    assert wrap_int(1 << 100, 32) == 0 and wrap_int((1 << 100) + 5, 32) == 5
    assert wrap_int(2**31, 32) == -2**31 and wrap_int(-1, 8, signed=False) == 255


def test_trunc_div_scalars_and_arrays() -> None:
    vals = range(-40, 41)
    for a in vals:
        for b in (-7, -3, -1, 1, 2, 5):
            assert trunc_div(a, b) == _c_div(a, b)
    a = np.arange(-300, 300, dtype=np.int64)
    for b in (-7, 3):
        assert trunc_div(a, b).tolist() == [_c_div(int(v), b) for v in a]
    assert trunc_div(-(10**30), 3) == -(10**30 // 3)  # Python ints stay exact


@given(st.integers(-(2**62), 2**62), st.integers(-(2**31), 2**31).filter(bool))
def test_trunc_div_wide(a: int, b: int) -> None:
    assert int(trunc_div(np.int64(a), np.int64(b))) == _c_div(a, b)
    assert int(trunc_div(np.array([a]), np.array([b]))[0]) == _c_div(a, b)


def test_norm_exhaustive_8_and_16_bits() -> None:
    for bits in (8, 16):
        xs = np.arange(-(1 << (bits - 1)), 1 << (bits - 1), dtype=np.int64)
        want = [_norm(int(x), bits) for x in xs]
        assert norm(xs, bits).tolist() == want
        assert [norm(int(x), bits) for x in xs[::97]] == want[::97]


@given(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=8))
def test_norm_and_bit_length_64(xs: list[int]) -> None:
    assert norm(np.array(xs, np.int64), 64).tolist() == [_norm(x, 64) for x in xs]
    assert bit_length(np.abs(np.array(xs, np.int64) >> 1)).tolist() == [abs(x >> 1).bit_length() for x in xs]


def test_convergent_bump_is_round_half_even() -> None:
    for n in range(1, 6):
        half = 1 << (n - 1)
        x = np.arange(-200, 200, dtype=np.int64)
        r = x >> n
        got = r + convergent_bump(x, r, half)
        want = [round(int(v) / (1 << n)) for v in x]  # Python's round: half to even
        assert got.tolist() == want
        assert [int(r[i]) + int(convergent_bump(int(x[i]), int(r[i]), half)) for i in range(0, 400, 13)] == want[::13]


def test_geometry() -> None:
    assert G.conv_out_size(7, 3, 2, 1, 1) == 4
    assert G.conv_out_size(7, 3, 1, 0, 0, dilation=2) == 3
    assert G.pool_out_size(4, 2, 2, 0, 0) == 2
    assert G.transpose_out_size(3, 4, 2, 1, 1) == 6
    assert [G.ceil_div(a, 3) for a in (-4, -3, 0, 1, 3, 4)] == [-1, -1, 0, 1, 1, 2]
    assert G.effective_kernel(3, 2) == 5
    assert G.same_padding(5, 3, 2) == (1, 1) and G.same_padding(6, 3, 2) == (0, 1)
    assert G.same_padding(4, 1, 1) == (0, 0) and G.same_padding(7, 3, 1, dilation=2) == (2, 2)
    for n in range(1, 12):
        for k in (1, 2, 3, 5):
            for s in (1, 2, 3):
                before, after = G.same_padding(n, k, s)
                assert G.conv_out_size(n, k, s, before, after) == G.ceil_div(n, s)


def test_norm_cast_scalar_and_array_agree() -> None:
    xs = np.array([0, 1, -1, 3, 12345, -12345, 2**30 + 7, -(2**31)], np.int64)
    for mode in RoundMode:
        vals, shifts = norm_cast(xs, 32, 16, mode)
        for x, v, s in zip(xs.tolist(), vals.tolist(), shifts.tolist()):
            assert norm_cast(x, 32, 16, mode) == (v, s)
            assert -(1 << 15) <= v < (1 << 15)
            assert s == 16 - _norm(x, 32)
