"""Speed of the pooling and element-wise kernels (time per call, best of N).

Run: ``python benchmarks/bench_pool.py``. Figures in brackets are the C reference (x86, -O2).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pymli import capi  # noqa: E402
from pymli.capi.types import PoolCfg
from pymli.tensor import Tensor


def best(fn, n: int = 50) -> float:  # noqa: ANN001
    fn()
    t = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        t.append(time.perf_counter() - t0)
    return min(t) * 1e3


def main() -> None:
    rng = np.random.default_rng(0)
    q = dict(zero_point=-5, scale=24000, scale_frac_bits=20)
    x8 = rng.integers(-128, 128, (56, 56, 64)).astype(np.int8)
    x16 = rng.integers(-32768, 32768, (56, 56, 64)).astype(np.int16)
    rows = []
    for pad in (0, 1):
        cfg = PoolCfg(kernel_width=3, kernel_height=3, stride_width=2, stride_height=2, padding_left=pad,
                      padding_right=pad, padding_top=pad, padding_bottom=pad)
        o = (56 + 2 * pad - 3) // 2 + 1
        for name, x, kw, ref in (("avepool_hwc_sa8", x8, q, " [0.68]"), ("maxpool_hwc_sa8", x8, q, " [0.60]"),
                                 ("avepool_hwc_fx16", x16, dict(frac_bits=7), ""),
                                 ("maxpool_hwc_fx16", x16, dict(frac_bits=7), "")):
            el = "SA_8" if name.endswith("sa8") else "FX_16"
            t_in = Tensor.from_numpy(x, el, **kw)
            t_out = Tensor.zeros((o, o, 64), el, **kw)
            fn = getattr(capi, f"mli_krn_{name}")
            rows.append((f"{name} 3x3 s2 pad{pad} 56x56x64", best(lambda: fn(t_in, cfg, t_out)), ref if not pad else ""))
    a = Tensor.from_numpy(x8, "SA_8", **q)
    b = Tensor.from_numpy(x8[::-1].copy(), "SA_8", zero_point=7, scale=30000, scale_frac_bits=21)
    for op in ("add", "sub", "mul", "max"):
        out = Tensor.zeros((56, 56, 64), "SA_8", zero_point=2, scale=31000, scale_frac_bits=20)
        bb = a if op == "max" else b
        fn = getattr(capi, f"mli_krn_eltwise_{op}_sa8")
        rows.append((f"eltwise_{op}_sa8 56x56x64", best(lambda: fn(a, bb, out), 20), ""))
    from pymli.kernels import eltwise as keltwise

    def uncached() -> None:
        keltwise._TABLES.clear()
        capi.mli_krn_eltwise_add_sa8(a, b, out)

    rows.append(("eltwise_add_sa8 56x56x64 (first call: table built)", best(uncached, 20), ""))
    s = Tensor.from_numpy(np.int8(3), "SA_8", zero_point=7, scale=30000, scale_frac_bits=21)
    out = Tensor.zeros((56, 56, 64), "SA_8", zero_point=2, scale=31000, scale_frac_bits=20)
    rows.append(("eltwise_add_sa8 56x56x64 + scalar", best(lambda: capi.mli_krn_eltwise_add_sa8(a, s, out), 20), ""))
    a16 = Tensor.from_numpy(x16, "FX_16", frac_bits=10)
    out16 = Tensor.zeros((56, 56, 64), "FX_16", frac_bits=9)
    rows.append(("eltwise_add_fx16 56x56x64", best(lambda: capi.mli_krn_eltwise_add_fx16(a16, a16, out16), 20), ""))
    w = max(len(r[0]) for r in rows)
    print(f"{'call':<{w}}  ms/call  [C -O2 ms]")
    for name, ms, ref in rows:
        print(f"{name:<{w}}  {ms:7.3f}{ref}")


if __name__ == "__main__":
    main()
