"""Speed of the conversion helpers and quantisation: time per call (best of N), printed as a table.

Run: python benchmarks/bench_helpers.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from pymli import ElType, Tensor  # noqa: E402
from pymli.capi import helpers as H  # noqa: E402
from pymli.capi.types import SubTensorCfg  # noqa: E402
from pymli.quant import dequantize, quantize  # noqa: E402


def best(fn, n: int = 20) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    rng = np.random.default_rng(0)
    shape = (32, 32, 16)
    x = rng.normal(size=shape).astype(np.float32)
    f = Tensor.from_numpy(x, ElType.FP_32)
    fx16 = quantize(x, ElType.FX_16)
    sa8 = quantize(x, ElType.SA_8)
    sa8c = quantize(x, ElType.SA_8, dim=2)
    sa32 = quantize(x, ElType.SA_32)
    cases = [
        ("fp32 -> fx16", f, Tensor.zeros(shape, ElType.FX_16, frac_bits=fx16.frac_bits)),
        ("fp32 -> sa8 per-axis", f, Tensor.zeros(shape, ElType.SA_8, dim=2, zero_point=sa8c.zero_point,
                                                 scale=sa8c.scale, scale_frac_bits=sa8c.scale_frac_bits)),
        ("fx16 -> fp32", fx16, Tensor.zeros(shape, ElType.FP_32)),
        ("sa8 -> fp32", sa8, Tensor.zeros(shape, ElType.FP_32)),
        ("fx16 -> sa8", fx16, Tensor.zeros(shape, ElType.SA_8, zero_point=sa8.zero_point, scale=sa8.scale,
                                           scale_frac_bits=sa8.scale_frac_bits)),
        ("sa8 per-axis -> fx16", sa8c, Tensor.zeros(shape, ElType.FX_16, frac_bits=fx16.frac_bits)),
        ("sa32 -> sa8 (64-bit path)", sa32, Tensor.zeros(shape, ElType.SA_8, zero_point=sa8.zero_point,
                                                         scale=sa8.scale, scale_frac_bits=sa8.scale_frac_bits)),
    ]
    n = int(np.prod(shape))
    print(f"{'operation':48s} {'elements':>9s} {'ms/call':>9s} {'ns/elem':>9s}")
    for name, src, dst in cases:
        t = best(lambda: H.mli_hlp_convert_tensor(src, dst))
        print(f"{'mli_hlp_convert_tensor ' + name:48s} {n:9d} {t * 1e3:9.3f} {t / n * 1e9:9.1f}")
    for name, fn in (("quantize fp32 -> sa8 per-axis", lambda: quantize(x, ElType.SA_8, dim=2)),
                     ("quantize fp32 -> fx16 (auto)", lambda: quantize(x, ElType.FX_16)),
                     ("dequantize sa8 per-axis", lambda: dequantize(sa8c))):
        t = best(fn)
        print(f"{name:48s} {n:9d} {t * 1e3:9.3f} {t / n * 1e9:9.1f}")
    sub = Tensor()
    cfg = SubTensorCfg(offset=[1, 2, 3, 0], size=[4, 5, 6, 0], sub_tensor_rank=3)
    t = best(lambda: H.mli_hlp_create_subtensor(sa8c, cfg, sub), 200)
    print(f"{'mli_hlp_create_subtensor':48s} {'-':>9s} {t * 1e3:9.3f} {'-':>9s}")
    t = best(lambda: H.mli_hlp_count_elem_num(sa8c, 1), 200)
    print(f"{'mli_hlp_count_elem_num':48s} {'-':>9s} {t * 1e3:9.4f} {'-':>9s}")


if __name__ == "__main__":
    main()
