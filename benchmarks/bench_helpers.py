"""Speed of the conversion helpers and quantisation: time per call (best of N), printed as a table.

Run: python benchmarks/bench_helpers.py [--repeat N]
"""

from __future__ import annotations

import numpy as np
from _timing import Row, best_of, cli

from pymli import ElType, Tensor
from pymli.capi import helpers as H
from pymli.capi.types import SubTensorCfg
from pymli.quant import dequantize, quantize


def run(repeat: int = 20) -> list[Row]:
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
    rows = []

    def per_elem(name: str, fn) -> None:
        t = best_of(fn, repeat)
        rows.append(Row(f"{name} ({n} elements)", t, extra=f"{t / n * 1e9:.1f} ns/elem"))

    for name, src, dst in cases:
        per_elem("mli_hlp_convert_tensor " + name, lambda src=src, dst=dst: H.mli_hlp_convert_tensor(src, dst))
    per_elem("quantize fp32 -> sa8 per-axis", lambda: quantize(x, ElType.SA_8, dim=2))
    per_elem("quantize fp32 -> fx16 (auto)", lambda: quantize(x, ElType.FX_16))
    per_elem("dequantize sa8 per-axis", lambda: dequantize(sa8c))
    sub = Tensor()
    cfg = SubTensorCfg(offset=[1, 2, 3, 0], size=[4, 5, 6, 0], sub_tensor_rank=3)
    rows.append(Row("mli_hlp_create_subtensor", best_of(lambda: H.mli_hlp_create_subtensor(sa8c, cfg, sub), 10 * repeat)))
    rows.append(Row("mli_hlp_count_elem_num", best_of(lambda: H.mli_hlp_count_elem_num(sa8c, 1), 10 * repeat)))
    return rows


if __name__ == "__main__":
    cli(run, __doc__)
