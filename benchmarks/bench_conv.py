"""Speed of the convolution and fully-connected facade (best of N, milliseconds per call).

Run: ``python benchmarks/bench_conv.py [--repeat N]``. The target column holds the issue's targets
and, in square brackets, the MLI C library (x86, -O2) reference times.
"""

from __future__ import annotations

import numpy as np
from _timing import Row, best_of, cli

from pymli import Tensor
from pymli.capi import (
    Conv2dCfg,
    FullyConnectedCfg,
    ReluCfg,
    ReluType,
    mli_krn_conv2d_hwcn_fx16,
    mli_krn_conv2d_hwcn_sa8_sa8_sa32,
    mli_krn_depthwise_conv2d_hwcn_sa8_sa8_sa32,
    mli_krn_fully_connected_sa8_sa8_sa32,
)

rng = np.random.default_rng(0)


def sa8(shape, zp=0, scale=16384, frac=20, dim=-1, n=None):
    data = rng.integers(-128, 128, shape)
    if dim >= 0:
        return Tensor.from_numpy(data, "SA_8", zero_point=np.zeros(n), scale=np.full(n, scale),
                                 scale_frac_bits=np.full(n, frac), dim=dim)
    return Tensor.from_numpy(data, "SA_8", zero_point=zp, scale=scale, scale_frac_bits=frac)


def bias32(n, in_scale=16384, in_frac=20, w_scale=16384, w_frac=20, dim=-1):
    # bias scale = in_scale * w_scale, expressed with 16 significant bits
    s = in_scale * w_scale
    sh = s.bit_length() - 15
    kw = {"scale": s >> sh, "scale_frac_bits": in_frac + w_frac - sh}
    if dim >= 0:
        kw = {k: np.full(n, v) for k, v in kw.items()}
        kw["zero_point"] = np.zeros(n)
    return Tensor.from_numpy(rng.integers(-5000, 5000, n), "SA_32", dim=dim, **kw)


def run(repeat: int = 30) -> list[Row]:
    rows = []
    cfg = Conv2dCfg(relu=ReluCfg(ReluType.GEN), padding_top=1, padding_bottom=1, padding_left=1, padding_right=1)

    x = sa8((32, 32, 32), zp=-3)
    w = sa8((3, 3, 32, 64), dim=3, n=64)
    b = bias32(64, dim=0)
    out = Tensor.zeros((32, 32, 64), "SA_8", zero_point=5, scale=20000, scale_frac_bits=14)
    rows.append(Row("conv2d sa8 32x32x32 3x3 64f same",
                    best_of(lambda: mli_krn_conv2d_hwcn_sa8_sa8_sa32(x, w, b, cfg, out), repeat),
                    macs=32 * 32 * 64 * 3 * 3 * 32, target="<= 2 ms (0.5) [C 53]"))

    xf = Tensor.from_numpy(rng.integers(-32768, 32768, (32, 32, 32)), "FX_16", frac_bits=12)
    wf = Tensor.from_numpy(rng.integers(-32768, 32768, (3, 3, 32, 64)), "FX_16", frac_bits=15)
    bf = Tensor.from_numpy(rng.integers(-32768, 32768, (64,)), "FX_16", frac_bits=14)
    of = Tensor.zeros((32, 32, 64), "FX_16", frac_bits=8)
    rows.append(Row("conv2d fx16 32x32x32 3x3 64f same",
                    best_of(lambda: mli_krn_conv2d_hwcn_fx16(xf, wf, bf, cfg, of), repeat),
                    macs=32 * 32 * 64 * 3 * 3 * 32, target="<= 3 ms [C 23]"))

    xd = sa8((56, 56, 64), zp=7)
    wd = sa8((3, 3, 1, 64), dim=3, n=64)
    bd = bias32(64, dim=0)
    od = Tensor.zeros((56, 56, 64), "SA_8", zero_point=0, scale=20000, scale_frac_bits=14)
    rows.append(Row("depthwise sa8 56x56x64 3x3 same",
                    best_of(lambda: mli_krn_depthwise_conv2d_hwcn_sa8_sa8_sa32(xd, wd, bd, cfg, od), repeat),
                    macs=56 * 56 * 64 * 3 * 3, target="<= 2 ms [C 8.6]"))

    fcfg = FullyConnectedCfg(relu=ReluCfg(ReluType.NONE))
    xi = sa8((1024,), zp=3)
    wi = sa8((1024, 256), dim=1, n=256)
    bi = bias32(256, dim=0)
    oi = Tensor.zeros((256,), "SA_8", zero_point=0, scale=20000, scale_frac_bits=14)
    rows.append(Row("fully connected sa8 1024->256",
                    best_of(lambda: mli_krn_fully_connected_sa8_sa8_sa32(xi, wi, bi, fcfg, oi), 7 * repeat),
                    macs=1024 * 256, target="<= 0.1 ms [C 0.21]"))

    xs = sa8((4, 4, 2), zp=0)
    ws = sa8((3, 3, 2, 2))
    bs = bias32(2)
    os_ = Tensor.zeros((4, 4, 2), "SA_8", zero_point=0, scale=20000, scale_frac_bits=14)
    rows.append(Row("conv2d sa8 tiny 4x4x2 (overhead)",
                    best_of(lambda: mli_krn_conv2d_hwcn_sa8_sa8_sa32(xs, ws, bs, cfg, os_), 10 * repeat),
                    target="<= 50 us"))
    return rows


if __name__ == "__main__":
    cli(run, __doc__)
