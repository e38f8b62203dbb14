"""Pinned behaviours of the C reference confirmed by differential runs against a local MLI 2.0.2 build.

Every expected value below is derived by hand from the C semantics (the derivation is in the
comments); nothing here was recorded from the library.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pymli import capi
from pymli.capi.types import PoolCfg
from pymli.config import EM, VPX, use_platform
from pymli.formats import ElType
from pymli.tensor import Tensor


def _global_avepool(name: str, x: Tensor, out: Tensor) -> np.ndarray:
    h, w = int(x.shape[0]), int(x.shape[1])
    capi.FUNCTIONS[name](x, PoolCfg(kernel_width=w, kernel_height=h), out)
    return out.numpy().reshape(-1)


@pytest.mark.parametrize("platform", [VPX, EM], ids=["up", "convergent"])
@pytest.mark.parametrize("value, expected", [(127, -1), (-128, 0)])
def test_fx8_avepool_accumulator_wraps(platform, value: int, expected: int) -> None:
    # 2048 taps: reciprocal 2**31 / 2048 = 2**20, normalised to 2**31 >> 17 = 16384 with shift 25.
    # 127 * 2048 * 16384 = 127 * 2**25 wraps in the 32-bit accumulator to -2**25; adding half an
    # LSB (2**24) and shifting by 25 gives -1 in both rounding modes. For -128 the product is
    # -2**32, which wraps to 0.
    x = Tensor.from_numpy(np.full((32, 64, 2), value), "FX_8", frac_bits=3)
    out = Tensor.from_numpy(np.full((1, 1, 2), 55), "FX_8", frac_bits=3)
    with use_platform(platform):
        assert _global_avepool("mli_krn_avepool_hwc_fx8", x, out).tolist() == [expected] * 2


@pytest.mark.parametrize("platform", [VPX, EM], ids=["up", "convergent"])
def test_fx16_avepool_truncated_reciprocal(platform) -> None:
    # 255 x 255 = 65025 taps: 2**31 // 65025 = 33025 (16 bits), normalised by 16: mul = 16512,
    # shift 30. 32767 * 65025 * 16512 / 2**30 = 32765.9..., so the average of 32767 is 32766.
    x = Tensor.from_numpy(np.full((255, 255, 1), 32767), "FX_16", frac_bits=9)
    out = Tensor.from_numpy(np.zeros((1, 1, 1)), "FX_16", frac_bits=9)
    with use_platform(platform):
        assert _global_avepool("mli_krn_avepool_hwc_fx16", x, out).tolist() == [32766]


@pytest.mark.parametrize("mul16, expected", [(False, 127), (True, 7)])
def test_sa8_avepool_multiplier_width(mul16: bool, expected: int) -> None:
    # in/out scale 20000 * 2**-20, zero points -5 / 3: requantisation scale 16384, shift 14,
    # offset 3 - (-5) = 8. 2048 taps: reciprocal (16384, 25), total shift 39, product 2**28.
    # 8-bit multiplier: 2**28 >> 22 = 64, shift 17: (127*2048*64 + 8 << 17) >> 17 = 135 -> 127.
    # 16-bit multiplier (AVEPOOL_16BIT_MUL): 2**28 >> 14 = 16384, shift 25:
    # 127*2048*16384 + 8 << 25 = 4529848320 wraps to 234881024 = 7 << 25 -> 7.
    q = {"scale": 20000, "scale_frac_bits": 20}
    x = Tensor.from_numpy(np.full((32, 64, 3), 127), "SA_8", zero_point=-5, **q)
    out = Tensor.from_numpy(np.zeros((1, 1, 3)), "SA_8", zero_point=3, **q)
    with use_platform(dataclasses.replace(VPX, avepool_16bit_mul=mul16)):
        assert _global_avepool("mli_krn_avepool_hwc_sa8", x, out).tolist() == [expected] * 3


@pytest.mark.parametrize("op", ["add", "sub", "mul", "min", "max"])
@pytest.mark.parametrize("alias", [0, 1])
def test_eltwise_output_may_alias_an_input(op: str, alias: int) -> None:
    # MLI does not check element-wise operands against the output: in-place calls are valid and
    # give the same result as a separate output (each element is read before it is written).
    rng = np.random.default_rng(7)
    vals = [rng.integers(-128, 128, (3, 5)) for _ in range(2)]
    q = {"zero_point": 4, "scale": 12345, "scale_frac_bits": 17}
    fn = capi.FUNCTIONS[f"mli_krn_eltwise_{op}_sa8"]
    ref_out = Tensor.from_numpy(np.zeros((3, 5)), "SA_8", zero_point=-2, scale=23456, scale_frac_bits=18)
    fn(*(Tensor.from_numpy(v, "SA_8", **q) for v in vals), ref_out)
    ins = [Tensor.from_numpy(v, "SA_8", **q) for v in vals]
    out = dataclasses.replace(ins[alias], zero_point=-2, scale=23456, scale_frac_bits=18)
    assert out.data is ins[alias].data
    fn(ins[0], ins[1], out)
    assert np.array_equal(out.numpy(), ref_out.numpy())
    assert out.el_type is ElType.SA_8
