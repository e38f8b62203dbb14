"""Speed of pymli.tflite: load, one inference on the MLI kernels, TFLite Micro, a full comparison.

    python benchmarks/bench_tflite.py [--repeat N]      (from the repository root)
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the checkout's pymli, installed or not

from pymli.tflite import load  # noqa: E402
from pymli.tflite.compare import compare, run_tflm, tflm_available  # noqa: E402
from pymli.tflite.examples import OP_CASES, cnn10  # noqa: E402


def best_of(fn: Callable[[], object], repeat: int) -> float:
    fn()  # warm-up
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    r = args.repeat
    rows: list[tuple[str, float]] = []
    for name, data in (("cnn10 (11 layers, 16x16x3)", cnn10()), ("conv 3x3 7x6x3->5", OP_CASES["conv_same_s1_pc"][0](0))):
        m = load(data)
        x = np.random.default_rng(0).integers(-128, 128, (1,) + m.network.input_shape).astype(np.int8)
        rows.append((f"{name}: load", best_of(lambda d=data: load(d), r)))
        rows.append((f"{name}: pymli run, 1 sample", best_of(lambda m=m, x=x: m.run(x), r)))
        if tflm_available():
            rows.append((f"{name}: TFLite Micro, 1 sample", best_of(lambda m=m, x=x: run_tflm(m, x), r)))
            rows.append((f"{name}: compare, 8 samples", best_of(lambda m=m: compare(m, samples=8), max(1, r // 2))))
    width = max(len(n) for n, _ in rows)
    print(f"{'operation':<{width}}  time per call")
    for n, t in rows:
        print(f"{n:<{width}}  {t * 1e3:9.2f} ms")


if __name__ == "__main__":
    main()
