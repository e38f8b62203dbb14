"""Parameter choice from float data, in one place (:mod:`pymli.quant`), for every front end."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from pymli.formats import ElType
from pymli.quant import bias_scale, fx_frac_for_range, quantize_values, sa8_range_params, sa_scale_repr
from pymli.tflite.quant import quantize_input


def _bias_scale_oracle(s_in: int, f_in: int, ws: list[int], wf: list[int]) -> tuple[list[int], list[int]]:
    """Python integers: in x weights scale, shifted back to 15 bits rounding half up."""
    scales, fracs = [], []
    for s, f in zip(ws, wf):
        p = s_in * s
        sh = max(p.bit_length() - 15, 0)
        sc = (p + (1 << (sh - 1))) >> sh if sh else p
        if sc >= 1 << 15:
            sc, sh = sc >> 1, sh + 1
        scales.append(sc)
        fracs.append(f_in + f - sh)
    return scales, fracs


@given(st.integers(1, 32767), st.integers(-20, 40), st.lists(st.integers(1, 32767), min_size=1, max_size=6),
       st.integers(-20, 40))
def test_bias_scale_is_the_rounded_product(s_in: int, f_in: int, ws: list[int], f_w: int) -> None:
    wf = [f_w] * len(ws)
    sc, sfb = bias_scale(s_in, f_in, ws, wf)
    want_s, want_f = _bias_scale_oracle(s_in, f_in, ws, wf)
    assert sc.tolist() == want_s and sfb.tolist() == want_f
    real = np.asarray(ws, np.float64) * s_in * 2.0 ** -(f_in + f_w)
    assert np.all(np.abs(sc * 2.0 ** -sfb.astype(np.float64) / real - 1) <= 2.0 ** -14)


@given(st.floats(1e-6, 1e6), st.sampled_from([8, 16]), st.integers(0, 3))
def test_fx_frac_for_range_is_the_largest_that_fits(m: float, bits: int, head: int) -> None:
    f = fx_frac_for_range(m, bits, head)
    top = (1 << (bits - 1)) - 1
    assert m * 2.0 ** (f + head) <= top < m * 2.0 ** (f + head + 1)
    assert fx_frac_for_range(m, bits, head, max_frac=f - 2) == f - 2


def test_fx_frac_for_zero_range() -> None:
    assert fx_frac_for_range(0.0, 16) == 15 and fx_frac_for_range(0.0, 16, max_frac=26) == 26


@given(st.floats(-100, 0), st.floats(0, 100), st.integers(0, 2))
def test_network_policy_holds_the_range(lo: float, hi: float, head: int) -> None:
    if hi - lo <= 1e-6:
        return
    zp, s, f = sa8_range_params(lo, hi, levels=255.0 / (1 << head), round_up=True, zero_point_at="min")
    step = s * 2.0 ** -f
    assert step >= (hi - lo) / 255.0 * (1 << head)   # rounded up: the range always fits
    q = np.asarray([lo, hi]) / step + zp
    assert -128.5 <= q[0] and q[1] <= 127.5


@given(st.floats(-100, 0), st.floats(0, 100))
def test_mli_test_quantiser_policy_centres_the_range(lo: float, hi: float) -> None:
    if hi - lo <= 1e-6:
        return
    zp, s, f = sa8_range_params(lo, hi)
    step = s * 2.0 ** -f
    assert 2**14 <= s < 2**15 and math.isclose(step, (hi - lo) / 254, rel_tol=2**-14)
    assert abs(zp + (hi + lo) / 2 / step) <= 0.5 or zp in (-128, 127)


def test_sa_scale_repr_rounds_up_on_request() -> None:
    for v in (0.1, 1 / 3, 2.0 ** -20 * 1.00001):
        s, f = sa_scale_repr(v, round_up=True)
        assert s[0] * 2.0 ** -f[0] >= v
        s, f = sa_scale_repr(v)
        assert abs(s[0] * 2.0 ** -f[0] / v - 1) <= 2.0 ** -15


def test_offline_rounding_is_half_away_from_zero_and_saturates() -> None:
    q = quantize_values([0.5, -0.5, 1.5, 2.5, -2.5, 300.0, -300.0], 1.0, 0, ElType.SA_8)
    assert q.tolist() == [1, -1, 2, 3, -3, 127, -128]
    assert quantize_values([0.25], 0.5, 3, ElType.FX_16).dtype == np.int16


def test_tflite_boundary_quantize_rounds_the_float32_quotient_as_c_round() -> None:
    below_half = np.nextafter(np.float32(0.5), np.float32(0))   # 0.49999997f: C round() gives 0
    x = np.asarray([below_half, 0.5, -0.5, 1.5, -1.5, 200.0], np.float32)
    assert quantize_input(x, 1.0, 0).tolist() == [0, 1, -1, 2, -2, 127]
    assert quantize_input(np.float32([0.3]), 0.1, -5).tolist() == [-2]
