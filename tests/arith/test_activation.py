"""pymli.arith.activation against scalar oracles (exhaustive where the type is small)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymli.arith import activation as A
from pymli.config import EM, VPX, use_platform

from ..oracles import activation as C


def test_norm_exhaustive_int16() -> None:
    x = np.arange(-(1 << 15), 1 << 15)
    want = np.array([C.norm(int(v), 16) for v in x])
    assert np.array_equal(A.norm(x, 16), want)


@given(st.lists(st.integers(-(1 << 31), (1 << 31) - 1), min_size=1, max_size=50))
def test_norm_int32(vals: list[int]) -> None:
    assert A.norm(np.array(vals), 32).tolist() == [C.norm(v, 32) for v in vals]


@pytest.mark.parametrize("platform", [VPX, EM], ids=["up", "conv"])
@given(vals=st.lists(st.integers(-(1 << 31), (1 << 31) - 1), min_size=1, max_size=50))
def test_norm_cast_32_to_16(platform, vals: list[int]) -> None:
    with use_platform(platform):
        got, ns = A.norm_cast(np.array(vals), 32, 16)
    want = [C.norm_cast(v, 32, 16, platform is VPX) for v in vals]
    assert got.tolist() == [w[0] for w in want]
    assert ns.tolist() == [w[1] for w in want]


def test_norm_cast_16_exhaustive() -> None:
    x = np.arange(-(1 << 15), 1 << 15)
    got, ns = A.norm_cast(x, 16, 16)
    want = [C.norm_cast(int(v), 16, 16, True) for v in x]
    assert got.tolist() == [w[0] for w in want] and ns.tolist() == [w[1] for w in want]


def test_c_div_truncates() -> None:
    assert [A.c_div(7, 2), A.c_div(-7, 2), A.c_div(7, -2), A.c_div(-7, -2)] == [3, -3, -3, 3]


def test_relu_limits_by_hand() -> None:
    # sa8 zero point -10, scale 19500 * 2^-20: six = 6 * 2^20 / 19500 = 322 steps (clipped to 127).
    assert A.relu_limits(A.RELU_6, 8, -10, 19500, 20) == (-10, 127)
    # one = 2^20 / 19500 = 53 steps each side of the zero point.
    assert A.relu_limits(A.RELU_1, 8, -10, 19500, 20) == (-63, 43)
    assert A.relu_limits(A.RELU_GEN, 8, -10, 19500, 20) == (-10, 127)
    assert A.relu_limits(A.RELU_NONE, 16) == (-32768, 32767)
    # fx: frac_bits 4 -> six = 96, one = 16; huge shifts saturate to the container.
    assert A.relu_limits(A.RELU_6, 8, 0, 1, 4) == (0, 96)
    assert A.relu_limits(A.RELU_1, 16, 0, 1, 4) == (-16, 16)
    assert A.relu_limits(A.RELU_6, 16, 0, 1, 40) == (0, 32767)
    assert A.relu_limits(A.RELU_6, 8, 0, 1, -2) == (0, 1)
    assert A.relu_limits(A.RELU_1, 8, 0, 1, -1) == (0, 0)


@pytest.mark.parametrize("platform", [VPX, EM], ids=["up", "conv"])
@given(x=st.lists(st.integers(-128, 127), min_size=1, max_size=40), slope=st.integers(-128, 127),
       shift=st.integers(-4, 40))
def test_leaky_fx8_matches_oracle(platform, x: list[int], slope: int, shift: int) -> None:
    with use_platform(platform):
        s, sh = A.leaky_fx_slope(slope, shift, 8, False)
        got = A.leaky_relu_fx(np.array(x), s, sh, 8)
    assert got.tolist() == [C.leaky_fx(v, slope, shift, 8, False, platform is VPX) for v in x]


@pytest.mark.parametrize("platform", [VPX, EM], ids=["up", "conv"])
@given(x=st.lists(st.integers(-32768, 32767), min_size=1, max_size=40), slope=st.integers(-32768, 32767),
       shift=st.integers(-4, 34), normalise=st.booleans())
def test_leaky_fx16_matches_oracle(platform, x: list[int], slope: int, shift: int, normalise: bool) -> None:
    with use_platform(platform):
        s, sh = A.leaky_fx_slope(slope, shift, 16, normalise)
        got = A.leaky_relu_fx(np.array(x), s, sh, 16)
    assert got.tolist() == [C.leaky_fx(v, slope, shift, 16, normalise, platform is VPX) for v in x]


sa_scale = st.integers(1, 32767)
sa_sfb = st.integers(0, 31)


@pytest.mark.parametrize("platform", [VPX, EM], ids=["up", "conv"])
@given(in_q=st.tuples(st.integers(-128, 127), sa_scale, sa_sfb), out_q=st.tuples(st.integers(-128, 127), sa_scale, sa_sfb),
       sl_q=st.tuples(st.integers(-16384, 16383), sa_scale, sa_sfb), alpha=st.lists(st.integers(-128, 127), min_size=1, max_size=4),
       x=st.lists(st.integers(-128, 127), min_size=1, max_size=30))
def test_leaky_sa8_matches_oracle(platform, in_q, out_q, sl_q, alpha, x) -> None:
    up = platform is VPX
    with use_platform(platform):
        ident = A.sa8_identity_params(in_q[1], in_q[2], out_q[1], out_q[2], out_q[0])
        al = A.sa8_alpha_params(np.array(alpha), sl_q[0], sl_q[1], sl_q[2], ident)
        for j, a in enumerate(alpha):
            one = A.SaRequant(al.scale[j], al.shift[j], al.offset[j])
            got = A.leaky_relu_sa8(np.array(x), in_q[0], ident, one).tolist()
            ri, ra = C.sa8_params(in_q[1], in_q[2], out_q[1], out_q[2], out_q[0], a, *sl_q, up)
            want = [C.leaky_sa8(v, in_q[0], ri, ra, up) for v in x]
            assert got == want
