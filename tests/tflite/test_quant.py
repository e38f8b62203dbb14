"""float -> (scale, scale_frac_bits) conversion and the sa32 bias parameters MLI's check accepts."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymli.errors import MliError
from pymli.models.qparams import QParams
from pymli.tflite.quant import bias_qparams, float_to_mli_scale, sa8_qparams


@given(st.floats(min_value=1e-30, max_value=1e4, allow_nan=False, allow_infinity=False))
@settings(max_examples=300)
def test_scale_range_and_error(s):
    q, f = float_to_mli_scale(s)
    assert 1 << 14 <= q < 1 << 15
    assert abs(q * 2.0 ** -f - s) <= s * 2.0 ** -15 * (1 + 1e-12)


def test_scale_exact_values_and_ties():
    assert float_to_mli_scale(1.0) == (1 << 14, 14)
    assert float_to_mli_scale(1 / 256) == (1 << 14, 22)
    # s * 2**sfb = 16384.5 exactly: a tie, rounded away from zero
    s = 16384.5 * 2.0 ** -20
    assert float_to_mli_scale(s) == (16385, 20)
    # just below 2**15 after rounding: moves one bit into the exponent
    s = (32768 - 0.25) * 2.0 ** -20
    assert float_to_mli_scale(s) == (1 << 14, 19)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf"), 1e-60, 1e60])
def test_scale_rejects(bad):
    with pytest.raises(ValueError):
        float_to_mli_scale(bad)


def test_bias_scale_passes_mli_check():
    from pymli.capi.convolution import check_bias_scale_asym

    rng = np.random.default_rng(0)
    for _ in range(50):
        in_q = sa8_qparams(np.array([rng.uniform(1e-4, 1.0)]), np.array([rng.integers(-128, 128)]))
        n = int(rng.integers(1, 9))
        w_q = sa8_qparams(rng.uniform(1e-5, 0.1, n), np.zeros(n, np.int64), dim=3 if n > 1 else -1)
        b_q = bias_qparams(in_q, w_q)
        x = in_q.tensor(np.zeros((2, 2, 1), np.int8))
        w = w_q.tensor(np.zeros((1, 1, 1, n), np.int8))
        b = b_q.tensor(np.zeros(n, np.int32))
        check_bias_scale_asym(x, w, b)   # raises MliError if the scales do not match
        real_b = b_q.step()
        assert np.allclose(real_b, in_q.step() * w_q.step(), rtol=2 ** -13)


def test_bias_check_would_fail_on_wrong_scale():
    from pymli.capi.convolution import check_bias_scale_asym

    in_q = sa8_qparams(np.array([0.01]), np.array([0]))
    w_q = sa8_qparams(np.array([0.02]), np.array([0]))
    b_q = bias_qparams(in_q, w_q)
    wrong = QParams.sa(0, int(b_q.scale) + 5, int(b_q.scale_frac_bits), el_type=b_q.el_type)
    with pytest.raises(MliError):
        check_bias_scale_asym(in_q.tensor(np.zeros((1, 1, 1), np.int8)), w_q.tensor(np.zeros((1, 1, 1, 1), np.int8)),
                              wrong.tensor(np.zeros(1, np.int32)))
    assert math.isfinite(float(b_q.step()))
