"""pymli.arith.lut: tables, lookups and conversions against the scalar oracle."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymli.arith import lut as L
from pymli.config import EM, VPX, use_platform
from pymli.tensor import Lut

from ..oracles import lut as O

MODES = {"up": VPX, "convergent": EM}
ACTS = ("sigm", "tanh")


def _fields(kind: str):
    s = L.LUT_SPECS[kind]
    return [int(v) for v in L.lut_table(kind)], s.in_frac_bits, s.out_frac_bits, s.input_offset


# ------------------------------------------------------------------ tables
@pytest.mark.parametrize("kind", L.LUT_KINDS)
def test_table_layout(kind: str) -> None:
    s = L.LUT_SPECS[kind]
    t = L.lut_table(kind)
    assert t.dtype == np.int16 and t.shape == (s.length,)
    assert not t.flags.writeable
    assert L.lut_size(kind) == 2 * s.length


def test_known_entries() -> None:
    # Spot values of MLI 2.0.2's constant tables.
    assert L.lut_table("sigm")[160] == 16384 and L.lut_table("sigm")[0] == 1 and L.lut_table("sigm")[-1] == 32766
    assert L.lut_table("tanh")[172] == 0 and L.lut_table("tanh")[-1] == 32767
    assert L.lut_table("softmax")[356] == 32767 and L.lut_table("softmax")[0] == 0
    assert L.lut_table("l2_normalize")[0] == 23170 and L.lut_table("l2_normalize")[32] == 16384


@pytest.mark.parametrize("kind", ("sigm", "tanh", "softmax"))
def test_tables_monotone(kind: str) -> None:
    assert np.all(np.diff(L.lut_table(kind).astype(int)) >= 0)


def test_invsqrt_table_decreasing() -> None:
    assert np.all(np.diff(L.lut_table("l2_normalize").astype(int)) < 0)


def test_table_matches_golden(shared) -> None:
    for kind in L.LUT_KINDS:
        f = shared / "golden" / f"mli_krn_{kind}_create_lut" / "0.npz"
        if not f.exists():
            pytest.skip("no golden create_lut case")
        with np.load(f) as z:
            assert np.array_equal(L.lut_table(kind), z["lut.data"])


@pytest.mark.parametrize("kind", L.LUT_KINDS)
def test_create_lut_in_place(kind: str) -> None:
    s = L.LUT_SPECS[kind]
    buf = np.full(s.length + 5, -7, np.int16)
    lut = L.create_lut(kind, Lut(data=buf, capacity=buf.nbytes))
    assert lut.data is buf
    assert np.array_equal(buf[: s.length], L.lut_table(kind)) and np.all(buf[s.length:] == -7)
    assert (lut.length, lut.in_frac_bits, lut.out_frac_bits, lut.input_offset) == (
        s.length, s.in_frac_bits, s.out_frac_bits, s.input_offset)
    with pytest.raises(ValueError):
        L.create_lut(kind, Lut(data=np.zeros(3, np.int16), capacity=6))


# ------------------------------------------------------------------ fx lookups, exhaustive over int8 codes
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", ACTS)
@pytest.mark.parametrize("out_bits", (8, 16))
def test_activation_fx_int8_codes_vs_oracle(mode: str, kind: str, out_bits: int) -> None:
    table, lin, _, off = _fields(kind)
    lut = L.create_lut(kind)
    x = np.arange(-128, 128)
    with use_platform(MODES[mode]):
        for fb in range(-4, 26, 3):
            got = L.activation_fx(x, lut, fb, out_bits)
            want = [O.act_fx_one(int(v), table, lin, off, fb, out_bits, mode) for v in x]
            assert got.tolist() == want, fb


@given(st.lists(st.integers(-32768, 32767), min_size=1, max_size=40), st.integers(-8, 40),
       st.sampled_from(ACTS + ("softmax",)), st.sampled_from(list(MODES)))
def test_lut_lookup_fx16_vs_oracle(xs, fb, kind, mode) -> None:
    table, lin, _, off = _fields(kind)
    lut = L.create_lut(kind)
    with use_platform(MODES[mode]):
        got = L.lut_lookup(np.array(xs), lut, fb)
    assert got.tolist() == [O.lookup_one(v, table, lin, off, fb, mode) for v in xs]


@given(st.lists(st.integers(-2**31, 2**31 - 1), min_size=1, max_size=20), st.integers(5, 30))
def test_interpolate_int32_inputs(xs, fb) -> None:
    table, lin, _, off = _fields("tanh")
    got = L.lut_interpolate(np.array(xs, dtype=np.int64), L.create_lut("tanh"), fb)
    assert got.tolist() == [O.interp_one(v, table, lin, off, fb, "up") for v in xs]


def test_interpolate_rejects_coarse_input() -> None:
    with pytest.raises(ValueError):
        L.lut_interpolate(np.array([1]), L.create_lut("sigm"), 2)


def test_interpolation_hits_table_points() -> None:
    lut = L.create_lut("sigm")
    # Inputs on the table grid give the table entries themselves, whatever the input precision.
    grid = np.arange(-160, 159)
    for fb in (5, 9, 15):
        assert np.array_equal(L.lut_lookup(grid << (fb - 4), lut, fb), L.lut_table("sigm")[grid + 160])


# ------------------------------------------------------------------ sa8
@given(st.integers(-128, 127), st.integers(1, 32767), st.integers(0, 31), st.sampled_from(ACTS),
       st.sampled_from(list(MODES)))
def test_activation_sa8_all_codes_vs_oracle(zp, scale, shift, kind, mode) -> None:
    table, lin, lout, off = _fields(kind)
    out_zp, out_shift = (-128, 8) if kind == "sigm" else (0, 7)
    x = np.arange(-128, 128)
    with use_platform(MODES[mode]):
        got = L.activation_sa8(x, L.create_lut(kind), zp, scale, shift, out_zp, out_shift)
    want = [O.act_sa8_one(int(v), table, lin, lout, off, zp, scale, shift, out_zp, out_shift, mode) for v in x]
    assert got.tolist() == want


def test_sa8_conversions() -> None:
    # (x - zp) * scale >> (shift - frac) with rounding, saturating left shifts.
    assert L.sa8_to_lut_input(np.array([10]), 2, 3, 4, 4).tolist() == [24]
    assert L.sa8_to_lut_input(np.array([127]), -128, 32767, 0, 20).tolist() == [2**31 - 1]
    assert L.fx16_to_sa8(np.array([32767, 0, -32768]), -128, 7).tolist() == [127, -128, -128]
    assert L.sa8_lut_in_frac_bits(L.create_lut("sigm")) == 12


def test_rounding_follows_platform() -> None:
    lut = L.create_lut("sigm")
    x = np.arange(-2000, 2000)
    with use_platform(VPX):
        up = L.activation_fx(x, lut, 9, 8)
    with use_platform(EM):
        conv = L.activation_fx(x, lut, 9, 8)
    assert not np.array_equal(up, conv)
    assert np.max(np.abs(up - conv)) == 1
