"""Regressions found by differential fuzzing against the C library, with hand-derived expectations."""

from __future__ import annotations

import numpy as np

from pymli import VPX, Tensor, use_platform
from pymli.capi import FullyConnectedCfg, mli_krn_fully_connected_fx16


def test_fc_fx16_input_holding_int16_min_keeps_an_exact_sum():
    # x = [-32768, 3], weights column [32767, -1]: the exact sum is -32768 * 32767 - 3 = -1073709059,
    # which float32 cannot hold (it rounds to -1073709056 = -16383.5 * 2**16, a rounding tie).
    # out_shift = in_frac + w_frac - out_frac = 16; ROUND_UP: (acc + 2**15) >> 16 = -16384
    # (the rounded float sum would give -16383). The input's magnitude bound must count
    # |-32768| = 32768 (np.abs on int16 wraps to -32768).
    m = 16
    x = Tensor.from_numpy(np.array([-32768, 3]), "FX_16", frac_bits=0)
    w = Tensor.from_numpy(np.tile(np.array([[32767], [-1]]), (1, m)), "FX_16", frac_bits=0)
    b = Tensor.from_numpy(np.zeros(m), "FX_16", frac_bits=0)
    out = Tensor.from_numpy(np.zeros(m), "FX_16", frac_bits=-16)
    with use_platform(VPX):
        mli_krn_fully_connected_fx16(x, w, b, FullyConnectedCfg(), out)
    assert out.numpy().tolist() == [-16384] * m


def _sa8_identity(w_zp: int):
    from pymli.kernels.convolution import Sa8Quant

    # in/out/weights scales 1, frac bits 0: the output equals the accumulator (no rounding).
    one = np.array([1], dtype=np.int64)
    zero = np.array([0], dtype=np.int64)
    return Sa8Quant(0, 1, 0, w_zp, one, zero, 0, 1, 0)


def test_dilated_conv2d_weights_zero_point_sums_input_with_undilated_steps():
    # Release builds accept a weights zero point (checked builds reject it). x = [1..5] (1x5x1),
    # kernel 1x2 of zeros, dilation 2, weights zero point 1: every output is -sum(input) over the
    # C in_additive block: 2 valid taps, but C steps by one pixel -> x[i] + x[i+1] = 3, 5, 7
    # (a correctly dilated sum would be 4, 6, 8). Depthwise walks with the dilation.
    from pymli.kernels.convolution import conv2d_hwcn, depthwise_conv2d_hwcn, group_conv2d_hwcn

    x = np.arange(1, 6, dtype=np.int8).reshape(1, 5, 1)
    w = np.zeros((1, 2, 1, 1), dtype=np.int8)
    b = np.zeros(1, dtype=np.int32)
    geo = {"stride": (1, 1), "dilation": (1, 2), "pad": (0, 0), "out_hw": (1, 3), "bounds": (-128, 127)}
    with use_platform(VPX):
        conv = conv2d_hwcn(x, w, b, _sa8_identity(1), **geo)
        group = group_conv2d_hwcn(x, w, b, _sa8_identity(1), **geo)
        dw = depthwise_conv2d_hwcn(x, w, b, _sa8_identity(1), **geo)
    assert conv.reshape(-1).tolist() == [-3, -5, -7]
    assert group.reshape(-1).tolist() == [-3, -5, -7]
    assert dw.reshape(-1).tolist() == [-4, -6, -8]


def test_dilated_conv2d_in_additive_block_starts_at_first_valid_tap():
    # Padding 1 on the left, kernel 1x3, dilation 2 over x = [1..4]: output 0 has taps at -1
    # (padding), 1, 3 -> 2 valid taps from x[1]: C sums x[1] + x[2] = 5; output 1 has taps 0, 2
    # (4 is outside) -> x[0] + x[1] = 3.
    from pymli.kernels.convolution import conv2d_hwcn

    x = np.arange(1, 5, dtype=np.int8).reshape(1, 4, 1)
    w = np.zeros((1, 3, 1, 1), dtype=np.int8)
    b = np.zeros(1, dtype=np.int32)
    with use_platform(VPX):
        r = conv2d_hwcn(x, w, b, _sa8_identity(1), stride=(1, 1), dilation=(1, 2), pad=(0, 1), out_hw=(1, 2),
                        bounds=(-128, 127))
    assert r.reshape(-1).tolist() == [-5, -3]
