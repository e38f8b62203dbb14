"""Speed of the pooling and element-wise kernels (time per call, best of N).

Run: ``python benchmarks/bench_pool.py [--repeat N]``. Figures in brackets are the C reference (x86, -O2).
The "batch" rows time the kernels on 8 maps of 32x32x64 in one call against a loop over the maps;
"faults" counts the page faults of one call (0: its temporaries are reused, not re-mapped).
"""

from __future__ import annotations

import resource

import numpy as np
from _timing import Row, best_of, cli

from pymli import capi
from pymli.arith.pool import requant_params
from pymli.capi.types import PoolCfg
from pymli.kernels import pooling as kpool
from pymli.tensor import Tensor


def _faults(fn, calls: int = 10) -> str:  # noqa: ANN001
    """Minor page faults per call of ``fn`` (after a warm-up call)."""
    fn()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(calls):
        fn()
    return f"{(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / calls:.0f} faults"


def _batch_rows(rng: np.random.Generator, repeat: int) -> list[Row]:
    """Kernel-level pooling of a batch in one pass vs one map at a time (small and large maps)."""
    rq = requant_params(20000, 20, -3, 20000, 20, -3)
    rows = []
    for n, hw, c in ((256, 8, 16), (8, 32, 64)):
        same = dict(kernel=(3, 3), stride=(1, 1), pad=(1, 1), out_hw=(hw, hw))
        for bits, dt in ((8, np.int8), (16, np.int16)):
            info = np.iinfo(dt)
            xb = rng.integers(info.min, info.max, (n, hw, hw, c), endpoint=True).astype(dt)
            arith = dict(base_shift=0, requant=rq) if bits == 8 else dict(base_shift=0)
            for kind, fn in (("avepool", lambda x, g=same, a=arith: kpool.avepool_hwc(x, **g, **a)),
                             ("maxpool", lambda x, g=same: kpool.maxpool_hwc(x, **g))):
                one = best_of(lambda fn=fn, xb=xb: fn(xb), repeat)
                loop = best_of(lambda fn=fn, xb=xb: [fn(s) for s in xb], repeat)
                rows.append(Row(f"{kind} {bits}-bit 3x3 s1 same, batch {n}x{hw}x{hw}x{c} (kernel)", one,
                                extra=f"per-map loop {loop * 1e6:.0f} us, {_faults(lambda fn=fn, xb=xb: fn(xb))}"))
    return rows


def run(repeat: int = 50) -> list[Row]:
    rng = np.random.default_rng(0)
    q = dict(zero_point=-5, scale=24000, scale_frac_bits=20)
    x8 = rng.integers(-128, 128, (56, 56, 64)).astype(np.int8)
    x16 = rng.integers(-32768, 32768, (56, 56, 64)).astype(np.int16)
    short = max(repeat * 2 // 5, 1)  # the element-wise cases: fewer calls
    rows = []
    for pad in (0, 1):
        cfg = PoolCfg(kernel_width=3, kernel_height=3, stride_width=2, stride_height=2, padding_left=pad,
                      padding_right=pad, padding_top=pad, padding_bottom=pad)
        o = (56 + 2 * pad - 3) // 2 + 1
        for name, x, kw, ref in (("avepool_hwc_sa8", x8, q, "<= 0.5 ms [C 0.68]"), ("maxpool_hwc_sa8", x8, q, "<= 0.5 ms [C 0.60]"),
                                 ("avepool_hwc_fx16", x16, dict(frac_bits=7), ""),
                                 ("maxpool_hwc_fx16", x16, dict(frac_bits=7), "")):
            el = "SA_8" if name.endswith("sa8") else "FX_16"
            t_in = Tensor.from_numpy(x, el, **kw)
            t_out = Tensor.zeros((o, o, 64), el, **kw)
            fn = getattr(capi, f"mli_krn_{name}")
            call = lambda fn=fn, t_in=t_in, cfg=cfg, t_out=t_out: fn(t_in, cfg, t_out)  # noqa: E731
            rows.append(Row(f"{name} 3x3 s2 pad{pad} 56x56x64", best_of(call, repeat), extra=_faults(call),
                            target=ref if not pad else ""))
    rows += _batch_rows(rng, max(repeat // 5, 1))
    a = Tensor.from_numpy(x8, "SA_8", **q)
    b = Tensor.from_numpy(x8[::-1].copy(), "SA_8", zero_point=7, scale=30000, scale_frac_bits=21)
    for op in ("add", "sub", "mul", "max"):
        out = Tensor.zeros((56, 56, 64), "SA_8", zero_point=2, scale=31000, scale_frac_bits=20)
        bb = a if op == "max" else b
        fn = getattr(capi, f"mli_krn_eltwise_{op}_sa8")
        rows.append(Row(f"eltwise_{op}_sa8 56x56x64", best_of(lambda fn=fn, bb=bb, out=out: fn(a, bb, out), short)))
    from pymli.kernels import eltwise as keltwise

    def uncached() -> None:
        keltwise._TABLES.clear()
        capi.mli_krn_eltwise_add_sa8(a, b, out)

    rows.append(Row("eltwise_add_sa8 56x56x64 (first call: table built)", best_of(uncached, short)))
    s = Tensor.from_numpy(np.int8(3), "SA_8", zero_point=7, scale=30000, scale_frac_bits=21)
    out = Tensor.zeros((56, 56, 64), "SA_8", zero_point=2, scale=31000, scale_frac_bits=20)
    rows.append(Row("eltwise_add_sa8 56x56x64 + scalar",
                    best_of(lambda: capi.mli_krn_eltwise_add_sa8(a, s, out), short)))
    a16 = Tensor.from_numpy(x16, "FX_16", frac_bits=10)
    b16 = Tensor.from_numpy(x16[::-1].copy(), "FX_16", frac_bits=12)
    out16 = Tensor.zeros((56, 56, 64), "FX_16", frac_bits=9)
    rows.append(Row("eltwise_add_fx16 56x56x64",
                    best_of(lambda: capi.mli_krn_eltwise_add_fx16(a16, a16, out16), short)))
    for op in ("sub", "mul", "max"):
        fn = getattr(capi, f"mli_krn_eltwise_{op}_fx16")
        bb = a16 if op == "max" else b16
        rows.append(Row(f"eltwise_{op}_fx16 56x56x64 (frac bits 10, {bb.frac_bits} -> 9)",
                        best_of(lambda fn=fn, bb=bb: fn(a16, bb, out16), short)))
    s16 = Tensor.from_numpy(np.int16(-1234), "FX_16", frac_bits=12)
    rows.append(Row("eltwise_add_fx16 56x56x64 + scalar",
                    best_of(lambda: capi.mli_krn_eltwise_add_fx16(a16, s16, out16), short)))
    return rows


if __name__ == "__main__":
    cli(run, __doc__)
