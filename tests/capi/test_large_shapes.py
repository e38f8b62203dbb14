"""Realistic layer sizes: accumulator widths and exact sums where a reduction is thousands long.

Expected values are derived by hand from the C reference semantics (comments show the arithmetic);
they were also cross-checked against the C library during differential fuzzing.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pymli import EM, VPX, Tensor, use_platform
from pymli.capi import (
    Conv2dCfg,
    FullyConnectedCfg,
    mli_krn_conv2d_hwcn_fx16,
    mli_krn_fully_connected_fx16_fx8_fx8,
    mli_krn_fully_connected_sa8_sa8_sa32,
)

FULL = dataclasses.replace(VPX, full_accu=True)


@pytest.mark.parametrize(("platform", "expected"), [(VPX, -16447), (EM, -16448), (FULL, -16447)])
def test_fc_fx16_fx8_fx8_4096_saturated_inputs_wrap_the_32_bit_accumulator(platform, expected):
    # fx16 x fx8 MACs accumulate in a 32-bit integer. 4096 * 32767 * 127 = 17_045_131_264,
    # which wraps to 17_045_131_264 - 4 * 2**32 = -134_737_920. out_shift = 0 + 0 - (-13) = 13:
    # -134_737_920 / 2**13 = -16447.5, a tie: ROUND_UP gives -16447, convergent rounding the even -16448.
    n, m = 4096, 4
    x = Tensor.from_numpy(np.full(n, 32767), "FX_16", frac_bits=0)
    w = Tensor.from_numpy(np.full((n, m), 127), "FX_8", frac_bits=0)
    b = Tensor.from_numpy(np.zeros(m), "FX_8", frac_bits=0)
    out = Tensor.from_numpy(np.zeros(m), "FX_16", frac_bits=-13)
    with use_platform(platform):
        mli_krn_fully_connected_fx16_fx8_fx8(x, w, b, FullyConnectedCfg(), out)
    assert out.numpy().tolist() == [expected] * m


def test_conv2d_fx16_7x7x256_saturated_sum_is_not_cut_to_40_bits():
    # The x86 reference's 40-bit accumulator type is a plain int64: a 7x7x256 window of 32767 * 32767
    # sums to 12544 * 1_073_676_289 = 13_468_195_369_216 (beyond 2**40) without wrap-around.
    # out_shift = 15 + 15 - 1 = 29: 13_468_195_369_216 / 2**29 = 25086.47 -> 25086
    # (a 40-bit wrap would leave 274_055_835_904 -> 510).
    x = Tensor.from_numpy(np.full((7, 7, 256), 32767), "FX_16", frac_bits=15)
    w = Tensor.from_numpy(np.full((7, 7, 256, 2), 32767), "FX_16", frac_bits=15)
    b = Tensor.from_numpy(np.zeros(2), "FX_16", frac_bits=15)
    out = Tensor.from_numpy(np.zeros((1, 1, 2)), "FX_16", frac_bits=1)
    cfg = Conv2dCfg(stride_width=1, stride_height=1, dilation_width=1, dilation_height=1)
    for platform in (VPX, EM, FULL):
        with use_platform(platform):
            mli_krn_conv2d_hwcn_fx16(x, w, b, cfg, out)
        assert out.numpy().ravel().tolist() == [25086, 25086]


@pytest.mark.parametrize(("platform", "expected"), [(VPX, -8), (EM, -8), (FULL, -127)])
def test_fc_sa8_4096_inputs_exact_sum_beyond_float32(platform, expected):
    # in_zp 127, x = -128 (centred -255) except the last -103 (centred -230); weights 127 except the
    # last row 123: sum = 4095 * (-255 * 127) + (-230 * 123) = -132_644_865. That is not a float32
    # value (its neighbour -132_644_864 = -126.5 * 2**20 is a rounding tie), so only an exact sum
    # gives the right result. Scales 1, output scale 2**20 (scale 1, frac bits -20), bias 0.
    # FULL_ACCU: -132_644_865 / 2**20 = -126.500001 -> -127 (a float32 sum would give -126).
    # Otherwise C pre-shifts the accumulator by 8 (the cap) with rounding and saturates it to
    # 16 bits: -518_144 -> -32768, then -32768 * 2**8 / 2**20 = -8.
    k, m = 4096, 8
    xv = np.full(k, -128)
    xv[-1] = -103
    wv = np.full((k, m), 127)
    wv[-1] = 123
    x = Tensor.from_numpy(xv, "SA_8", zero_point=127, scale=1, scale_frac_bits=0)
    w = Tensor.from_numpy(wv, "SA_8", zero_point=0, scale=1, scale_frac_bits=0)
    b = Tensor.from_numpy(np.zeros(m), "SA_32", zero_point=0, scale=1, scale_frac_bits=0)
    out = Tensor.from_numpy(np.zeros(m), "SA_8", zero_point=0, scale=1, scale_frac_bits=-20)
    with use_platform(platform):
        mli_krn_fully_connected_sa8_sa8_sa32(x, w, b, FullyConnectedCfg(), out)
    assert out.numpy().tolist() == [expected] * m
