"""The int32 / cached-table fast paths of pymli.arith.lut and the softmax kernels equal the int64 models."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymli.arith import lut as L
from pymli.arith.rounding import asr_rnd, sat, wrap
from pymli.config import EM, VPX, use_platform
from pymli.kernels import transform as K

MODES = {"up": VPX, "convergent": EM}


def _odd_lut(kind: str, rng: np.random.Generator, offset: int | None = None):
    lut = L.create_lut(kind)
    lut.data = rng.integers(-32768, 32768, lut.length).astype(np.int16)
    lut.data[:4] = [-32768, 32767, -32768, 32767]
    if offset is not None:
        lut.input_offset = offset
    return lut


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(L.LUT_KINDS), st.integers(1, 30), st.booleans(), st.integers(-400, 400),
       st.sampled_from(list(MODES)), st.integers(0, 2**32 - 1))
def test_interpolate_int32_equals_int64(kind, extra_fb, odd, offset, mode, seed) -> None:
    rng = np.random.default_rng(seed)
    lut = _odd_lut(kind, rng, offset) if odd else L.create_lut(kind)
    fb = int(lut.in_frac_bits) + extra_fb
    x = np.concatenate([rng.integers(-2**31, 2**31, 300), rng.integers(-70000, 70000, 300),
                        [-2**31, 2**31 - 1, 0, -1, 1]])
    with use_platform(MODES[mode]):
        fast = L._lut_interpolate16(x, lut, fb)
        assert fast is not None
        assert np.array_equal(fast, L._lut_interpolate64(x, lut, fb))
        assert np.array_equal(L.lut_interpolate(x, lut, fb), L._lut_interpolate64(x, lut, fb))


def test_interpolate_falls_back_outside_int32_bounds() -> None:
    lut = L.create_lut("tanh")
    assert L._lut_interpolate16(np.array([2**31]), lut, 9) is None
    lut.input_offset = 1 << 20
    assert L._lut_interpolate16(np.array([5]), lut, 9) is None


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([8, 16]), st.sampled_from([0, -128]), st.integers(-3, 33), st.booleans(),
       st.sampled_from(list(MODES)), st.integers(0, 2**32 - 1))
def test_scale_round_sat_equals_int64_model(bits, zp, shift_lo, extremes, mode, seed) -> None:
    rng = np.random.default_rng(seed)
    e = rng.integers(-32768, 32768, (20, 30)).astype(np.int16)
    recip = rng.integers(-32768, 32768, (20, 1))
    if extremes:
        e[:, :5] = [-32768, 32767, -1, 0, 1]
        recip[:3, 0] = [-32768, 32767, -16384]
    shift = rng.integers(shift_lo, max(shift_lo + 1, 33), (20, 1))
    with use_platform(MODES[mode]):
        got = L.scale_round_sat(e, recip, shift, zp, bits)
        want = sat(wrap(asr_rnd(recip * e.astype(np.int64), shift, 32) + zp, 32), bits)
    assert got.dtype == (np.int8 if bits == 8 else np.int16)
    assert np.array_equal(got, want)


def test_shift_31_is_zero_in_both_modes() -> None:
    """The int32 path zeroes a slice whose shift reaches 31; the int64 model agrees at |x| = 2**30."""
    e = np.array([[-32768, 32767, -32768, 1]], np.int16)
    recip = np.array([[-32768]])
    for plat in MODES.values():
        with use_platform(plat):
            assert L.scale_round_sat(e, recip, 31, 0, 16).tolist() == [[0, 0, 0, 0]]
            assert asr_rnd(np.int64(2**30), 31, 32).item() == 0


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("bits", [8, 16])
def test_code_tables_equal_direct_evaluation(mode, bits) -> None:
    lut = L.create_lut("sigm")
    dt = np.int8 if bits == 8 else np.int16
    codes = np.arange(-(1 << (bits - 1)), 1 << (bits - 1)).astype(dt)
    with use_platform(MODES[mode]):
        for fb in (-3, 2, 4, 7, 11, 19, 40):
            tab = L.fx_activation_codes(lut, fb, bits, bits)
            assert np.array_equal(np.take(tab, codes.view(f"u{dt().itemsize}")),
                                  L.activation_fx(codes.astype(np.int64), lut, fb, bits))
            ex = L.fx_exp_codes(L.create_lut("softmax"), fb, bits, bits)
            k = np.arange(1 << bits)
            assert np.array_equal(ex, L.activation_fx(-k, L.create_lut("softmax"), fb, bits))


def test_code_table_cache_follows_lut_contents_and_rounding() -> None:
    lut = L.create_lut("tanh")
    t1 = L.fx_activation_codes(lut, 11, 16, 16).copy()
    lut.data = lut.data.copy()
    lut.data[172] += 100  # the entry of input 0 changes: the cached table must not be reused
    t2 = L.fx_activation_codes(lut, 11, 16, 16)
    assert not np.array_equal(t1, t2)
    assert np.array_equal(t2, L.activation_fx(np.arange(65536).astype(np.uint16).view(np.int16), lut, 11, 16))
    with use_platform(EM):
        t3 = L.fx_activation_codes(lut, 13, 16, 16)
    with use_platform(VPX):
        t4 = L.fx_activation_codes(lut, 13, 16, 16)
    codes = np.arange(65536).astype(np.uint16).view(np.int16)
    with use_platform(EM):
        assert np.array_equal(t3, L.activation_fx(codes, lut, 13, 16))
    assert np.array_equal(t4, L.activation_fx(codes, lut, 13, 16))


def _softmax_fx_direct(x, lut, fb, bits, axis):
    """The int64 model of the reference softmax, slice by slice through the scalar formulas."""
    xv = x.astype(np.int64)
    red = tuple(range(xv.ndim)) if axis < 0 else (axis,)
    mx = xv.max(axis=red, keepdims=True)
    e = L.activation_fx(xv, lut, fb, bits, in_offset=mx)
    sum_exp, recip = K._recip_of_sum(e.sum(axis=red, keepdims=True), bits)
    shift = np.minimum(2 * int(lut.out_frac_bits) + 15 - sum_exp - (bits - 1), 2 * bits - 1)
    return sat(asr_rnd(recip * e, shift, 32), bits)


@settings(max_examples=25, deadline=None)
@given(st.sampled_from([8, 16]), st.integers(-1, 2), st.integers(-2, 16), st.booleans(),
       st.sampled_from(list(MODES)), st.integers(0, 2**32 - 1))
def test_softmax_fx_table_path_equals_direct(bits, axis, fb, odd, mode, seed) -> None:
    rng = np.random.default_rng(seed)
    dt = np.int8 if bits == 8 else np.int16
    info = np.iinfo(dt)
    x = rng.integers(info.min, info.max + 1, (40, 30, 20)).astype(dt)  # 24000 elements: table path
    x[0, 0, :3] = [info.min, info.max, 0]
    lut = _odd_lut("softmax", rng) if odd else L.create_lut("softmax")
    with use_platform(MODES[mode]):
        got = K.softmax_fx(x, lut, in_frac_bits=fb, bits=bits, axis=axis)
        assert np.array_equal(got, _softmax_fx_direct(x, lut, fb, bits, axis))
        small = x[:2, :3]  # direct path
        assert np.array_equal(K.softmax_fx(small, lut, in_frac_bits=fb, bits=bits, axis=axis),
                              _softmax_fx_direct(small, lut, fb, bits, axis))


@settings(max_examples=25, deadline=None)
@given(st.integers(-1, 2), st.integers(1, 32767), st.integers(0, 30), st.sampled_from(list(MODES)),
       st.integers(0, 2**32 - 1))
def test_softmax_sa8_gather_equals_direct(axis, scale, shift, mode, seed) -> None:
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (30, 20, 10)).astype(np.int8)
    lut = L.create_lut("softmax")
    with use_platform(MODES[mode]):
        got = K.softmax_sa8(x, lut, in_scale=scale, in_shift=shift, axis=axis)
        want = K.softmax_sa8(x.astype(np.int16), lut, in_scale=scale, in_shift=shift, axis=axis)  # direct path
        red = tuple(range(3)) if axis < 0 else (axis,)
        xv = x.astype(np.int64)
        fb = L.sa8_lut_in_frac_bits(lut)
        e = L.lut_interpolate(L.sa8_to_lut_input(xv - xv.max(axis=red, keepdims=True), 0, scale, shift, fb), lut, fb)
        sum_exp, recip = K._recip_of_sum(e.sum(axis=red, keepdims=True), 16)
        sh = np.minimum(30 + 15 - sum_exp - 8, 31)
        model = L.fx16_to_sa8(recip * e, -128, sh)
    assert np.array_equal(got, want) and np.array_equal(got, model)
