"""pymli.arith.requant against the pure-Python oracle, over many values and parameter sets."""

from __future__ import annotations

import numpy as np
import pytest

from pymli import Platform, RoundMode, use_platform
from pymli.arith import requant as R
from pymli.arith.rounding import asr_rnd

from ..oracles import convolution as oracle

MODES = [RoundMode.UP, RoundMode.CONVERGENT]
EDGES = np.array([2**31 - 1, 2**31 - 2, -(2**31), -(2**31) + 1, 0, 1, -1, 2**30, -(2**30), 32767, -32768])


@pytest.mark.parametrize("mode", MODES)
def test_asr_rnd32_equals_c_model(mode):
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.integers(-(2**31), 2**31, 20000), EDGES])
    for n in range(32):
        want = asr_rnd(x, n, 32, mode)
        assert np.array_equal(R.asr_rnd32(x, n, mode), want)
        assert np.array_equal(R.asr_rnd32(x.astype(np.int32), n, mode), want)
    nn = rng.integers(0, 32, x.size)
    assert np.array_equal(R.asr_rnd32(x.astype(np.int32), nn, mode), asr_rnd(x, nn, 32, mode))


@pytest.mark.parametrize("mode", MODES)
def test_shift_round_equals_c_model_64(mode):
    rng = np.random.default_rng(2)
    y = rng.integers(-(2**61), 2**61, 20000)
    for n in range(63):
        assert np.array_equal(R.shift_round(y, n, mode), asr_rnd(y, n, 64, mode))


def test_norm32():
    vals = [0, 1, -1, 2, -2, 3, 2**30, -(2**30), 2**31 - 1, -(2**31), 12345, -12345]
    assert R.norm32(vals).tolist() == [oracle.norm(v) for v in vals]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("full", [False, True])
def test_sa8_out_params_and_cast(mode, full):
    rng = np.random.default_rng(3 + full)
    up = mode is RoundMode.UP
    for _ in range(60):
        in_s, out_s = (int(v) for v in rng.integers(1, 32768, 2))
        in_f, out_f = (int(v) for v in rng.integers(0, 32, 2))
        ws = rng.integers(1, 32768, 3)
        wf = rng.integers(0, 32, 3)
        with use_platform(Platform(mode, full)):
            mul, sh = R.sa8_out_params(in_s, in_f, out_s, out_f, ws, wf)
            acc = np.concatenate([rng.integers(-(2**31), 2**31, (40, 3)), rng.integers(-5000, 5000, (40, 3)),
                                  np.tile(EDGES[:, None], (1, 3))])
            zp = int(rng.integers(-128, 128))
            got = R.sa8_result_cast(acc, mul, sh, zp)
            for c in range(3):
                m, s = oracle.sa8_params(in_s, in_f, out_s, out_f, int(ws[c]), int(wf[c]), up, full)
                assert (int(mul[c]), int(sh[c])) == (m, s)
                want = [oracle.sa8_cast(int(a), m, s, zp, up, full) for a in acc[:, c]]
                assert got[:, c].tolist() == want


@pytest.mark.parametrize("mode", MODES)
def test_sa8_cast_fine_grained(mode):
    """Mid-range outputs, where a pre-shift or rounding slip changes values."""
    rng = np.random.default_rng(5)
    up = mode is RoundMode.UP
    for _ in range(100):
        mul = int(rng.integers(2**30, 2**31))
        sh = int(rng.integers(30, 46))
        acc = rng.integers(-(2**18), 2**18, 200)
        with use_platform(Platform(mode, False)):
            got = R.sa8_result_cast(acc, np.asarray([mul]), np.asarray([sh]), 0)
        assert got.tolist() == [oracle.sa8_cast(int(a), mul, sh, 0, up, False) for a in acc]


@pytest.mark.parametrize("full", [False, True])
def test_sa8_bias(full):
    rng = np.random.default_rng(6)
    b = np.concatenate([rng.integers(-(2**31), 2**31, 2000), EDGES])
    assert R.sa8_bias(b, full).tolist() == [oracle.sa8_bias(int(v), full) for v in b]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("acc_bits,out_bits", [(32, 16), (32, 8), (40, 16)])
def test_fx_bias_and_cast(mode, acc_bits, out_bits):
    rng = np.random.default_rng(7)
    up = mode is RoundMode.UP
    for _ in range(40):
        bshift = int(rng.integers(-3, 31))
        oshift = int(rng.integers(-2, 33))
        bias = rng.integers(-32768, 32768, 4)
        if acc_bits == 32:
            acc = np.concatenate([rng.integers(-(2**31), 2**31, (50, 4)), np.tile(EDGES[:, None], (1, 4))])
        else:
            acc = rng.integers(-(2**40), 2**40, (50, 4))
        with use_platform(Platform(mode)):
            b = R.fx_bias(bias, bshift, acc_bits)
            got = R.fx_result_cast(R.add_bias(acc, b, acc_bits), oshift, acc_bits, out_bits)
        p = {"kind": "fx", "in_frac": bshift, "w_frac": 0, "b_frac": 0, "out_frac": bshift - oshift, "acc_bits": acc_bits,
                 "out_bits": out_bits}
        want = [[oracle.finish_one(int(a), int(bias[c]), c, p, up, False) for c, a in enumerate(row)] for row in acc]
        assert got.tolist() == want


def test_relu_bounds():
    # FX16 with 8 fractional bits: relu6 -> [0, 6 * 256], relu1 -> [-256, 256]
    assert R.relu_bounds(R.RELU_6, 16, frac_bits=8) == (0, 1536)
    assert R.relu_bounds(R.RELU_1, 16, frac_bits=8) == (-256, 256)
    assert R.relu_bounds(R.RELU_GEN, 16, frac_bits=8) == (0, 32767)
    assert R.relu_bounds(R.RELU_NONE, 8) == (-128, 127)
    # large frac bits: 6 does not fit; clipped to the container
    assert R.relu_bounds(R.RELU_6, 16, frac_bits=15) == (0, 32767)
    # SA8: scale 2**-4 (16384 / 2**18), zero point -10: 6.0 -> 96 - 10; 1.0 -> 16 - 10; -1.0 -> -26
    assert R.relu_bounds(R.RELU_6, 8, zero_point=-10, scale=16384, frac_bits=18) == (-10, 86)
    assert R.relu_bounds(R.RELU_1, 8, zero_point=-10, scale=16384, frac_bits=18) == (-26, 6)
    assert R.relu_bounds(R.RELU_GEN, 8, zero_point=-10, scale=16384, frac_bits=18) == (-10, 127)


@pytest.mark.parametrize("mode", MODES)
def test_asr_rnd_int_equals_c_model(mode):
    r = np.random.default_rng(8)
    for bits in (16, 32, 64):
        xs = r.integers(-(2 ** (bits - 1)), 2 ** (bits - 1), 2000, dtype=np.int64, endpoint=False)
        ns = r.integers(-bits - 2, bits + 3, 2000)
        for x, n in zip(xs.tolist(), ns.tolist()):
            assert R.asr_rnd_int(x, n, bits, mode) == int(asr_rnd(x, n, bits, mode))
