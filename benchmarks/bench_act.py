"""Speed of the ReLU family, permute and argmax through the facade (time per call, best of N).

Leaky ReLU and PReLU gather from a table of every input code, kept per parameter set: the
"cold" rows clear that cache before each call (a first call with new parameters).

    python benchmarks/bench_act.py [--repeat N]      (from the repository root)
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from _timing import Row, best_of, cli

from pymli import Tensor, capi
from pymli.capi.types import ArgmaxCfg, PermuteCfg, PreluCfg, ReluCfg, ReluType
from pymli.kernels import activation as act_kernels


def _cold(fn: Callable[[], object]) -> Callable[[], object]:
    def call() -> object:
        act_kernels._TABLES.clear()
        return fn()

    return call


def run(repeat: int = 7) -> list[Row]:
    rng = np.random.default_rng(0)
    shape = (56, 56, 64)
    q = dict(zero_point=-7, scale=20000, scale_frac_bits=20)
    x8 = Tensor.from_numpy(rng.integers(-128, 128, shape).astype(np.int8), "SA_8", **q)
    o8 = Tensor.zeros(shape, "SA_8", zero_point=3, scale=23000, scale_frac_bits=20)
    x16 = Tensor.from_numpy(rng.integers(-32768, 32768, shape).astype(np.int16), "FX_16", frac_bits=10)
    o16 = Tensor.zeros(shape, "FX_16", frac_bits=10)
    slope8 = Tensor.from_numpy(np.array(51, np.int8), "SA_8", zero_point=0, scale=16384, scale_frac_bits=21)
    slopes8 = Tensor.from_numpy(rng.integers(-128, 128, (1, 1, 64)).astype(np.int8), "SA_8", zero_point=0,
                                scale=16384, scale_frac_bits=21)
    slope16 = Tensor.from_numpy(np.array(3277, np.int16), "FX_16", frac_bits=15)
    slopes16 = Tensor.from_numpy(rng.integers(-32768, 32768, (1, 1, 2)).astype(np.int16), "FX_16", frac_bits=15)
    x16c2 = Tensor.from_numpy(rng.integers(-32768, 32768, (56, 56 * 32, 2)).astype(np.int16), "FX_16", frac_bits=10)
    o16c2 = Tensor.zeros((56, 56 * 32, 2), "FX_16", frac_bits=10)
    perm_out8 = Tensor.zeros((64, 56, 56), "SA_8", **q)
    perm_out16 = Tensor.zeros((64, 56, 56), "FX_16", frac_bits=10)
    x8_ties = Tensor.from_numpy(rng.integers(-128, 128, shape).astype(np.int8), "SA_8", **q)

    def argmax_out(rows: int, k: int) -> Tensor:
        return Tensor.zeros((rows, k), "SA_32")

    cases: list[tuple[str, Callable[[], object]]] = [
        ("relu_sa8 RELU_6 56x56x64", lambda: capi.mli_krn_relu_sa8(x8, ReluCfg(ReluType.RELU_6), o8)),
        ("relu_fx16 GEN 56x56x64", lambda: capi.mli_krn_relu_fx16(x16, ReluCfg(ReluType.GEN), o16)),
        ("leaky_relu_sa8 56x56x64", lambda: capi.mli_krn_leaky_relu_sa8(x8, slope8, o8)),
        ("leaky_relu_fx16 56x56x64", lambda: capi.mli_krn_leaky_relu_fx16(x16, slope16, o16)),
        ("prelu_sa8 axis=2 56x56x64", lambda: capi.mli_krn_prelu_sa8(x8, slopes8, PreluCfg(2), o8)),
        ("prelu_fx16 axis=2 56x1792x2", lambda: capi.mli_krn_prelu_fx16(x16c2, slopes16, PreluCfg(2), o16c2)),
        ("leaky_relu_sa8 56x56x64 cold", _cold(lambda: capi.mli_krn_leaky_relu_sa8(x8, slope8, o8))),
        ("leaky_relu_fx16 56x56x64 cold", _cold(lambda: capi.mli_krn_leaky_relu_fx16(x16, slope16, o16))),
        ("prelu_sa8 axis=2 56x56x64 cold", _cold(lambda: capi.mli_krn_prelu_sa8(x8, slopes8, PreluCfg(2), o8))),
        ("permute_sa8 [2,0,1] 56x56x64", lambda: capi.mli_krn_permute_sa8(x8, PermuteCfg([2, 0, 1, 3]), perm_out8)),
        ("permute_fx16 [2,0,1] 56x56x64", lambda: capi.mli_krn_permute_fx16(x16, PermuteCfg([2, 0, 1, 3]),
                                                                             perm_out16)),
        ("argmax_fx16 whole, top1", lambda: capi.mli_krn_argmax_fx16(x16, ArgmaxCfg(-1, 1), argmax_out(1, 1))),
        ("argmax_fx16 whole, top5", lambda: capi.mli_krn_argmax_fx16(x16, ArgmaxCfg(-1, 5), argmax_out(1, 5))),
        ("argmax_sa8 whole, top5 (ties)", lambda: capi.mli_krn_argmax_sa8(x8_ties, ArgmaxCfg(-1, 5), argmax_out(1, 5))),
        ("argmax_sa8 axis=2, top3 (ties)", lambda: capi.mli_krn_argmax_sa8(x8_ties, ArgmaxCfg(2, 3),
                                                                          argmax_out(64, 3))),
    ]
    return [Row(name, best_of(fn, repeat)) for name, fn in cases]


if __name__ == "__main__":
    cli(run, __doc__)
