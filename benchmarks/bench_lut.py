"""Speed of the LUT activations on a 56x56x64 feature map (time per call, best of N).

Run: ``python benchmarks/bench_lut.py [--repeat N]``.
"""

from __future__ import annotations

import numpy as np
from _timing import Row, best_of, cli

from pymli import capi
from pymli.arith import lut as lut_arith
from pymli.arith.lut import create_lut
from pymli.capi.types import SoftmaxCfg
from pymli.tensor import Tensor

SHAPE = (56, 56, 64)


def _clear() -> None:
    """Forget the cached per-code tables (times a first call with a new LUT / format)."""
    lut_arith._CODE_TABLES.clear()


def run(repeat: int = 10) -> list[Row]:
    rng = np.random.default_rng(0)
    q8 = rng.integers(-128, 128, SHAPE).astype(np.int8)
    q16 = rng.integers(-32768, 32768, SHAPE).astype(np.int16)
    sa8 = dict(zero_point=-3, scale=24000, scale_frac_bits=20)
    x_sa8 = Tensor.from_numpy(q8, "SA_8", **sa8)
    x_fx16 = Tensor.from_numpy(q16, "FX_16", frac_bits=11)
    x_fx8 = Tensor.from_numpy(q8, "FX_8", frac_bits=5)
    out_sa8 = Tensor.zeros(SHAPE, "SA_8")
    out_fx16 = Tensor.zeros(SHAPE, "FX_16")
    out_fx8 = Tensor.zeros(SHAPE, "FX_8")
    sigm, tanh, smax = create_lut("sigm"), create_lut("tanh"), create_lut("softmax")
    F = capi.FUNCTIONS
    cases = [
        ("mli_krn_sigm_sa8", lambda: F["mli_krn_sigm_sa8"](x_sa8, sigm, out_sa8)),
        ("mli_krn_tanh_sa8", lambda: F["mli_krn_tanh_sa8"](x_sa8, tanh, out_sa8)),
        ("mli_krn_sigm_fx16", lambda: F["mli_krn_sigm_fx16"](x_fx16, sigm, out_fx16)),
        ("mli_krn_tanh_fx16", lambda: F["mli_krn_tanh_fx16"](x_fx16, tanh, out_fx16)),
        ("mli_krn_sigm_fx16 (first call: table built)", lambda: (_clear(), F["mli_krn_sigm_fx16"](x_fx16, sigm, out_fx16))),
        ("mli_krn_softmax_sa8 axis=-1 (whole)", lambda: F["mli_krn_softmax_sa8"](x_sa8, smax, SoftmaxCfg(-1), out_sa8)),
        ("mli_krn_softmax_sa8 axis=2 (channels)", lambda: F["mli_krn_softmax_sa8"](x_sa8, smax, SoftmaxCfg(2), out_sa8)),
        ("mli_krn_softmax_fx16 axis=2 (channels)",
         lambda: F["mli_krn_softmax_fx16"](x_fx16, smax, SoftmaxCfg(2), out_fx16)),
        ("mli_krn_softmax_fx16 axis=2 (first call: table built)",
         lambda: (_clear(), F["mli_krn_softmax_fx16"](x_fx16, smax, SoftmaxCfg(2), out_fx16))),
        ("mli_krn_softmax_fx16 axis=-1 (whole)", lambda: F["mli_krn_softmax_fx16"](x_fx16, smax, SoftmaxCfg(-1), out_fx16)),
        ("mli_krn_softmax_fx8 axis=2 (channels)", lambda: F["mli_krn_softmax_fx8"](x_fx8, smax, SoftmaxCfg(2), out_fx8)),
    ]
    n = int(np.prod(SHAPE))
    dims = "x".join(map(str, SHAPE))
    rows = []
    for name, fn in cases:
        t = best_of(fn, repeat)
        rows.append(Row(f"{name} {dims}", t, extra=f"{t * 1e9 / n:.1f} ns/elem"))
    return rows


if __name__ == "__main__":
    cli(run, __doc__)
