#!/usr/bin/env python3
"""Speed of pymli.tflite: load, one inference on the MLI kernels, TFLite Micro, a full comparison.

usage: python benchmarks/bench_tflite.py [--repeat 5]
"""

from __future__ import annotations

import numpy as np
from _timing import Row, best_of, cli

from pymli.tflite import load
from pymli.tflite.compare import compare, run_tflm, tflm_available
from pymli.tflite.examples import OP_CASES, cnn10


def run(repeat: int = 5) -> list[Row]:
    rows: list[Row] = []
    for name, data in (("cnn10 (11 layers, 16x16x3)", cnn10()),
                       ("conv 3x3 7x6x3->5", OP_CASES["conv_same_s1_pc"][0](0))):
        m = load(data, mapping="mli")
        x = np.random.default_rng(0).integers(-128, 128, (1,) + m.network.input_shape).astype(np.int8)
        rows.append(Row(f"{name}: load", best_of(lambda d=data: load(d, mapping="mli"), repeat)))
        rows.append(Row(f"{name}: pymli run, 1 sample", best_of(lambda m=m, x=x: m.run(x), repeat)))
        if tflm_available():
            rows.append(Row(f"{name}: TFLite Micro, 1 sample", best_of(lambda m=m, x=x: run_tflm(m, x), repeat)))
            rows.append(Row(f"{name}: compare, 8 samples",
                            best_of(lambda m=m: compare(m, samples=8), max(1, repeat // 2))))
    return rows


if __name__ == "__main__":
    cli(run, __doc__)
