"""Pinned behaviours of the C reference confirmed by differential runs against a local MLI 2.0.2 build.

Expected values are derived by hand from the C semantics (see the comments).
"""

from __future__ import annotations

import numpy as np
import pytest

from pymli import capi
from pymli.arith import lut as L
from pymli.capi.types import SoftmaxCfg
from pymli.config import EM, VPX, use_platform
from pymli.tensor import Tensor


@pytest.mark.parametrize("platform", [VPX, EM], ids=["up", "convergent"])
def test_softmax_fx16_sum_wraps_in_32_bits(platform) -> None:
    # 131073 equal inputs: each exponential is exp(0) = 32767 (Q15, saturated). The 32-bit sum
    # 131073 * 32767 wraps to -98305; norm = 14, mantissa = -98305 / 4 -> -24576, reciprocal
    # 2**29 / -24576 truncates to -21845, shift = 30 + 15 - 14 - 15 = 16, and
    # -21845 * 32767 / 2**16 = -10922.2 -> -10922 in both rounding modes.
    n = 131073
    x = Tensor.from_numpy(np.full(n, 1000), "FX_16", frac_bits=8)
    out = Tensor.from_numpy(np.zeros(n), "FX_16", frac_bits=0)
    with use_platform(platform):
        capi.mli_krn_softmax_fx16(x, L.create_lut("softmax"), SoftmaxCfg(-1), out)
    assert np.unique(out.data).tolist() == [-10922]
    assert out.frac_bits == 15
