"""Per-call overhead of tiny capi calls: through ``pymli.capi`` (entry normaliser + checks + kernel) and
the same function body without the normaliser (``fn.__wrapped__``), time per call (best of N).

Issue 14 item 3 asks for <= 10 us per tiny call through capi. The difference of the two columns is
the cost of :mod:`pymli.checks.entry` (issue 13: every argument validated before anything runs).

Run: python benchmarks/calls.py [--repeat N] [--number N]
"""

from __future__ import annotations

import time

import numpy as np
from _timing import Row, cli

from pymli import ElType, Tensor, capi
from pymli.capi.types import FullyConnectedCfg, ReluCfg, ReluType


def _per_call(fn, args, repeat: int, number: int) -> float:
    """Best over ``repeat`` rounds of the mean time of ``number`` back-to-back calls, in seconds."""
    fn(*args)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn(*args)
        best = min(best, (time.perf_counter() - t0) / number)
    return best


def _cases() -> list[tuple[str, str, tuple]]:
    rng = np.random.default_rng(0)
    x8 = Tensor.from_numpy(rng.integers(-100, 100, 8), ElType.SA_8, zero_point=1, scale=3, scale_frac_bits=4)
    y8 = Tensor.from_numpy(rng.integers(-100, 100, 8), ElType.SA_8, zero_point=-2, scale=5, scale_frac_bits=5)
    o8 = Tensor.zeros((8,), ElType.SA_8, zero_point=0, scale=7, scale_frac_bits=5)
    xf = Tensor.from_numpy(rng.integers(-1000, 1000, 8), ElType.FX_16, frac_bits=8)
    yf = Tensor.from_numpy(rng.integers(-1000, 1000, 8), ElType.FX_16, frac_bits=8)
    of = Tensor.zeros((8,), ElType.FX_16, frac_bits=8)
    fin = Tensor.from_numpy(rng.integers(-100, 100, 16), ElType.SA_8, zero_point=0, scale=3, scale_frac_bits=7)
    w = Tensor.from_numpy(rng.integers(-100, 100, (16, 16)), ElType.SA_8, zero_point=[0] * 16, scale=[5] * 16,
                          scale_frac_bits=[9] * 16, dim=1)
    b = Tensor.from_numpy(rng.integers(-1000, 1000, 16), ElType.SA_32, zero_point=[0] * 16, scale=[15] * 16,
                          scale_frac_bits=[16] * 16, dim=0)
    fout = Tensor.zeros((16,), ElType.SA_8, zero_point=0, scale=9, scale_frac_bits=6)
    wf = Tensor.from_numpy(rng.integers(-1000, 1000, (16, 16)), ElType.FX_16, frac_bits=10)
    bf = Tensor.from_numpy(rng.integers(-1000, 1000, 16), ElType.FX_16, frac_bits=12)
    finf = Tensor.from_numpy(rng.integers(-1000, 1000, 16), ElType.FX_16, frac_bits=8)
    foutf = Tensor.zeros((16,), ElType.FX_16, frac_bits=6)
    relu = ReluCfg(ReluType.GEN)
    fc = FullyConnectedCfg()
    return [
        ("relu sa8, 8 elements", "mli_krn_relu_sa8", (x8, relu, o8)),
        ("relu fx16, 8 elements", "mli_krn_relu_fx16", (xf, relu, of)),
        ("eltwise add sa8, 8 elements", "mli_krn_eltwise_add_sa8", (x8, y8, o8)),
        ("eltwise add fx16, 8 elements", "mli_krn_eltwise_add_fx16", (xf, yf, of)),
        ("fully connected sa8, 16 -> 16", "mli_krn_fully_connected_sa8_sa8_sa32", (fin, w, b, fc, fout)),
        ("fully connected fx16, 16 -> 16", "mli_krn_fully_connected_fx16", (finf, wf, bf, fc, foutf)),
    ]


def run(repeat: int = 5, number: int = 2000) -> list[Row]:
    rows = []
    for label, name, args in _cases():
        fn = capi.FUNCTIONS[name]
        bare = getattr(fn, "__wrapped__", fn)
        t_full = _per_call(fn, args, repeat, number)
        t_bare = _per_call(bare, args, repeat, number)
        rows.append(Row(label, t_full, extra=f"without normaliser {t_bare * 1e6:.1f} us, "
                                              f"normaliser {(t_full - t_bare) * 1e6:.1f} us",
                        target="<= 10 us (issue 14)"))
    return rows


if __name__ == "__main__":
    cli(run, __doc__)
