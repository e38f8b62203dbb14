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
