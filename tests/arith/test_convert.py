"""pymli.arith.convert against the pure-Python oracle."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymli import RoundMode
from pymli.arith import convert as C

from ..oracles import convert as O

MODES = {O.UP: RoundMode.UP, O.CONV: RoundMode.CONVERGENT}


@pytest.mark.parametrize("bits", [8, 16])
def test_norm_exhaustive(bits: int) -> None:
    lo, hi = O.lim(bits)
    xs = np.arange(lo, hi + 1, dtype=np.int64)
    assert C.norm(xs, bits).tolist() == [O.norm(int(x), bits) for x in xs.tolist()]


@given(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=10))
def test_norm_64(xs: list[int]) -> None:
    assert C.norm(np.array(xs, dtype=np.int64), 64).tolist() == [O.norm(x, 64) for x in xs]


@given(st.lists(st.integers(-(2**31), 2**31 - 1), min_size=1, max_size=10))
def test_norm_32_and_bit_length(xs: list[int]) -> None:
    arr = np.array(xs, dtype=np.int64)
    assert C.norm(arr, 32).tolist() == [O.norm(x, 32) for x in xs]
    assert C.bit_length(np.abs(arr)).tolist() == [abs(x).bit_length() for x in xs]


@given(st.lists(st.tuples(st.integers(-(2**31), 2**31 - 1), st.integers(-(2**31), 2**31 - 1).filter(bool)),
                min_size=1, max_size=10))
def test_trunc_div(pairs: list[tuple[int, int]]) -> None:
    a = np.array([p[0] for p in pairs], dtype=np.int64)
    b = np.array([p[1] for p in pairs], dtype=np.int64)
    assert C.trunc_div(a, b).tolist() == [O.cdiv(x, y) for x, y in pairs]


scale16 = st.integers(1, 32767)
frac8 = st.integers(-40, 60)


@given(st.lists(st.tuples(scale16, frac8, scale16, frac8), min_size=1, max_size=6), st.sampled_from([O.UP, O.CONV]))
def test_requant_params(params: list[tuple[int, int, int, int]], mode: str) -> None:
    cols = [np.array(c, dtype=np.int64) for c in zip(*params)]
    scale, shift = C.requant_params(*cols, mode=MODES[mode])
    want = [O.requant_params(*p, mode) for p in params]
    assert scale.tolist() == [w[0] for w in want]
    assert shift.tolist() == [w[1] for w in want]


@pytest.mark.parametrize("in_bits,out_bits,wide", [(8, 8, False), (8, 16, False), (16, 8, False), (16, 16, False),
                                                   (8, 32, True), (16, 32, True), (32, 8, True), (32, 16, True),
                                                   (32, 32, True)])
@given(data=st.data())
def test_requantize(in_bits: int, out_bits: int, wide: bool, data: st.DataObject) -> None:
    lo, hi = O.lim(in_bits)
    xs = data.draw(st.lists(st.integers(lo, hi), min_size=1, max_size=8))
    in_zp = data.draw(st.integers(-32768, 32767))
    out_zp = data.draw(st.integers(-32768, 32767))
    in_scale, out_scale = data.draw(scale16), data.draw(scale16)
    in_frac, out_frac = data.draw(frac8), data.draw(frac8)
    mode = data.draw(st.sampled_from([O.UP, O.CONV]))
    scale, shift = O.requant_params(in_scale, in_frac, out_scale, out_frac, mode)
    got = C.requantize(np.array(xs, dtype=np.int64), in_zp, scale, shift, out_zp, wide=wide, out_bits=out_bits,
                       mode=MODES[mode])
    assert got.tolist() == [O.calc_convert(x, in_zp, scale, shift, out_zp, wide, out_bits, mode) for x in xs]


def _float_scale_oracle(v: float, s: float) -> int:
    v32, s32 = np.float32(v), np.float32(s)
    with np.errstate(over="ignore", invalid="ignore"):
        t = np.float32(v32 * s32) + (np.float32(0.5) if v32 > 0 else np.float32(-0.5))
    t = float(np.float32(t))
    if t != t or t >= 2**31 or t <= -(2**31) - 1:
        return -(2**31)
    return int(t)  # Python int() truncates toward zero


@given(st.lists(st.floats(width=32, allow_nan=True, allow_infinity=True), min_size=1, max_size=8),
       st.integers(-20, 40))
def test_float_scale(vals: list[float], frac: int) -> None:
    mult = C.quant_multiplier(1, frac)
    assert float(mult) == 2.0**frac
    got = C.float_scale(np.array(vals, dtype=np.float32), mult)
    assert got.tolist() == [_float_scale_oracle(v, float(mult)) for v in vals]


def test_float_scale_ties_away_from_zero() -> None:
    v = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.0, -0.0], dtype=np.float32)
    assert C.float_scale(v, np.float32(1)).tolist() == [1, 2, 3, -1, -2, -3, 0, 0]


def test_float_to_int32_out_of_range() -> None:
    v = np.array([np.nan, np.inf, -np.inf, 2.0**31, -(2.0**31), 2.0**31 - 128, -1.9], dtype=np.float32)
    assert C.float_to_int32(v).tolist() == [-(2**31), -(2**31), -(2**31), -(2**31), -(2**31), 2**31 - 128, -1]


@given(st.floats(1e-30, 1e30))
def test_split_scale(real: float) -> None:
    s, f = C.split_scale(np.array([real]))
    assert 16384 <= int(s[0]) <= 32767
    assert abs(int(s[0]) * 2.0 ** -int(f[0]) - real) <= 2.0 ** -int(f[0]) / 2 * 1.0000001
