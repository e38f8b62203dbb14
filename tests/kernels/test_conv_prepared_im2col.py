"""``conv_prepared._im2col`` (window rows copied as opaque runs) against the element-wise copy of the
strided windows view, and prepared convolutions that take it against the plain kernel: seeded random
geometries (strides, dilations, paddings, 1 to 5 channels, int8 / int16, batches)."""

from __future__ import annotations

import numpy as np
import pytest

from pymli import use_platform
from pymli.kernels import convolution as K
from pymli.kernels.conv_prepared import _im2col, prepare_conv
from pymli.kernels.convolution import _geometry, _windows

from .test_fc_paths import PLATFORMS


@pytest.mark.parametrize("seed", range(40))
def test_im2col_equals_the_windows(seed: int) -> None:
    rng = np.random.default_rng(seed)
    kh, kw = (int(v) for v in rng.integers(1, 6, 2))
    sh, sw, dh, dw = (int(v) for v in rng.integers(1, 4, 4))
    ho, wo = (int(v) for v in rng.integers(1, 12, 2))
    n, c = int(rng.integers(1, 3)), int(rng.integers(1, 6))
    hp, wp = _geometry((kh, kw), (sh, sw), (dh, dw), (ho, wo))
    dt = np.int8 if seed % 2 else np.int16
    info = np.iinfo(dt)
    xp = rng.integers(info.min, info.max, (n, hp + int(rng.integers(0, 2)), wp, c), endpoint=True).astype(dt)
    want = _windows(xp, kh, kw, sh, sw, dh, dw, ho, wo).reshape(n * ho * wo, -1)
    got = _im2col(xp, kh, kw, sh, sw, dh, dw, ho, wo)
    assert got.dtype == want.dtype and np.array_equal(got, want)


@pytest.mark.parametrize("seed", range(6))
def test_prepared_stem_like_conv(seed: int) -> None:
    """A 3-channel int8 stem (3x3, stride 2, padding) prepared: equal to the plain kernel."""
    rng = np.random.default_rng(seed + 100)
    h = w = int(rng.integers(8, 40))
    c, n = 3, int(rng.integers(1, 20))
    wt = rng.integers(-128, 128, (3, 3, c, n)).astype(np.int8)
    b = rng.integers(-(1 << 14), 1 << 14, n).astype(np.int32)
    q = K.Sa8Quant(int(rng.integers(-128, 128)), 20000, 20, 0, np.full(n, 20000), np.full(n, 20),
                   int(rng.integers(-128, 128)), 23000, 16)
    ho, wo = (h + 1) // 2, (w + 1) // 2
    pad = (int(rng.integers(0, 2)), int(rng.integers(0, 2)))
    x = rng.integers(-128, 128, (h, w, c)).astype(np.int8)
    for plat in PLATFORMS:
        with use_platform(plat):
            layer = prepare_conv(wt, b, q, stride=(2, 2), pad=pad, out_hw=(ho, wo), bounds=(-128, 127),
                                 out_dtype=np.int8)
            want = K.conv2d_hwcn(x, wt, b, q, stride=(2, 2), pad=pad, out_hw=(ho, wo), bounds=(-128, 127))
            assert np.array_equal(layer(x), want.astype(np.int8)), plat
